"""Oracle sweep: every NumPy function bound in the rule table, at every argument kind and
variant of ``oracle_cases.TABLE``: compiled (strict) == eager == central finite differences ==
an independent oracle (HIPS autograd, else JAX) running the *same* function object with its
``np`` re-bound.  The caller's arguments are never changed.

A bound function without an entry in ``oracle_cases.TABLE`` fails
``test_every_bound_function_is_swept``: add it there.  The oracle checks are skipped one by one
when neither autograd nor JAX is importable (or neither supports the function); the other
three checks always run.  An oracle is believed only where it agrees with finite
differences (they differ at kinks); then it must agree with the compiled gradient to 1e-7.
"""

from __future__ import annotations

import importlib
import os
import types

import numpy as np
import pytest
from compiled_helpers import define
from oracle_cases import TABLE, Case, _namespaces, cases_for, key_of

import srcgrad
from srcgrad.runtime.rules.primitives import NUMPY_BINDINGS
from srcgrad.transforms.fallback import eager_transform

BOUND = {key_of(fun): fun for fun in list(NUMPY_BINDINGS)
         if not NUMPY_BINDINGS[fun][0].eager_only}    # np.fft's: tests/runtime/test_program_rules

# Genuine bugs in other areas, reported to the lead (strict: the lead sees them get fixed).
KNOWN: dict[str, str] = {}


def _params():
    out = []
    for key in sorted(BOUND):
        if key not in TABLE:
            continue
        for case in cases_for(key):
            marks = ([pytest.mark.xfail(strict=True, reason=KNOWN[case.id])]
                     if case.id in KNOWN else [])
            out.append(pytest.param(case, id=case.id, marks=marks))
    return out


def test_every_bound_function_is_swept():
    missing = sorted(k for k in BOUND if k not in TABLE)
    assert not missing, \
        f"add it to the oracle sweep (tests/support/oracle_cases.py TABLE): {missing}"


def _copy(a):
    return a.copy() if isinstance(a, np.ndarray) else a


def _fd(fn, args: tuple, i: int, eps: float = 1e-6):
    """Central differences of ``fn`` in argument ``i``, on float64 copies."""
    base = [a.astype(np.float64) if isinstance(a, np.ndarray) and a.dtype.kind == "f"
            else a for a in args]

    def at(x):
        values = [_copy(a) for a in base]
        values[i] = x
        return float(fn(*values))

    x = base[i]
    if isinstance(x, float):
        return (at(x + eps) - at(x - eps)) / (2 * eps)
    g = np.zeros(np.shape(x))
    flat = g.reshape(-1)
    for j in range(flat.size):
        plus, minus = np.array(x, dtype=np.float64), np.array(x, dtype=np.float64)
        plus.reshape(-1)[j] += eps
        minus.reshape(-1)[j] -= eps
        flat[j] = (at(plus) - at(minus)) / (2 * eps)
    return g


def _oracle_modules():
    found = []
    try:
        import autograd
        import autograd.numpy as anp
        import autograd.scipy.special as asp
        found.append(("autograd", autograd, {"np": anp, "sp": asp}))
    except ImportError:
        pass
    try:
        jax = importlib.import_module("jax")
        jax.config.update("jax_enable_x64", True)
        found.append(("jax", jax, {"np": importlib.import_module("jax.numpy"),
                                   "sp": importlib.import_module("jax.scipy.special")}))
    except ImportError:
        pass
    return found


ORACLES = _oracle_modules()
FULL = os.environ.get("SRCGRAD_FULL_SWEEP") == "1"
"""JAX traces slowly: where autograd lacks a function, CI asks JAX about its first case
only; ``SRCGRAD_FULL_SWEEP=1`` asks about every case."""


def oracle_gradient(fn, case: Case, fd: list | None = None):
    """(oracle name, gradients) from the first oracle that supports ``fn`` (and, given finite
    differences ``fd``, agrees with them: oracles differ at kinks such as the std of one
    value), else None."""
    for name, module, rebinding in ORACLES:
        if name == "jax" and case.index > 0 and not FULL:
            continue
        rebound = types.FunctionType(fn.__code__, {**fn.__globals__, **rebinding},
                                     fn.__name__, fn.__defaults__, fn.__closure__)
        args = [_copy(a) for a in case.args]
        try:
            if name == "autograd":
                grads = [module.grad(rebound, i)(*args) for i in case.wrt]
            else:
                grads = list(module.grad(rebound, argnums=case.wrt)(*args))
        except Exception:          # this oracle lacks the function: try the next one
            continue
        grads = [np.asarray(g, dtype=np.float64) for g in grads]
        if not all(g.shape == np.shape(case.args[i]) for g, i in zip(grads, case.wrt)):
            continue               # (autograd leaves some broadcasts and keepdims undone)
        if fd is None or all(np.allclose(g, w, rtol=1e-3, atol=1e-3) for g, w in zip(grads, fd)):
            return name, grads
    return None


def _close(got, want, f32: bool, what: str, case: Case, exact: bool = False):
    if f32:
        rtol, atol = (1e-4, 1e-5) if exact else (3e-3, 3e-3)
    else:
        rtol, atol = (1e-7, 1e-9) if exact else (1e-5, 1e-6)
    np.testing.assert_allclose(np.asarray(got, dtype=np.float64), want, rtol=rtol, atol=atol,
                               err_msg=f"{what}: {case.id}\n{case.source}")


def check(case: Case, oracle: bool = True) -> None:
    fn = define(case.source, {"np": np, **_namespaces(), **case.extras})
    args = case.args
    saved = [_copy(a) for a in args]
    compiled = srcgrad.grad(fn, wrt=case.wrt, strict=True)(*args)
    for a, b in zip(args, saved):
        np.testing.assert_array_equal(a, b, err_msg=f"argument mutated: {case.id}")
    eager = eager_transform(fn, "grad", [_copy(a) for a in args], case.wrt, False)
    fds = []
    for k, i in enumerate(case.wrt):
        got, arg = compiled[k], args[i]
        if isinstance(arg, float):
            assert isinstance(got, float) and not isinstance(got, np.ndarray), (case.id, got)
        else:                     # a 0-d argument may get a NumPy scalar back
            assert isinstance(got, (np.ndarray, np.generic)), (case.id, type(got))
            assert got.shape == arg.shape and got.dtype == arg.dtype, (case.id, got.shape,
                                                                       got.dtype)
        _close(eager[k], np.asarray(got, dtype=np.float64), case.f32, "eager", case, True)
        fds.append(_fd(fn, args, i))
        _close(got, fds[-1], case.f32, "finite differences", case)
    if not oracle:
        return
    if not ORACLES:
        pytest.skip("neither autograd nor JAX is installed: the oracle check did not run")
    found = oracle_gradient(fn, case, fds)
    if found is None:             # no oracle has this function (np.take with a list, ...)
        return
    name, grads = found
    for k, _ in enumerate(case.wrt):
        _close(compiled[k], grads[k], case.f32, f"oracle {name}", case, True)


@pytest.mark.parametrize("case", _params())
def test_compiled_eager_fd_oracle(case: Case):
    check(case)
