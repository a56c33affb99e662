"""Forward rules as compiled code, to second order: every case of the oracle sweep
(``oracle_cases.TABLE``, a user-level function for every NumPy function bound in the rule
table), compiled strict, as

- a jvp: ``srcgrad.jvp(f, args, tangents)`` == central differences of ``f`` along the
  tangents (the forward rules printed as source);
- a Hessian-vector product: ``srcgrad.jvp(srcgrad.grad(f, wrt=i), args, tangents)`` ==
  central differences of the compiled gradient along the tangents.  It is ``grad`` of the
  generated source of ``f``'s directional derivative (reverse over forward), so it holds only
  where every forward rule is written with primitives and NumPy functions the compiler can
  differentiate again.

Each case is ``np.sum(W * expr)`` with ``W`` fixed and random (a few are whole functions), so
the check sees every element of the tangent.  A function whose forward rule cannot be
differentiated again is listed in ``REFUSED``: there the Hessian-vector product must be
refused with the CompileError given, and the jvp is still checked.  None is, today.

Every case (~950) takes minutes; by default each function runs its first case and every case
whose label names a parameter (``axis``, ``ord``, ``keepdims``, ``mode`` …), so that each
variant is differentiated twice, plus the float32 cases of one function in three, ~540 cases
in about a minute (``SRCGRAD_FULL_SWEEP=1``: every case).
"""

from __future__ import annotations

import os
import warnings

import numpy as np
import pytest
from compiled_helpers import define
from oracle_cases import TABLE, Case, _namespaces, cases_for, key_of

import srcgrad
from srcgrad.errors import CompileError
from srcgrad.runtime.rules.primitives import NUMPY_BINDINGS

BOUND = sorted({key_of(fun) for fun in NUMPY_BINDINGS
                if not NUMPY_BINDINGS[fun][0].eager_only})   # np.fft's: complex, not compiled

REFUSED: dict[str, str] = {}
"""Functions (keys of ``oracle_cases.TABLE``) whose forward rule has no derivative the
compiler can take → a pattern of the CompileError that says so (and why)."""

FULL = os.environ.get("SRCGRAD_FULL_SWEEP") == "1"
KINDS = {"float", "0d", "1d", "2d", "col", "row", "sq", "3d", "f32", "axis=None"}
"""Parts of labels (comma-separated) that name only an argument kind (or no axis)."""
ROW_STACK = "`row_stack` alias is deprecated"
pytestmark = pytest.mark.filterwarnings(f"ignore:{ROW_STACK}:DeprecationWarning")


def _selected(case: Case, position: int) -> bool:
    """Whether the default (quick) sweep runs ``case``, the ``position``-th of its function."""
    if FULL or case.index == 0:
        return True
    parts = set(case.label.replace(" ", "").split(","))
    if not parts <= KINDS:
        return True                           # a variant of the parameters: axis, ord, …
    return "f32" in parts and position % 3 == 0


def _params():
    out = []
    with warnings.catch_warnings():                  # building np.row_stack's cases
        warnings.filterwarnings("ignore", ROW_STACK, DeprecationWarning)
        for position, key in enumerate(k for k in BOUND if k in TABLE):
            out.extend(pytest.param(case, id=case.id) for case in cases_for(key)
                       if _selected(case, position))
    return out


PARAMS = _params()


def _copy(a):
    return a.copy() if isinstance(a, np.ndarray) else a


def _tangents(case: Case) -> tuple:
    """A random tangent for each differentiated argument (of its kind and dtype), zeros for
    the others."""
    rng = np.random.default_rng(sum(map(ord, case.id)))
    out = []
    for i, a in enumerate(case.args):
        if isinstance(a, float):
            out.append(float(rng.standard_normal()) if i in case.wrt else 0.0)
        elif isinstance(a, np.ndarray) and i in case.wrt:
            out.append(rng.standard_normal(a.shape).astype(a.dtype))
        else:
            out.append(np.zeros(np.shape(a)))
    return tuple(out)


def _wide(a):
    """A float64 copy (Python floats stay floats)."""
    if isinstance(a, np.ndarray) and a.dtype.kind == "f":
        return a.astype(np.float64)
    return _copy(a)


def _along(fn, case: Case, tangents: tuple, eps: float) -> np.ndarray:
    """Central differences of ``fn`` (float64 arguments) along ``tangents``."""
    def at(s):
        args = [_wide(a) + s * t if i in case.wrt else _wide(a)
                for i, (a, t) in enumerate(zip(case.args, tangents))]
        return np.asarray(fn(*args), dtype=np.float64)
    return (at(eps) - at(-eps)) / (2 * eps)


def _close(got, want, case: Case, what: str) -> None:
    rtol, atol = (3e-3, 3e-3) if case.f32 else (1e-5, 1e-6)
    np.testing.assert_allclose(np.asarray(got, dtype=np.float64), want, rtol=rtol, atol=atol,
                               err_msg=f"{what}: {case.id}\n{case.source}")


def _function(case: Case):
    return define(case.source, {"np": np, **_namespaces(), **case.extras})


@pytest.mark.parametrize("case", PARAMS)
def test_jvp_and_hessian_vector_product(case: Case):
    fn = _function(case)
    tangents = _tangents(case)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)        # nan-aware functions' nans
        value, tangent = srcgrad.jvp(fn, [_copy(a) for a in case.args], tangents,
                                     strict=True)
        _close(value, np.asarray(fn(*map(_copy, case.args)), dtype=np.float64), case,
               "jvp value")
        _close(tangent, _along(fn, case, tangents, 1e-6), case, "jvp against differences")
        for i in case.wrt:
            first = srcgrad.grad(fn, wrt=i, strict=True)
            if case.key in REFUSED:
                with pytest.raises(CompileError, match=REFUSED[case.key]):
                    srcgrad.jvp(first, [_copy(a) for a in case.args], tangents, strict=True)
                continue
            gradient, hvp = srcgrad.jvp(first, [_copy(a) for a in case.args], tangents,
                                        strict=True)
            _close(gradient, np.asarray(first(*map(_copy, case.args)), dtype=np.float64),
                   case, f"gradient {i}")
            _close(hvp, _along(first, case, tangents, 1e-5), case,
                   f"Hessian-vector product {i} against differences of the gradient")


def test_every_bound_function_is_swept_to_second_order():
    """Every bound function has cases here (through the oracle table), at least one of them
    in the default sweep; a refusal names a real function."""
    swept = {p.values[0].key for p in PARAMS}
    assert not [k for k in BOUND if k not in swept], "add it to tests/support/oracle_cases.py TABLE"
    assert set(REFUSED) <= set(BOUND)


# Primitives without a rule are treated as constants wherever a gradient or a tangent reaches
# them (their derivative is zero: a comparison, an index, a truth value), also inside the
# generated code a second derivative differentiates.  So each must be one of these; a new
# rule-less primitive (a rule's own helper, say) fails here until it has rules.
ZERO_DERIVATIVE = {
    "argmax", "argmin", "argsort", "clip_bound_mask", "clip_mask", "equal", "floor_divide",
    "gammasgn", "greater", "greater_equal", "isfinite", "isinf", "isnan", "less",
    "less_equal", "logical_and", "logical_not", "logical_or", "logical_xor", "lstsq_rank",
    "not_equal", "slogdet_sign", "stop_gradient", "zero_tangent",
    "logsumexp_sign", "logsumexp_sign_of", "scipy_lstsq_rank", "scipy_lu_factor_piv",
}


def test_every_primitive_without_a_rule_has_a_zero_derivative():
    from srcgrad.runtime.rules.primitives import PRIMITIVES
    assert {n for n, p in PRIMITIVES.items() if not p.differentiable} == ZERO_DERIVATIVE
