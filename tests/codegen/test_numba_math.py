"""The vectorisable float64 functions of the numba kernels (codegen/backends/numba/libm.py, issue
11):
their error against the exact result and against NumPy, NaN, infinities, signed zeros,
overflow and underflow, jitted and as plain Python (the same values); the kernels that call
them: loops that vectorise, libm's sin and cos for arguments beyond 2**20, reductions by
stored rows."""

from __future__ import annotations

import importlib.util
import re
import warnings

import numpy as np
import pytest

import srcgrad
from srcgrad.codegen.backends.fusion.regions import Apply, Let, Reduce, Ref, Region, Update, Value
from srcgrad.codegen.backends.numba import kernels as numba_kernels
from srcgrad.codegen.backends.numba import libm as numba_math
from srcgrad.codegen.backends.numba.kernels import NUMBA_KERNELS, ROW
from srcgrad.codegen.backends.numba.libm import HELPERS, NEAR, SPELLINGS, definitions, spelling

pytestmark = pytest.mark.usefixtures("vectorised_math_at_every_size")
"""The kernels here are small: they call the vectorisable functions all the same."""

HAS_NUMBA = importlib.util.find_spec("numba") is not None
F8 = np.dtype(np.float64)
FUNCS = {name: ufunc for ufunc, name in SPELLINGS.items()}
EXACT = np.finfo(np.longdouble).nmant >= 63         # x87 long double: a reference to 2**-64
SPECIAL = [np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 5e-324, -5e-324, 1e-310, -1e-310,
           2.2250738585072014e-308, 1e-300, -1e-300, 1e-20, -1e-20, 7.45e-9, 1.0, -1.0, 0.5,
           -0.5, 0.25, -0.29289321881345254, 0.41421356237309503, 2.0, 22.0, -22.0, 22.5,
           -1.0000000000000002, -0.9999999999999999, 709.782712893384, 709.7827128933841,
           710.0, -708.3964185322641, -744.44007192138126, -745.1332191019411, -745.14, -746.0,
           -1000.0, 1e308, -1e308, np.pi / 2, np.pi, 1e5, 1048576.0, -1048576.0]
"""Values where each function's result must be NumPy's bit for bit (or within 2 ulp where
neither is special), in plain Python as jitted."""


def samples(name: str, n: int, rng: np.random.Generator) -> np.ndarray:
    """Random arguments over every range that matters for ``name``: tiny, subnormal, [1e-8,
    1], [1, 1e3], its whole domain, and NumPy's special values."""
    logs = {"tiny": (-320, -300), "small": (-8, 0), "large": (0, 3)}
    parts = [rng.uniform(-1, 1, n) * 10.0 ** rng.uniform(*span, n) for span in logs.values()]
    parts.append(rng.uniform(-1, 1, n) * 5e-324 * 2.0 ** rng.integers(0, 52, n))   # subnormal
    whole = {"exp_f64": (-746, 710), "expm1_f64": (-40, 710), "log_f64": (0, 1e308),
             "log1p_f64": (-1, 1e6), "sin_f64": (-NEAR, NEAR), "cos_f64": (-NEAR, NEAR),
             "tanh_f64": (-23, 23)}[name]
    parts += [rng.uniform(*whole, n), np.array(SPECIAL)]
    if name.startswith("log"):
        parts.append(rng.uniform(0.5, 2.0, n))
    if name == "exp_f64":
        parts.append(rng.uniform(-745.2, -708, n))                  # subnormal results
    x = np.concatenate(parts)
    return x[np.abs(x) <= NEAR] if name in ("sin_f64", "cos_f64") else x


def ulps(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """``|got - want|`` in ulps of ``want`` rounded to float64; 0 where both are NaN or equal
    (infinities included)."""
    with np.errstate(over="ignore", invalid="ignore"):
        near = want.astype(np.float64)
        step = np.spacing(np.abs(near)).astype(want.dtype)
        err = np.abs(got.astype(want.dtype) - want) / step
    same = (got == near) | (np.isnan(got) & np.isnan(near))
    return np.where(same, 0.0, err).astype(np.float64)


@pytest.fixture(scope="module")
def jitted():
    """Each function compiled in a loop over an array, as a kernel calls it."""
    numba = pytest.importorskip("numba")
    if numba.config.DISABLE_JIT:
        pytest.skip("numba's JIT is disabled")
    namespace = {"np": np, "njit": numba.njit}
    loops = "".join(f"\n\n@njit(error_model='numpy')\ndef each_{name}(a):\n"
                    f"    out = np.empty_like(a)\n    for i in range(a.size):\n"
                    f"        out[i] = {name}(a[i])\n    return out\n" for name in FUNCS)
    exec(compile("\n\n".join(definitions(FUNCS)) + loops, "<numba_math>", "exec"), namespace)
    return {name: namespace[f"each_{name}"] for name in FUNCS}


@pytest.mark.parametrize("name", list(FUNCS))
def test_within_an_ulp_of_exact_and_two_of_numpy(jitted, name):
    x = samples(name, 200_000, np.random.default_rng(sorted(FUNCS).index(name)))
    got = jitted[name](x)
    with np.errstate(all="ignore"):
        numpy = FUNCS[name](x)
        exact = FUNCS[name](x.astype(np.longdouble))
    assert np.array_equal(np.isnan(got), np.isnan(numpy)), x[np.isnan(got) != np.isnan(numpy)]
    assert ulps(got, numpy.astype(np.longdouble)).max() <= 2.0
    if EXACT:
        worst = ulps(got, exact)
        assert worst.max() < 1.0, (x[worst.argmax()], worst.max())


@pytest.mark.parametrize("name", list(FUNCS))
def test_special_values_as_numpy_and_the_same_as_plain_python(jitted, name):
    x = np.array(SPECIAL + [-v for v in SPECIAL])
    if name in ("sin_f64", "cos_f64"):
        x = x[~(np.abs(x) > NEAR)]
    with np.errstate(all="ignore"):
        numpy = FUNCS[name](x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)     # as NumPy's scalars warn
        plain = np.array([getattr(numba_math, name)(v) for v in x])
        python = np.array([getattr(numba_math, name)(float(v)) for v in x])   # no raising
    got = jitted[name](x)
    assert np.array_equal(got, plain, equal_nan=True) and np.array_equal(plain, python,
                                                                         equal_nan=True)
    special = ~np.isfinite(numpy) | (numpy == 0) | ~np.isfinite(x) | (x == 0)
    assert np.array_equal(got[special], numpy[special], equal_nan=True), x[special]
    signed = special & ~np.isnan(numpy)                  # a NaN's sign means nothing
    assert np.array_equal(np.signbit(got[signed]), np.signbit(numpy[signed]))
    assert ulps(got, numpy.astype(np.longdouble)).max() <= 2.0


PACKED = r"\bv(?:mul|add|sub|div)pd\s[^\n]*%[yz]mm"
LIBM = r"@(?:llvm\.)?(?:sin|cos|exp|log|tanh|expm1|log1p)[.(]"


@pytest.mark.parametrize("name", list(FUNCS))
def test_each_loop_vectorises_and_calls_no_libm(jitted, name):
    loop = jitted[name]
    assert not re.search(LIBM, loop.inspect_llvm(loop.signatures[0]))
    assert len(re.findall(PACKED, loop.inspect_asm(loop.signatures[0]))) > 10


def test_plain_python_gives_the_jitted_values(jitted):
    rng = np.random.default_rng(7)
    for name, function in ((n, getattr(numba_math, n)) for n in FUNCS):
        x = samples(name, 300, rng)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            plain = np.array([function(v) for v in x])
        assert np.array_equal(plain, jitted[name](x), equal_nan=True), name


HARD = [45.553093477052, 91.106186954104, 364.424747816416, 1457.698991265664]
"""The doubles nearest a multiple of pi/2 up to 2**20 (45.55...: 2**-60.5 from 29 pi/2)."""


def test_sin_and_cos_reduce_exactly_up_to_their_range_and_are_nan_beyond():
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.prec = 200
    assert np.isnan(numba_math.sin_f64(NEAR * 2)) and np.isnan(numba_math.cos_f64(-1e300))
    for v in HARD + [-v for v in HARD] + [NEAR, -NEAR, 0.5, 3.0, 1e5]:
        for mine, exact in ((numba_math.sin_f64, mpmath.sin), (numba_math.cos_f64, mpmath.cos)):
            want = exact(mpmath.mpf(v))
            assert abs(mine(v) - want) < 0.6 * np.spacing(abs(float(want))), (v, mine)
        assert numba_math.sin_f64(-v) == -numba_math.sin_f64(v)
        assert numba_math.cos_f64(-v) == numba_math.cos_f64(v)


def test_row_reductions_as_numpy():
    row = np.array([3.0, -1.0, np.inf, 2.5, 0.125, -7.0, 1e-300, 4.0, 9.0, -2.0, 5.0])
    for count in range(len(row) + 1):
        part = row[:count]
        assert numba_math.sum_row(row, count) == pytest.approx(part.sum(), rel=1e-15)
        assert numba_math.max_row(row, count) == (part.max() if count else -np.inf)
        assert numba_math.min_row(row, count) == (part.min() if count else np.inf)
    row[4] = np.nan
    assert np.isnan(numba_math.max_row(row, 9)) and numba_math.max_row(row, 4) == np.inf
    assert np.isnan(numba_math.min_row(row, 5)) and np.isnan(numba_math.sum_row(row, 11))


def test_definitions_are_the_functions_used_and_what_they_call():
    texts = definitions(["tanh_f64"])
    assert [t.split("def ")[1].split("(")[0] for t in texts] == ["exp_parts_f64", "tanh_f64"]
    assert texts[1].startswith("@njit(inline='always', error_model='numpy')\ndef tanh_f64(x):")
    assert texts[0].startswith("@njit(error_model='numpy')\ndef exp_parts_f64(z):")
    assert definitions(["sin_f64", "cos_f64"]) == definitions(["cos_f64", "sin_f64"])
    assert len(definitions(["sin_f64", "cos_f64"])) == 5 and definitions([]) == []
    with pytest.raises(ValueError, match="no helper"):
        definitions(["erf_f64"])
    assert spelling(np.exp, F8) == "exp_f64" and spelling(np.exp, np.float32) is None
    assert spelling(np.sqrt, F8) is None and spelling([], F8) is None
    assert set(HELPERS) >= set(SPELLINGS.values())


# -- kernels that call them ---------------------------------------------------------------

def ap(func, *names):
    return Apply(func, tuple(Ref(n) for n in names), F8)


def _run(region, args, tmp_path, monkeypatch):
    """The region's kernel (in a module as the numba backend writes one) on ``args``."""
    from srcgrad.codegen.backends.numba.kernel_files import load_from_file
    monkeypatch.setenv("SRCGRAD_CACHE_DIR", str(tmp_path))
    text = "\n\n\n".join(["import numpy as np", "\n".join(NUMBA_KERNELS.prelude()),
                          NUMBA_KERNELS.kernel(region)]) + "\n"
    return text, load_from_file(text, "numba_math", {})[region.name](*args)


def _sum_of_sin_and_cos(n):
    return Region("k", (n,), (Value("x", (n,), F8),), (Value("s", (n,), F8),), (),
                  (Let("s", Apply(np.add, (ap(np.sin, "x"), ap(np.cos, "x")), F8), F8),), 0, 1)


def test_sin_and_cos_beyond_their_range_come_from_libm(tmp_path, monkeypatch):
    x = np.array([0.5, -2.0, 3e6, -1e300, np.inf, np.nan, 1e5, -0.0])
    text, got = _run(_sum_of_sin_and_cos(len(x)), (x,), tmp_path, monkeypatch)
    assert "far += 1 if abs(x[i]) > 1048576.0 else 0" in text and "return k_libm(x)" in text
    with np.errstate(invalid="ignore"):
        assert np.array_equal(got, np.sin(x) + np.cos(x), equal_nan=True)   # libm's, all
    near = np.array([0.5, -2.0, 1e5, NEAR, np.nan, -0.0])
    _, got = _run(_sum_of_sin_and_cos(len(near)), (near,), tmp_path, monkeypatch)
    mine = [numba_math.sin_f64(v) + numba_math.cos_f64(v) for v in near]
    assert np.array_equal(got, mine, equal_nan=True)                       # the fast ones


def test_an_update_in_place_keeps_libms_sin(tmp_path, monkeypatch):
    n = 4
    region = Region("k", (n,), (Value("d", (n,), F8), Value("x", (n,), F8)), (), ("d",),
                    (Update("d", np.add, Apply(np.multiply, (ap(np.sin, "x"), ap(np.tanh, "x")),
                                                F8)),), 0, 1)
    d, x = np.ones(n), np.array([0.5, 3e6, -1.0, 2.0])
    text, _ = _run(region, (d, x), tmp_path, monkeypatch)
    assert "np.sin(x[i])" in text and "tanh_f64(x[i])" in text and "far" not in text
    np.testing.assert_allclose(d, 1 + np.sin(x) * np.tanh(x), rtol=1e-15)


def test_reductions_over_long_rows_and_a_parallel_total(tmp_path, monkeypatch):
    rng = np.random.default_rng(3)
    d = (3, 2 * ROW + 5)
    x = rng.normal(size=d)
    x[1, ROW + 3] = np.nan
    steps = (Let("e", ap(np.exp, "x"), F8),
             Reduce("s", np.add, Ref("e"), (1,), False, (3,), F8),
             Reduce("m", np.maximum, Ref("x"), (1,), True, (3, 1), F8),
             Reduce("t", np.minimum, Ref("e"), (0, 1), False, (), F8))
    region = Region("k", d, (Value("x", d, F8),), tuple(
        Value(n, s, F8) for n, s in (("s", (3,)), ("m", (3, 1)), ("t", ()))), (), steps, 0, 1)
    text, (s, m, t) = _run(region, (x,), tmp_path, monkeypatch)
    assert f"for jb in range({-(-d[1] // ROW)}):" in text and "s += sum_row(s_row, " in text
    with np.errstate(invalid="ignore"):
        np.testing.assert_allclose(s, np.exp(x).sum(axis=1), rtol=1e-13)
        assert np.array_equal(m, x.max(axis=1, keepdims=True), equal_nan=True)
        assert np.isnan(t)
    big = 3 * 2 ** 16 + 7                         # a prange over blocks, a numba reduction
    y = rng.normal(size=big)
    region = Region("k", (big,), (Value("y", (big,), F8),), (Value("u", (), F8),), (), (
        Reduce("u", np.add, ap(np.tanh, "y"), (0,), False, (), F8),), 0, 1)
    text, u = _run(region, (y,), tmp_path, monkeypatch)
    assert "for ib in prange(" in text and "u += sum_row(u_row, min(1024, " in text
    assert u == pytest.approx(np.tanh(y).sum(), rel=1e-12)


def test_user_names_never_hide_the_helpers(tmp_path, monkeypatch):
    n = 5
    region = Region("k", (2, n), (Value("exp_f64", (2, n), F8), Value("k_libm", (), F8, True)),
                    (Value("sum_row", (2,), F8),), (), (
        Let("far", Apply(np.multiply, (ap(np.exp, "exp_f64"), Ref("k_libm")), F8), F8),
        Reduce("sum_row", np.add, ap(np.sin, "far"), (1,), False, (2,), F8)), 0, 1)
    x = np.arange(10.0).reshape(2, n) / 10
    text, got = _run(region, (x, 2.0), tmp_path, monkeypatch)
    assert "def k(exp_f64_1, k_libm_1):" in text and "far_1 = 0" in text
    np.testing.assert_allclose(got, np.sin(np.exp(x) * 2.0).sum(axis=1), rtol=1e-14)


def chain(x):
    y = np.sin(x)
    y = np.exp(y * x * 0.1) + x
    y = np.tanh(y) ** 2 - x
    return np.sum(np.cos(y) * 2.0)


@pytest.mark.skipif(not HAS_NUMBA, reason="numba not installed")
def test_the_chain_kernel_is_vectorised(tmp_path, monkeypatch):
    import numba
    from llvmlite import binding
    if numba.config.DISABLE_JIT:
        pytest.skip("numba's JIT is disabled")
    features = binding.get_host_cpu_features()
    if not (features.get("avx2") or features.get("avx512f")):
        pytest.skip("no AVX2 here")
    monkeypatch.setenv("SRCGRAD_CACHE_DIR", str(tmp_path))
    x = np.random.default_rng(1).normal(size=1000)
    g = srcgrad.grad(chain, backend="numba", strict=True)
    for _ in range(2):
        got = g(x)
    np.testing.assert_allclose(got, srcgrad.grad(chain)(x), rtol=1e-13)
    source = list(g.sources.values())[-1]
    assert "sin_f64(" in source and "tanh_f64(" in source and "np.exp(" in source  # twin
    namespace = g._latest.__globals__
    kernel = next(v for k, v in namespace.items() if k.endswith("_kernel"))
    assert kernel.signatures                                   # it ran, compiled
    asm = kernel.inspect_asm(kernel.signatures[0])      # its libm twin is linked in too
    assert len(re.findall(PACKED, asm)) > 50                   # 18 with libm's functions
    assert re.search(r"vpsllq\s+\$52, %[yz]mm", asm)           # 2**k built lane by lane


def test_only_large_domains_call_the_vectorisable_functions(monkeypatch):
    # inlined everywhere, the functions take seconds to compile: a small loop calls libm
    monkeypatch.setattr(numba_kernels, "VECTORISED_MIN", 4096)

    def kernel_of(n):
        r = Region("k", (n,), (Value("x", (n,), F8),), (Value("y", (n,), F8),), (),
                   (Let("y", Apply(np.exp, (Ref("x"),), F8), F8),), 0, 1)
        return NUMBA_KERNELS.kernel(r)
    assert "exp_f64(" not in kernel_of(4095) and "np.exp(" in kernel_of(4095)
    assert "exp_f64(" in kernel_of(4096)
