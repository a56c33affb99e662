"""Every public callable of ``scipy.special``, ``scipy.linalg`` and ``scipy.signal`` is
classified exactly once by :mod:`srcgrad.runtime.rules.scipy_coverage` — it has a rule, its
result carries no gradient, or it is refused — and each class behaves as it says: a rule is
found by the compiler and by the eager run, a no-gradient callable runs on plain data, and a
refused one is a CompileError naming it in strict mode and a refusal naming it (never an
internal error, never a silent drop) in default mode.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import warnings

import numpy as np
import pytest
from compiled_helpers import define

import srcgrad
from srcgrad.errors import CompileError
from srcgrad.frontend.tables.scipy_calls import scipy_lowering
from srcgrad.frontend.tables.scipy_specs import no_gradient_reason
from srcgrad.runtime.rules.primitives import NUMPY_BINDINGS
from srcgrad.runtime.rules.scipy_coverage import (
    COVERED_MODULES,
    SCIPY_NO_GRADIENT,
    SCIPY_RULED,
    classify,
    numpys_own,
    public_name,
)
from srcgrad.runtime.rules.special import bind_scipy
from srcgrad.transforms.eager_calls import scipy_stand_in

pytestmark = pytest.mark.skipif(importlib.util.find_spec("scipy") is None,
                                reason="SciPy is not installed")


def _public() -> list[tuple[str, object]]:
    out = []
    for module in COVERED_MODULES:
        loaded = importlib.import_module(module)
        for name in dir(loaded):
            value = getattr(loaded, name)
            if not name.startswith("_") and callable(value) and not numpys_own(value):
                out.append((f"{module}.{name}", value))      # NumPy's own: NumPy's table
    return out


PUBLIC = _public() if importlib.util.find_spec("scipy") else []


def test_every_callable_is_classified_once_and_no_entry_is_stale():
    names = {name for name, _ in PUBLIC}
    assert len(names) > 500
    assert not SCIPY_RULED & set(SCIPY_NO_GRADIENT)
    assert SCIPY_RULED <= names, sorted(SCIPY_RULED - names)
    assert set(SCIPY_NO_GRADIENT) <= names, sorted(set(SCIPY_NO_GRADIENT) - names)
    kinds = {name: classify(name) for name in names}
    assert set(kinds.values()) == {"rule", "no gradient", "refused"}
    assert sum(k == "rule" for k in kinds.values()) == len(SCIPY_RULED)


@pytest.mark.parametrize("name,value", [(n, v) for n, v in PUBLIC if classify(n) == "rule"],
                         ids=[n for n, v in PUBLIC if classify(n) == "rule"])
def test_a_rule_is_found_by_both_modes(name, value):
    bind_scipy()
    from srcgrad.frontend.tables.constructs import SPECIAL_CALLS
    assert scipy_lowering(value) is not None or SPECIAL_CALLS.get(value) is not None or \
        value in NUMPY_BINDINGS, name                            # sinc: NumPy's own
    assert value in NUMPY_BINDINGS or scipy_stand_in(value) is not None, name


def test_no_gradient_callables_run_on_plain_data():
    import scipy.linalg as sl
    import scipy.signal as ss
    import scipy.special as sp
    f = define("def f(a):\n"
               "    sym = sl.issymmetric(a @ a.T)\n"
               "    peaks = ss.argrelmax(a[0])[0]\n"
               "    nodes, weights = sp.roots_legendre(3)\n"
               "    wave = ss.square(a[0])\n"
               "    scale = 2.0 if sym else 1.0\n"
               "    return scale * np.sum(a[0][peaks]) + np.sum(weights) * "
               "np.sum(a * sl.hilbert(3)) + np.sum(wave * a[1])\n",
               {"np": np, "sl": sl, "ss": ss, "sp": sp})
    a = np.array([[0.1, 0.9, 0.2], [0.5, 0.3, 0.7], [0.2, 0.4, 0.6]])
    want = 2.0 * sl.hilbert(3) + np.outer(np.eye(3)[1], ss.square(a[0]))
    want[0, ss.argrelmax(a[0])[0]] += 2.0
    np.testing.assert_allclose(srcgrad.grad(f, strict=True)(a), want)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from srcgrad.transforms.fallback import eager_transform
        np.testing.assert_allclose(eager_transform(f, "grad", [a.copy()], (0,), True), want)
    for name, value in PUBLIC:
        if classify(name) == "no gradient" and public_name(value) is not None:
            assert no_gradient_reason(value) == SCIPY_NO_GRADIENT[public_name(value)], name


def test_an_alias_is_classified_as_the_function_it_names():
    for name, value in PUBLIC:
        canonical = public_name(value)
        if canonical is not None and canonical != name:        # p_roots, jn, solve_lyapunov
            assert classify(canonical) == classify(name), name


REFUSED = [(n, v) for n, v in PUBLIC if classify(n) == "refused" and public_name(v) == n]


def _arity(value) -> int:
    """How many arrays to pass: a ufunc's inputs, a function's required parameters."""
    if isinstance(value, np.ufunc):
        return value.nin
    try:
        params = inspect.signature(value).parameters.values()
    except (TypeError, ValueError):
        return 1
    return max(1, sum(p.default is p.empty and p.kind in (p.POSITIONAL_ONLY,
                                                          p.POSITIONAL_OR_KEYWORD)
                      for p in params))


def _own_error(value, n, a):
    """What SciPy itself raises for these arguments (None: it returns)."""
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            np.sum(value(*[a.copy() for _ in range(n)]))
    except Exception as exc:                                      # noqa: BLE001
        return type(exc)
    return None


def test_refused_callables_are_refused_by_name_in_both_modes():
    a = np.array([0.3, 0.6, 0.9])
    wrong = []
    for name, value in REFUSED:
        n = _arity(value)
        params = ", ".join(f"a{i}" for i in range(n))
        f = define(f"def f({params}):\n    return np.sum(F({params}))\n",
                   {"np": np, "F": value})
        try:
            srcgrad.grad(f, strict=True)(*[a.copy() for _ in range(n)])
            wrong.append(f"{name}: compiled")
        except CompileError as exc:
            if name not in str(exc):
                wrong.append(f"{name}: strict says {str(exc).splitlines()[0]}")
        except Exception as exc:                                  # noqa: BLE001
            wrong.append(f"{name}: strict raised {type(exc).__name__}: {exc}")
        own = _own_error(value, n, a)
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            try:
                srcgrad.grad(f)(*[a.copy() for _ in range(n)])
                wrong.append(f"{name}: default mode gave a gradient")
            except CompileError as exc:
                if name not in str(exc):
                    wrong.append(f"{name}: default says {str(exc).splitlines()[0][:200]}")
            except Exception as exc:                              # noqa: BLE001
                if own is None or not isinstance(exc, own):      # SciPy's own error is fine
                    wrong.append(f"{name}: default raised {type(exc).__name__}: {exc}"[:300])
    assert not wrong, "\n".join(wrong)
