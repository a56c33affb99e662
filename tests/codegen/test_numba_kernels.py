"""The numba kernel emitter: kernels written from hand-built regions, run with
numba, with ``NUMBA_DISABLE_JIT=1`` and without numba, against a NumPy evaluation of the same
steps; the module files that numba's on-disk cache needs.

Run as a script (``python tests/codegen/test_numba_kernels.py MODE``) it checks the cases in a fresh
process: MODE ``python`` (under NUMBA_DISABLE_JIT=1, or with numba hidden) or ``cache``."""

from __future__ import annotations

import linecache
import os
import pathlib
import subprocess
import sys
import types
import warnings

import numpy as np
import pytest

from srcgrad.codegen.backends.fusion.regions import (
    Apply,
    Let,
    Lit,
    Note,
    Reduce,
    Ref,
    Region,
    Update,
    Value,
)
from srcgrad.codegen.backends.numba.kernel_files import load_from_file, module_file
from srcgrad.codegen.backends.numba.kernels import (
    NUMBA_KERNELS,
    PARALLEL_MIN,
    SUPPORTED,
    Unsupported,
    supports,
)
from srcgrad.ir import GENERATED

F8, B1, I8 = np.dtype(np.float64), np.dtype(bool), np.dtype(np.int64)
EDGES = [0.0, -0.0, 1.0, -1.0, -8.0, 2.5, np.nan, np.inf, -np.inf, 1 / 3, 2.0, 1e308]
ROOT = pathlib.Path(__file__).resolve().parents[2]


def ap(func, *args, dtype=F8):
    """``Apply`` with ``Ref`` for names and ``Lit`` for numbers."""
    return Apply(func, tuple(Ref(a) if isinstance(a, str) else Lit(a) if
                             isinstance(a, (int, float)) else a for a in args), np.dtype(dtype))


def region(name, domain, inputs, outputs, steps, updated=()):
    """A region of the whole function (start and stop do not matter here)."""
    return Region(name, domain, tuple(inputs), tuple(outputs), tuple(updated), tuple(steps), 0, 1)


# -- the cases: (region, arguments) ------------------------------------------------------

def chain():
    """1-D: a Python float, a 0-d array, division by zero, np.where, a mask, Python-only
    divisions and powers (which must give inf and nan, as NumPy's do)."""
    n = 16
    x = np.array(EDGES + [0.5, -0.25, 3.0, 4.0])
    r = region("chain_k", (n,), [Value("x", (n,), F8), Value("c", (), F8, python=True),
                                 Value("z", (), F8)],
               [Value("a", (n,), F8), Value("q", (n,), F8), Value("pos", (n,), B1),
                Value("e", (n,), F8)],
               [Note("chain.py:3  a = np.sin(x) * c + x**2"),
                Let("a", ap(np.add, ap(np.multiply, ap(np.sin, "x"), "c"),
                            ap(np.power, "x", 2)), F8),
                Let("b", ap(np.true_divide, "a", "z"), F8),
                Let("pos", ap(np.greater, "x", 0), B1),
                Let("q", ap(np.where, "pos", "b", 0), F8),
                Let("e", ap(np.add, ap(np.multiply, ap(np.true_divide, "c", 0.0), "x"),
                            ap(np.power, "c", 0.5)), F8)])
    return r, {"x": x, "c": -2.0, "z": np.array(0.0)}


def rows():
    """2-D with (n, 1) and (k,) inputs; NaN, all-NaN, -inf and inf rows; sum/max/min over
    rows, columns and everything, with and without keepdims."""
    x = np.random.default_rng(1).uniform(0.5, 2.0, (6, 5))
    x[1, 2] = np.nan
    x[2] = np.nan
    x[3] = -np.inf
    x[4, 0] = np.inf
    d = (6, 5)
    r = region("rows_k", d, [Value("x", d, F8), Value("m", (6, 1), F8), Value("w", (5,), F8)],
               [Value("y", d, F8), Value("rs", (6, 1), F8), Value("rmax", (6, 1), F8),
                Value("rmin", (6,), F8), Value("cs", (1, 5), F8), Value("cmax", (5,), F8),
                Value("total", (), F8), Value("top", (1, 1), F8), Value("neg", (6,), F8)],
               [Let("y", ap(np.add, ap(np.multiply, "x", "m"), "w"), F8),
                Reduce("rs", np.add, Ref("y"), (1,), True, (6, 1), F8),
                Reduce("rmax", np.maximum, Ref("y"), (-1,), True, (6, 1), F8),
                Reduce("rmin", np.minimum, Ref("y"), (1,), False, (6,), F8),
                Reduce("cs", np.add, Ref("y"), (0,), True, (1, 5), F8),
                Reduce("cmax", np.maximum, Ref("y"), (0,), False, (5,), F8),
                Reduce("total", np.add, ap(np.exp, "x"), (0, 1), False, (), F8),
                Reduce("top", np.maximum, Ref("x"), (0, 1), True, (1, 1), F8),
                Reduce("neg", np.maximum, ap(np.negative, "y"), (1,), False, (6,), F8)])
    return r, {"x": x, "m": np.arange(1.0, 7.0).reshape(6, 1), "w": np.linspace(-1, 1, 5)}


def mask():
    """The max adjoint's shape: a bool mask, a count of it, an in-place update through
    np.where, division by zero, logical ops, a Let updated in place, an input rebound."""
    d = (5, 4)
    y = np.random.default_rng(2).integers(-2, 3, d).astype(float)
    return region(
        "mask_k", d, [Value("y", d, F8), Value("max_y", (5, 1), F8), Value("d_y", d, F8),
                      Value("g", (5, 1), F8)],
        [Value("mask", d, B1), Value("count", (5, 1), I8), Value("any", (5,), B1),
         Value("all", (4,), B1), Value("ratio", d, F8),
         Value("flags", d, B1), Value("t", d, F8), Value("g", d, F8)],
        [Let("mask", ap(np.equal, "y", "max_y", dtype=B1), B1),
         Reduce("count", np.add, Ref("mask"), (1,), True, (5, 1), I8),
         Reduce("any", np.maximum, Ref("mask"), (1,), False, (5,), B1),
         Reduce("all", np.minimum, Ref("mask"), (0,), False, (4,), B1),
         Update("d_y", np.add, ap(np.where, "mask", "g", 0)),
         Let("ratio", ap(np.true_divide, "d_y", "y"), F8),
         Let("flags", ap(np.logical_or, ap(np.logical_not, "mask", dtype=B1),
                         ap(np.logical_and, "y", "d_y", dtype=B1), dtype=B1), B1),
         Let("t", ap(np.multiply, "y", 1.5), F8),
         Update("t", np.subtract, Ref("g")),
         Update("t", np.maximum, Lit(0.0)),
         Let("g", ap(np.multiply, "g", "t"), F8)],
        updated=("d_y",)), {"y": y, "max_y": y.max(axis=1, keepdims=True),
                            "d_y": np.ones(d), "g": np.arange(5.0).reshape(5, 1)}


def cube():
    """3-D: inputs broadcasting on the inner and the outer axes; reductions over the two
    inner axes (a local sum), the middle axis and the outer two (in the output's buffer)."""
    d = (3, 4, 5)
    rng = np.random.default_rng(3)
    return region(
        "cube_k", d, [Value("u", (4, 1), F8), Value("v", (3, 1, 5), F8)],
        [Value("s12", (3,), F8), Value("m1", (3, 1, 5), F8), Value("s02", (1, 4, 1), F8)],
        [Let("p", ap(np.subtract, "u", "v"), F8),
         Reduce("s12", np.add, Ref("p"), (1, 2), False, (3,), F8),
         Reduce("m1", np.minimum, Ref("p"), (1,), True, (3, 1, 5), F8),
         Reduce("s02", np.add, ap(np.square, "p"), (0, 2), True, (1, 4, 1), F8)]), {
        "u": rng.normal(size=(4, 1)), "v": rng.normal(size=(3, 1, 5))}


def big():
    """A domain of 2**17 elements: the outer loop is a prange, row reductions private to
    each iteration and a full sum a numba reduction."""
    d = (512, 256)
    rng = np.random.default_rng(4)
    return region("big_k", d, [Value("x", d, F8), Value("m", (512, 1), F8)],
                  [Value("y", d, F8), Value("rs", (512,), F8), Value("rmax", (512, 1), F8),
                   Value("total", (), F8)],
                  [Let("y", ap(np.multiply, ap(np.tanh, "x"), "m"), F8),
                   Reduce("rs", np.add, ap(np.exp, "y"), (1,), False, (512,), F8),
                   Reduce("rmax", np.maximum, Ref("y"), (1,), True, (512, 1), F8),
                   Reduce("total", np.add, Ref("y"), (0, 1), False, (), F8)]), {
        "x": rng.normal(size=d), "m": rng.uniform(size=(512, 1))}


def _table(arity):
    """Every supported function of ``arity`` arguments on float64 edge values, one Let each."""
    funcs = sorted((f for f in SUPPORTED if getattr(f, "nin", 0) == arity
                    and f not in (np.bitwise_and, np.bitwise_or, np.bitwise_xor)),
                   key=lambda f: f.__name__)
    if arity == 1:
        values = {"a": np.array(EDGES + [5e-324, 700.0, -745.5, 0.5, -0.5, 4.5, -2.5, 1e-20])}
    else:
        a, b = np.meshgrid(EDGES, EDGES)
        values = {"a": a.ravel(), "b": b.ravel()}
    n = len(values["a"])
    with np.errstate(all="ignore"):
        dtypes = [np.dtype(f(*(np.ones(1),) * arity).dtype) for f in funcs]
    lets = [Let(f"r_{f.__name__}", ap(f, *values, dtype=t), t) for f, t in zip(funcs, dtypes)]
    return region(f"table{arity}_k", (n,), [Value(v, (n,), F8) for v in values],
                  [Value(s.name, (n,), s.dtype) for s in lets], lets), values


CASES = {"chain": chain, "rows": rows, "mask": mask, "cube": cube, "big": big,
         "unary": lambda: _table(1), "binary": lambda: _table(2)}


# -- NumPy's evaluation of a region, and the module that runs the kernels -----------------

def reference(r, args):
    """The region's outputs and updated inputs, by NumPy, from copies of ``args``."""
    env = {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in args.items()}

    def ev(e):
        if isinstance(e, Ref):
            return env[e.name]
        return e.value if isinstance(e, Lit) else e.func(*map(ev, e.args))
    with np.errstate(all="ignore"):
        for s in r.steps:
            if isinstance(s, Let):
                env[s.name] = np.broadcast_to(ev(s.expr), r.domain).astype(s.dtype)
            elif isinstance(s, Reduce):
                whole = np.broadcast_to(ev(s.expr), r.domain)
                env[s.name] = s.func.reduce(whole, axis=s.axes, keepdims=s.keepdims)
            elif isinstance(s, Update):
                s.func(env[s.name], ev(s.expr), out=env[s.name])
    return {n: env[n] for n in [v.name for v in r.outputs] + list(r.updated)}


def module_text(regions):
    """A module as the numba backend writes one: prelude, kernels, and ``run_<kernel>``
    functions that make the calls and return the outputs by name."""
    parts = ["import numpy as np", "\n".join(NUMBA_KERNELS.prelude())]
    for r in regions:
        names = [v.name for v in r.outputs] + list(r.updated)
        lines = NUMBA_KERNELS.call(r) + ["return {" + ", ".join(f"{n!r}: {n}" for n in names)
                                         + "}"]
        parts += [NUMBA_KERNELS.kernel(r), f"def run_{r.name}({', '.join(v.name for v in r.inputs)}"
                  "):\n" + "\n".join("    " + line for line in lines)]
    return "\n\n\n".join(parts) + "\n"


def check(namespace, r, args):
    """Run the kernel on copies of ``args`` and compare with :func:`reference`."""
    want = reference(r, args)
    mine = {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in args.items()}
    got = namespace[f"run_{r.name}"](**mine)
    for name, expected in want.items():
        value = got[name]
        assert (type(value), np.shape(value), np.asarray(value).dtype) == (
            type(expected), np.shape(expected), np.asarray(expected).dtype), name
        np.testing.assert_allclose(value, expected, rtol=1e-13, atol=1e-300, err_msg=name)


@pytest.fixture(scope="module")
def jitted(tmp_path_factory):
    """One module with every case's kernel (each compiles at its first call)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SRCGRAD_CACHE_DIR", str(tmp_path_factory.mktemp("modules")))
        cases = {k: make() for k, make in CASES.items()}
        yield load_from_file(module_text([r for r, _ in cases.values()]), "tests", {}), cases


@pytest.mark.parametrize("case", list(CASES))
def test_kernel_matches_numpy(jitted, case):
    pytest.importorskip("numba")
    namespace, cases = jitted
    r, args = cases[case]
    check(namespace, r, args)
    kernel = namespace[r.name]
    assert kernel.signatures and not isinstance(kernel, types.FunctionType)   # compiled
    assert ("prange(" in NUMBA_KERNELS.kernel(r)) == (case == "big")


def test_source_reads_like_the_statements():
    r, _ = rows()
    text = NUMBA_KERNELS.kernel(r)
    assert "@njit(cache=True, error_model='numpy')" in text and "fastmath" in text
    assert "y = x[i, j] * m[i, 0] + w[j]" in text
    assert "rmax_row[j] = y" in text and "rmax = rmax_part" in text       # by stored rows
    assert "rs_out[i, 0] = rs" in text and "cs[0, j] += y" in text
    assert NUMBA_KERNELS.call(r) == ["y, rs, rmax, rmin, cs, cmax, total, top, neg = "
                                     "rows_k(x, m, w)", "total = np.float64(total)"]
    c, _ = chain()
    assert "# chain.py:3  a = np.sin(x) * c + x**2" in NUMBA_KERNELS.kernel(c)
    assert "np.float64(c) / 0.0" in NUMBA_KERNELS.kernel(c)       # NumPy's rules for Python floats
    assert NUMBA_KERNELS.call(c) == ["a, q, pos, e = chain_k(x, c, z[()])"]


def test_parallel_only_where_safe():
    r, _ = big()
    assert "prange(512)" in NUMBA_KERNELS.kernel(r) and "parallel=True" in NUMBA_KERNELS.kernel(r)
    d = (PARALLEL_MIN, 2)
    for axes, func in [((0,), np.add), ((-2,), np.add), ((0, 1), np.maximum)]:
        steps = [Reduce("s", func, Ref("x"), axes, True, (1, 1) if len(axes) == 2 else (1, 2), F8)]
        text = NUMBA_KERNELS.kernel(region("k", d, [Value("x", d, F8)],
                                           [Value("s", steps[0].shape, F8)], steps))
        assert "prange" not in text and "parallel" not in text, text


def test_refusals():
    d = (3,)
    x = [Value("x", d, F8)]
    assert supports(np.sin) and supports(np.where) and not supports(np.heaviside)
    assert not supports([])                         # unhashable: no ufunc
    for step in [Let("y", ap(np.heaviside, "x", "x"), F8),
                 Let("y", ap(np.add, "x", "x", dtype=B1), B1),    # NumPy's bool add is `or`
                 Let("y", ap(np.bitwise_and, "x", "x"), F8),
                 Reduce("y", np.multiply, Ref("x"), (0,), False, (), F8)]:
        with pytest.raises(Unsupported):
            NUMBA_KERNELS.kernel(region("k", d, x, [Value("y", (), F8)], [step]))
    with pytest.raises(Unsupported, match="no elements"):
        NUMBA_KERNELS.kernel(region("k", (0,), [Value("x", (0,), F8)], [Value("y", (), F8)],
                                    [Reduce("y", np.maximum, Ref("x"), (0,), False, (), F8)]))
    with pytest.raises(ValueError, match="broadcast"):
        NUMBA_KERNELS.kernel(region("k", (3, 2), [Value("x", (3, 3), F8)], [], []))


def test_user_names_never_hide_the_kernels_own(tmp_path, monkeypatch):
    monkeypatch.setenv("SRCGRAD_CACHE_DIR", str(tmp_path))
    d = (3,)
    r = region("k", d, [Value("range", d, F8), Value("njit", (), F8, python=True)],
               [Value("abs", d, F8), Value("prange", (), F8)],
               [Let("abs", ap(np.absolute, "range"), F8),
                Reduce("prange", np.add, ap(np.multiply, "abs", "njit"), (0,), False, (), F8)])
    assert "def k(range_1, njit_1):" in NUMBA_KERNELS.kernel(r)
    got = load_from_file(module_text([r]), "names", {})["run_k"](np.array([-1.0, 2, -3]), 2.0)
    assert got["abs"].tolist() == [1.0, 2.0, 3.0] and got["prange"] == 12.0


def test_call_binds_a_scalar_and_updates_in_place():
    d = (4,)
    total = region("k", d, [Value("x", d, F8)], [Value("s", (), F8)],
                   [Reduce("s", np.add, Ref("x"), (0,), False, (), F8)])
    assert NUMBA_KERNELS.call(total) == ["s = np.float64(k(x))"]
    update = region("k", d, [Value("x", d, F8), Value("g", (), F8, python=True)], [],
                    [Update("x", np.multiply, Ref("g"))], updated=("x",))
    assert NUMBA_KERNELS.call(update) == ["k(x, g)"]
    assert "x[i] *= g" in NUMBA_KERNELS.kernel(update)


def test_module_file_is_written_once(tmp_path, monkeypatch):
    monkeypatch.setenv("SRCGRAD_CACHE_DIR", str(tmp_path))
    text = '"""A module."""\nimport numpy as np\n\ndef f(a):\n    return k * np.sqrt(a)\n'
    ns = load_from_file(text, "label", {"k": 3.0})
    path = pathlib.Path(ns["__file__"])
    assert path.parent == tmp_path and path.read_text() == text
    assert ns["__name__"].startswith(GENERATED) and ns["f"](4.0) == 6.0
    assert ns["f"].__code__.co_filename == str(path)
    stamp = path.stat().st_mtime_ns
    os.utime(path, ns=(stamp - 10**9, stamp - 10**9))
    assert module_file(text) == path and path.stat().st_mtime_ns == stamp - 10**9   # untouched
    path.write_text("damaged")
    assert module_file(text) == path and path.read_text() == text
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".tmp")]
    assert linecache.getline(str(path), 5) == "    return k * np.sqrt(a)\n"


def logsumexp(x, m):
    y = np.sin(x) * m + x ** 2
    z = np.where(y > 1.0, y, 0.5 * y)
    return np.sum(np.log(np.sum(np.exp(z - np.max(z, axis=1, keepdims=True)), axis=1)))


def test_fused_gradient_matches_numpy_backend(tmp_path, monkeypatch):
    """A real gradient through the fusion pass: kernels in its source, NumPy's numbers."""
    pytest.importorskip("numba")
    import srcgrad
    monkeypatch.setenv("SRCGRAD_CACHE_DIR", str(tmp_path))
    rng = np.random.default_rng(5)
    x, m = rng.normal(size=(30, 20)), rng.uniform(size=(30, 1))
    x[3, 4] = np.nan
    fused = srcgrad.grad(logsumexp, backend="numba")
    got, want = fused(x, m), srcgrad.grad(logsumexp)(x, m)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-300)
    assert np.isnan(got[3]).all() and np.isfinite(np.delete(got, 3, axis=0)).all()
    source = list(fused.sources.values())[-1]
    assert source.count("@njit(cache=True") >= 2 and "from numba import njit, prange" in source
    assert any(p.suffix == ".py" for p in tmp_path.iterdir())            # run from a file


def _subprocess(mode, env, cache_dir):
    env = {**os.environ, **env, "SRCGRAD_CACHE_DIR": str(cache_dir)}
    done = subprocess.run([sys.executable, __file__, mode], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout.split()


PYTHON_CASES = [case for case in CASES if case != "big"]        # big is slow as Python


@pytest.mark.parametrize("env", [{"NUMBA_DISABLE_JIT": "1"}, {"HIDE_NUMBA": "1"}],
                         ids=["NUMBA_DISABLE_JIT", "without-numba"])
def test_same_module_runs_as_python(env, tmp_path):
    if "NUMBA_DISABLE_JIT" in env:
        pytest.importorskip("numba")
    assert _subprocess("python", env, tmp_path) == ["python"] + PYTHON_CASES


def test_second_process_loads_kernels_from_numbas_cache(tmp_path):
    pytest.importorskip("numba")
    first = _subprocess("cache", {}, tmp_path)
    second = _subprocess("cache", {}, tmp_path)
    assert first[0] == second[0]                         # the same module file
    assert first[1:] == ["hits=0", "misses=1"] and second[1:] == ["hits=1", "misses=0"]


def main(mode):
    """Check the cases in this process (see the module's docstring)."""
    if os.environ.get("HIDE_NUMBA"):
        assert "numba" not in sys.modules
        sys.modules["numba"] = None                      # `import numba` raises ImportError
    warnings.simplefilter("ignore", RuntimeWarning)      # NumPy scalars warn, as arrays do
    if mode == "python":
        cases = {k: CASES[k]() for k in PYTHON_CASES}
        namespace = load_from_file(module_text([r for r, _ in cases.values()]), "python", {})
        njit = namespace["njit"]
        for name, (r, args) in cases.items():
            assert isinstance(namespace[r.name], types.FunctionType), name     # not compiled
            check(namespace, r, args)
        assert njit(main) is main and njit(cache=True, parallel=True)(main) is main
        print("python", *cases)
    else:
        r, args = chain()
        namespace = load_from_file(module_text([r]), "cache", {})
        check(namespace, r, args)
        stats = namespace[r.name].stats
        print(namespace["__file__"], f"hits={sum(stats.cache_hits.values())}",
              f"misses={sum(stats.cache_misses.values())}")


if __name__ == "__main__":
    main(sys.argv[1])
