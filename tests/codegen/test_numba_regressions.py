"""Edge cases of the numba kernels, each run jitted and as plain Python (numba's
JIT disabled in this process, and numba hidden), with results NumPy's bit for bit: Python
numbers that must not raise where NumPy gives inf or nan, in-place updates of bools, signed
zeros, and the builtins a kernel calls."""

from __future__ import annotations

import sys
import types
import warnings

import numpy as np
import pytest
from test_numba_kernels import B1, F8, I8, ap, module_text, reference, region

import srcgrad
from srcgrad.codegen.backends.fusion.regions import Let, Lit, Reduce, Ref, Update, Value
from srcgrad.codegen.backends.numba.kernel_files import load_from_file
from srcgrad.codegen.backends.numba.kernels import NUMBA_KERNELS, PARALLEL_MIN, ROW, Unsupported

pytestmark = pytest.mark.usefixtures("vectorised_math_at_every_size")
"""The kernels here are small: they call the vectorisable functions all the same."""


MODES = ["jit", "disabled", "without-numba"]


def numbers():
    """Locals that are Python numbers at run time (literals, conditionals of literals, `not`)
    divided by zero, raised to fractional and huge powers, squared beyond the largest float."""
    x = np.array([-1.0, 0.0, -0.0, 0.25, 0.75, 1.0, np.nan, np.inf, -np.inf])
    n = x.size
    names = ["q", "w", "big", "sq", "rec", "rem", "fl", "idiv", "inv", "u"]
    return region(
        "numbers_k", (n,), [Value("x", (n,), F8)],
        [Value(name, (n,), I8 if name == "idiv" else F8) for name in names],
        [Let("z", ap(np.where, ap(np.greater, "x", 0.5, dtype=B1), 1.0, 0.0), F8),
         Let("q", ap(np.true_divide, 2.0, "z"), F8),
         Let("s", ap(np.where, ap(np.greater, "x", 0.0, dtype=B1), -2.0, 3.0), F8),
         Let("w", ap(np.power, "s", 0.3), F8),
         Let("t", ap(np.where, ap(np.greater, "x", 0.0, dtype=B1), 10.0, 3.0), F8),
         Let("big", ap(np.power, "t", 400.0), F8),
         Let("sq", ap(np.square, ap(np.where, ap(np.greater, "x", 0.0, dtype=B1), 1e200, 2.0)),
             F8),
         Let("rec", ap(np.reciprocal, "z"), F8),
         Let("rem", ap(np.remainder, "s", "z"), F8),
         Let("fl", ap(np.floor_divide, "s", "z"), F8),
         Let("k", ap(np.where, ap(np.greater, "x", 0.0, dtype=B1), 3, 0, dtype=I8), I8),
         Let("idiv", ap(np.floor_divide, 7, "k", dtype=I8), I8),
         Let("no", ap(np.logical_not, ap(np.greater, "x", 0.0, dtype=B1), dtype=B1), B1),
         Let("inv", ap(np.true_divide, "no", 0.0), F8),
         Let("u", ap(np.where, ap(np.greater, "x", 0.0, dtype=B1), 4.0, 0.0), F8),
         Update("u", np.true_divide, Ref("z"))]), {"x": x}


def zeros():
    """Signed zeros: NumPy's np.sign, np.maximum and np.minimum, sums of -0.0 alone (a local
    sum, rows in blocks of ROW, columns), maxima and minima of zeros along the outer axis."""
    d = (3, ROW + 76)
    x = np.full(d, -0.0)
    x[1] = 0.0
    x[2, ::2] = 0.0
    steps = [Let("sg", ap(np.sign, "x"), F8),
             Let("mx", ap(np.maximum, "x", ap(np.negative, "x")), F8),
             Let("mn", ap(np.minimum, ap(np.negative, "x"), "x"), F8),
             Reduce("rows", np.add, Ref("x"), (1,), False, (3,), F8),
             Reduce("cols", np.add, Ref("x"), (0,), False, (d[1],), F8),
             Reduce("cmax", np.maximum, Ref("x"), (0,), False, (d[1],), F8),
             Reduce("cmin", np.minimum, Ref("x"), (0,), True, (1, d[1]), F8),
             Reduce("ints", np.add, ap(np.greater, "x", 0.0, dtype=B1), (1,), False, (3,), I8)]
    outputs = [Value(s.name, s.shape if isinstance(s, Reduce) else d, s.dtype) for s in steps]
    return region("zeros_k", d, [Value("x", d, F8)], outputs, steps), {"x": x}


def parallel_sum():
    """A full sum of -0.0 over a domain large enough for a prange (numba's reduction)."""
    d = (2, PARALLEL_MIN // 2)
    return region("psum_k", d, [Value("x", d, F8)], [Value("total", (), F8)],
                  [Reduce("total", np.add, Ref("x"), (0, 1), False, (), F8)]), {
        "x": np.full(d, -0.0)}


def builtins():
    """A value named ``min`` (and ``abs``, ``range``) in a kernel that calls ``min`` for its
    blocks of rows and ``abs``."""
    n = ROW + 10
    x = np.linspace(-1.0, 1.0, n)
    return region("names_k", (n,), [Value("range", (n,), F8)],
                  [Value("min", (n,), F8), Value("abs", (n,), F8), Value("s", (), F8)],
                  [Let("min", ap(np.multiply, "range", 2.0), F8),
                   Let("abs", ap(np.absolute, "min"), F8),
                   Reduce("s", np.add, Ref("abs"), (0,), False, (), F8)]), {"range": x}


CASES = {"numbers": numbers, "zeros": zeros, "psum": parallel_sum, "builtins": builtins}


def same(got, want, name: str) -> None:
    """NumPy's result exactly: type, shape, dtype, values, NaN where NaN, the sign of every
    zero."""
    assert (type(got), np.shape(got), np.asarray(got).dtype) == (
        type(want), np.shape(want), np.asarray(want).dtype), name
    got, want = np.asarray(got), np.asarray(want)
    assert np.array_equal(got, want, equal_nan=True), f"{name}: {got} != {want}"
    signs = (np.signbit(got) == np.signbit(want)) | np.isnan(want)   # (not a NaN's sign)
    assert signs.all(), f"{name}: signs of {got} != {want}"


@pytest.fixture(scope="module", params=MODES)
def loaded(request, tmp_path_factory):
    """Every case's kernel in one module, as ``request.param`` runs it."""
    mode = request.param
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SRCGRAD_CACHE_DIR", str(tmp_path_factory.mktemp(mode)))
        if mode != "without-numba":
            numba = pytest.importorskip("numba")
            patch.setattr(numba.config, "DISABLE_JIT", mode == "disabled")
        else:
            patch.setitem(sys.modules, "numba", None)         # `import numba` raises
        cases = {k: make() for k, make in CASES.items()}
        namespace = load_from_file(module_text([r for r, _ in cases.values()]), mode, {})
    yield mode, namespace, cases


@pytest.mark.parametrize("case", list(CASES))
def test_kernel_is_numpy_bit_for_bit(loaded, case):
    mode, namespace, cases = loaded
    r, args = cases[case]
    kernel = namespace[r.name]
    assert isinstance(kernel, types.FunctionType) == (mode != "jit"), mode
    want = reference(r, args)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)    # NumPy scalars warn, as arrays do
        got = namespace[f"run_{r.name}"](**{k: v.copy() for k, v in args.items()})
    for name in want:
        same(got[name], want[name], f"{case}.{name} ({mode})")


def test_python_numbers_are_converted_only_where_they_may_raise():
    text = NUMBA_KERNELS.kernel(numbers()[0])
    for line in ["q = np.float64(2.0) / z", "w = np.float64(s) ** 0.3",
                 "sq = np.float64(1e+200 if x[i] > 0.0 else 2.0) ** 2",
                 "rec = np.float64(1.0) / z", "idiv = np.int64(7) // k",
                 "inv = np.float64(no) / 0.0", "u = np.float64(u) / z"]:
        assert line in text, line
    text = NUMBA_KERNELS.kernel(region("k", (3,), [Value("x", (3,), F8)], [Value("y", (3,), F8)], [
        Let("h", ap(np.where, ap(np.greater, "x", 0.0, dtype=B1), 1.0, "x"), F8),
        Let("y", ap(np.add, ap(np.true_divide, "h", 2.0), ap(np.true_divide, "x", "h")), F8)]))
    assert "y = h / 2.0 + x[i] / h" in text            # an array's element is NumPy's


def test_bool_updates_are_or_or_refused():
    d = (4,)
    x = Value("x", d, F8)
    m = Let("m", ap(np.greater, "x", 0.0, dtype=B1), B1)
    for name, inputs in [("m", [x]), ("b", [x, Value("b", d, B1)])]:
        steps = ([m] if name == "m" else []) + [Update(name, np.add, ap(np.less, "x", 1.0,
                                                                         dtype=B1))]
        with pytest.raises(Unsupported, match="add of bools"):       # NumPy's is `or`
            NUMBA_KERNELS.kernel(region("k", d, inputs, [Value(name, d, B1)], steps,
                                        updated=("b",) if name == "b" else ()))
    ok = region("k", d, [x], [Value("m", d, B1)],
                [m, Update("m", np.logical_or, ap(np.less, "x", 1.0, dtype=B1)),
                 Update("m", np.bitwise_and, Lit(True))])
    text = NUMBA_KERNELS.kernel(ok)
    assert "m |= x[i] < 1.0" in text and "m &= True" in text


def test_signed_zero_helpers_also_in_the_libm_twin():
    d = (3,)
    r = region("k", d, [Value("x", d, F8)], [Value("y", d, F8)],
               [Let("y", ap(np.maximum, ap(np.sin, "x"), ap(np.sign, "x")), F8)])
    text = NUMBA_KERNELS.kernel(r)
    assert text.count("def maximum_f64(") == 1 and text.count("def sign_f64(") == 1
    assert text.count("y = maximum_f64(sin_f64(x[i]), sign_f64(x[i]))") == 1
    assert text.count("y = maximum_f64(np.sin(x[i]), sign_f64(x[i]))") == 1    # the twin
    assert "= np.maximum(" not in text and "np.sign(x" not in text


def test_builtin_names_are_never_hidden():
    text = NUMBA_KERNELS.kernel(builtins()[0])
    assert "def names_k(range_1):" in text and "min_1 = range_1[i] * 2.0" in text
    assert "abs_1 = abs(min_1)" in text and ", min(ib * 1024 + 1024, 1034)):" in text


def signed(x):
    z = np.where(x > 0.5, 1.0, 0.0)
    s = np.where(x > 0.0, -2.0, 3.0)
    t = np.where(x > 0.0, 10.0, 3.0)
    return (np.sum(x * (2.0 / z)) + np.sum(x * s ** 0.3) + np.sum(x * t ** 400.0)
            + np.sum(np.sign(x) * x))


@pytest.mark.parametrize("jit", [True, False], ids=["jit", "disabled"])
def test_gradient_with_python_numbers_matches_numpy(jit, tmp_path, monkeypatch):
    """The reviewer's programs through the fusion pass: the second call runs the kernels."""
    numba = pytest.importorskip("numba")
    real, decorated = numba.njit, []

    def njit(*args, **options):
        def decorate(function):
            decorated.append(real(**options)(function))
            return decorated[-1]
        return decorate(args[0]) if args and callable(args[0]) else decorate
    monkeypatch.setenv("SRCGRAD_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(numba.config, "DISABLE_JIT", not jit)
    monkeypatch.setattr(numba, "njit", njit)
    x = np.array([-1.0, -0.5, -0.0, 0.0, 0.25, 0.5, 0.75, 1.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = srcgrad.value_and_grad(signed)(x)
        g = srcgrad.value_and_grad(signed, backend="numba", strict=True)
        g(x)
        got = g(x)
    same(got[0], want[0], "value")
    same(got[1], want[1], "gradient")
    assert decorated and all(isinstance(k, types.FunctionType) != jit for k in decorated)
    source = list(g.sources.values())[-1]
    assert "np.float64(2.0) / z" in source and "np.float64(t) ** 400.0" in source, source
