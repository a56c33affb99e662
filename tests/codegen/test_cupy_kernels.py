"""The CuPy kernel emitter without a GPU: regions built by hand become
``cp.ElementwiseKernel``/``cp.ReductionKernel`` source whose CUDA C runs through the NumPy
stand-in (tests/support/cupy_standin.py) and must give what NumPy gives for the same steps; nvcc
compiles the kernels where it is installed; whole gradients with ``cupy`` bound to the
stand-in equal the NumPy backend's.  The last test runs them on a real GPU, where there is one.
"""

from __future__ import annotations

import shutil
import subprocess
import sys

import numpy as np
import pytest
from cupy_standin import CUPY, CError, ElementwiseKernel, ReductionKernel, cuda_source

import srcgrad
from srcgrad.codegen.backends.cupy.kernels import CUPY_KERNELS, Unsupported, supports
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

F, B, I8 = np.dtype(np.float64), np.dtype(np.bool_), np.dtype(np.int64)


def ap(func, *args, dtype=F) -> Apply:
    return Apply(func, tuple(Ref(a) if isinstance(a, str) else a if isinstance(a, (Apply, Lit))
                             else Lit(a) for a in args), np.dtype(dtype))


def region(name, domain, env, steps, outputs, updated=()) -> tuple[Region, dict]:
    """A region over ``env``'s values (arrays, Python numbers) as the fusion pass finds one,
    and ``env``."""
    inputs = tuple(Value(n, np.shape(v), np.asarray(v).dtype, not isinstance(v, np.ndarray))
                   for n, v in env.items())
    shapes = {s.name: (domain, s.dtype) if isinstance(s, Let) else (s.shape, s.dtype)
              for s in steps if isinstance(s, (Let, Reduce))}
    return Region(name, domain, inputs, tuple(Value(n, *shapes[n]) for n in outputs),
                  tuple(updated), tuple(steps), 0, 1), env


def reference(r: Region, env: dict) -> tuple[dict, dict]:
    """The region's steps run by NumPy, statement by statement: the names' values, and the
    buffers updated in place."""
    env = {k: np.copy(v) if isinstance(v, np.ndarray) else v for k, v in env.items()}
    buffers = {n: env[n] for n in r.updated}

    def value(e):
        if isinstance(e, Ref):
            return env[e.name]
        return e.value if isinstance(e, Lit) else e.func(*map(value, e.args))

    with np.errstate(all="ignore"):
        for s in r.steps:
            if isinstance(s, Let):
                env[s.name] = np.broadcast_to(value(s.expr), r.domain).astype(s.dtype)
            elif isinstance(s, Reduce):
                env[s.name] = s.func.reduce(np.broadcast_to(value(s.expr), r.domain),
                                            axis=s.axes, keepdims=s.keepdims).astype(s.dtype)
            elif isinstance(s, Update):
                s.func(env[s.name], value(s.expr), out=env[s.name])
    return env, buffers


def run_kernels(r: Region, env: dict) -> dict:
    """The emitted kernels and calls, with ``cp`` the stand-in."""
    namespace = {"cp": CUPY, **{k: np.copy(v) if isinstance(v, np.ndarray) else v
                                for k, v in env.items()}}
    exec(CUPY_KERNELS.kernel(r) + "\n" + "\n".join(CUPY_KERNELS.call(r)), namespace)
    return namespace


rng = np.random.default_rng(11)
X = rng.normal(size=(4, 5))
X[3], X[:, 4] = -np.abs(X[3]) - 1, -np.abs(X[:, 4]) - 1     # a row, a column all negative
X[1, 2], X[2, 0] = np.nan, np.inf
M = np.max(X, axis=1, keepdims=True)

CASES = {
    "chain_1d": region("chain", (7,), {"x": np.array([-2.0, -0.5, 0.0, 0.3, np.nan, np.inf,
                                                      3.0]), "lr": 0.5, "k": 3}, [
        Note("f.py:2  y = np.sin(x) * 2 + np.exp(-x)"),
        Let("y", ap(np.add, ap(np.multiply, ap(np.sin, "x"), 2), ap(np.exp, ap(np.negative,
                                                                               "x"))), F),
        Let("z", ap(np.subtract, ap(np.power, ap(np.tanh, "y"), 2), ap(np.true_divide, "y",
                                                                       "k")), F),
        Let("w", ap(np.multiply, "z", "lr"), F)], ["w", "y"]),
    "row_max": region("rmax", (4, 5), {"x": X}, [
        Reduce("m", np.maximum, Ref("x"), (1,), True, (4, 1), F)], ["m"]),
    "row_lse": region("lse", (4, 5), {"x": X, "m": M}, [
        Let("t", ap(np.exp, ap(np.subtract, "x", "m")), F),
        Reduce("s", np.add, Ref("t"), (1,), False, (4,), F),
        Reduce("s2", np.add, ap(np.exp, ap(np.subtract, "x", "m")), (1,), True, (4, 1), F)],
        ["t", "s", "s2"]),
    "max_min_nan": region("mm", (4, 5), {"x": X, "p": np.abs(X) + 0.5}, [
        Reduce("mx", np.maximum, Ref("x"), (0,), False, (5,), F),
        Reduce("mn", np.minimum, ap(np.multiply, "x", -2.0), (0, 1), False, (), F),
        Reduce("pmin", np.minimum, Ref("p"), (1,), False, (4,), F),
        Reduce("total", np.add, ap(np.fmax, "x", 0.0), (0, 1), True, (1, 1), F)],
        ["mx", "mn", "pmin", "total"]),
    "mask_where": region("mw", (4, 5), {"x": X, "m": M, "g": rng.normal(size=(4, 1))}, [
        Let("mask", ap(np.equal, "x", "m", dtype=B), B),
        Let("big", ap(np.logical_and, ap(np.greater, "x", 0, dtype=B),
                      ap(np.logical_not, ap(np.isnan, "x", dtype=B), dtype=B), dtype=B), B),
        Let("either", ap(np.add, "mask", "big", dtype=B), B),
        Reduce("n", np.add, Ref("mask"), (1,), True, (4, 1), I8),
        Let("d", ap(np.where, "mask", "g", 0), F)], ["mask", "either", "n", "d"]),
    "updates": region("up", (4, 5), {"x": X, "m": M, "d_x": rng.normal(size=(4, 5)),
                                     "h": rng.normal(size=(4, 5)), "g": rng.normal(size=(4, 1))}, [
        Reduce("before", np.add, Ref("d_x"), (1,), False, (4,), F),
        Let("acc", ap(np.multiply, "x", 1.0), F),
        Update("acc", np.add, Ref("g")),
        Update("d_x", np.add, ap(np.where, ap(np.equal, "x", "m", dtype=B), "g", 0)),
        Update("d_x", np.multiply, Lit(0.5)),
        Let("h", ap(np.multiply, "h", 2), F),
        Reduce("after", np.add, ap(np.add, "h", "d_x"), (0,), False, (5,), F)],
        ["acc", "h", "before", "after"], updated=["d_x"]),
    "scalars": region("sc", (7,), {"x": np.array([-2.0, -0.0, 0.0, 0.5, np.nan, 3.0, -np.inf]),
                                   "s": 1.5, "n": 2, "k": 4, "z0": np.array(0.25)}, [
        Let("ints", ap(np.add, ap(np.true_divide, "n", "k"), ap(np.sin, "n")), F),
        Let("y", ap(np.where, ap(np.greater, "x", 0, dtype=B), ap(np.multiply, "x", "s"),
                    -np.inf), F),
        Let("q", ap(np.add, ap(np.sign, "x"), ap(np.maximum, "x", "z0")), F),
        Let("p", ap(np.add, ap(np.power, ap(np.absolute, "x"), 0.5), ap(np.square, "x")), F),
        Let("r", ap(np.add, ap(np.reciprocal, "x"), ap(np.true_divide, "n", 3)), F),
        Reduce("cnt", np.add, ap(np.less, "x", "n", dtype=B), (0,), False, (), I8)],
        ["ints", "y", "q", "p", "r", "cnt"]),
    "c_names": region("names", (2, 3), {"i": rng.normal(size=(2, 3)), "a": 2.0,
                                        "_t": rng.normal(size=(1, 3)), "exp": 1.0}, [
        Let("int", ap(np.add, "i", "_t"), F),
        Let("b", ap(np.exp, ap(np.multiply, "int", "exp")), F),
        Reduce("a_sum", np.add, ap(np.multiply, "b", "a"), (1,), False, (2,), F)],
        ["b", "a_sum"]),
    "narrow": region("nar", (4, 5), {"g": rng.normal(size=(4, 1))}, [
        Note("q.py:1  s = '''\n*/ y = 0; ''' + '\\'  # a note is text, never code \\"),
        Let("y", ap(np.multiply, "g", 2), F),
        Reduce("r", np.add, ap(np.multiply, "g", 3), (1,), False, (4,), F)], ["y", "r"]),
    "rebinds_a_read_name": region("rb", (3, 4), {"x": rng.normal(size=(3, 4)),
                                                 "y": rng.normal(size=(3, 4))}, [
        Let("t", ap(np.multiply, "x", 2), F),
        Reduce("x", np.add, Ref("y"), (1,), False, (3,), F),
        Update("y", np.add, Lit(1.0))], ["t", "x"], updated=["y"]),
    "local_rebinds": region("lr", (3, 4), {"x": rng.normal(size=(3, 4)),
                                           "y": rng.normal(size=(3, 4))}, [
        Update("y", np.add, Lit(1.0)),
        Let("x", ap(np.multiply, "x", 3), F),               # read below, not after
        Reduce("r1", np.add, Ref("x"), (1,), False, (3,), F),
        Let("y", ap(np.multiply, "y", 2), F),
        Reduce("r2", np.add, Ref("y"), (0,), False, (4,), F)], ["r1", "r2"], updated=["y"]),
}


@pytest.mark.parametrize("case", CASES)
def test_kernels_give_what_numpy_gives(case):
    r, env = CASES[case]
    (want, buffers), got = reference(r, env), run_kernels(r, env)
    want = {**want, **buffers}
    for name in [v.name for v in r.outputs] + list(r.updated):
        assert np.shape(got[name]) == np.shape(want[name]), name
        assert np.asarray(got[name]).dtype == np.asarray(want[name]).dtype, name
        np.testing.assert_allclose(got[name], want[name], rtol=1e-12, atol=0, err_msg=name)



def test_the_source_prints_the_cuda_c_with_the_notes_as_comments():
    r, _ = CASES["chain_1d"]
    source = CUPY_KERNELS.kernel(r)
    assert "chain = cp.ElementwiseKernel(\n    'float64 x, float64 lr, int64 k'," in source
    assert "// f.py:2  y = np.sin(x) * 2 + np.exp(-x)\n" in source
    assert "    y = sin(x) * 2.0 + exp(-x);\n" in source            # a literal 2 is a double
    assert "double z = np_square(tanh(y)) - y / (double)k;" in source
    assert CUPY_KERNELS.call(r) == ["w, y = chain(x, lr, k)"]
    r, _ = CASES["row_lse"]
    source, calls = CUPY_KERNELS.kernel(r), CUPY_KERNELS.call(r)
    assert "map_expr='exp(x - m)'" in source and "map_expr='t'" in source   # fused, and read
    assert calls == ["t = lse(x, m)", "s = lse_s(t, axis=1)",
                     "s2 = lse_s2(x, m, axis=1, keepdims=True)"]


def test_updates_write_their_buffers_and_reductions_run_where_their_inputs_hold():
    r, _ = CASES["updates"]
    source, calls = CUPY_KERNELS.kernel(r), CUPY_KERNELS.call(r)
    assert "'float64 d_x, float64 acc, float64 h'" in source      # the buffer is an output
    assert "d_x = d_x + (x == m ? g : 0.0);" in source and "h = h_1 * 2.0;" in source
    assert calls == ["before = up_before(d_x, axis=1)",             # before d_x is updated
                     "d_x, acc, h = up(x, m, h, g, d_x, cp.empty((4, 5)), cp.empty((4, 5)))",
                     "after = up_after(d_x, h, axis=0)"]
    r, _ = CASES["rebinds_a_read_name"]                         # all read before any bound
    assert CUPY_KERNELS.call(r) == ["x, (y, t) = rb_x(y, axis=1), rb(x, y, cp.empty((3, 4)))"]


def test_names_c_reserves_are_renamed_and_nothing_else_is():
    r, _ = CASES["c_names"]
    source = CUPY_KERNELS.kernel(r)
    assert "'float64 v_i, float64 v_t, float64 v_exp'" in source
    assert "double v_int = v_i + v_t;" in source and "v_b = exp(v_int * v_exp);" in source
    assert CUPY_KERNELS.call(r) == ["b = names(i, _t, exp)", "a_sum = names_a_sum(a, b, axis=1)"]


def test_what_a_kernel_cannot_write_exactly_is_refused():
    assert supports(np.sin) and supports(np.where) and supports(np.maximum, np.float64)
    assert not supports(np.remainder) and not supports(np.sin, np.complex128)
    env = {"x": np.arange(6.0), "n": np.arange(6)}
    for steps in ([Let("y", ap(np.remainder, "x", 2.0), F)],
                  [Let("y", ap(np.sin, "x", dtype=np.complex128), np.complex128)],
                  [Reduce("y", np.maximum, Ref("n"), (0,), False, (), I8)],
                  [Reduce("y", np.multiply, Ref("x"), (0,), False, (), F)]):
        r, _ = region("bad", (6,), env, steps, ["y"])
        with pytest.raises(Unsupported):
            CUPY_KERNELS.kernel(r)
    r, _ = region("bad", (6,), env, [Let("y", ap(np.sin, "nowhere"), F)], ["y"])
    with pytest.raises(ValueError, match="nowhere"):
        CUPY_KERNELS.kernel(r)


@pytest.mark.parametrize("operation, error", [
    ("y = erf(x);", "no function erf"),                     # not in the subset
    ("y = sin(n);", "no single overload"),                  # CUDA's sin takes no integer
    ("x = 1.0; y = x;", "const"),                           # an input is read-only
    ("double t = y; y = t;", "read before it is written"),  # an output read unwritten
    ("double x = 1.0; y = x;", "declared again"),
    ("if (x > 0) y = 1.0;", "not a statement"),
    ("y = x", "expected ;"),
])
def test_the_stand_in_refuses_what_a_compiler_would(operation, error):
    with pytest.raises(CError, match=error):
        ElementwiseKernel("float64 x, int64 n", "float64 y", operation, "k")(
            np.ones(3), np.ones(3, np.int64))


def test_the_stand_in_follows_c_and_cupy():
    k = ElementwiseKernel("int64 n", "float64 y, bool b", "y = n / 2 + 7 / 2.0; b = n + true;",
                          "k")
    y, b = k(np.array([-3, 3]))
    np.testing.assert_array_equal(y, [-1 + 3.5, 1 + 3.5])   # C's division truncates
    np.testing.assert_array_equal(b, [True, True])
    with pytest.raises(ValueError, match="Out shape"):
        k(np.ones(3, np.int64), np.empty(1), np.empty(1, bool))
    with pytest.raises(TypeError, match="Type is mismatched"):
        k(np.ones(3, np.int64), np.empty(3), np.empty(3))
    wrong = ReductionKernel("float64 x", "float64 y", "x", "a > b ? a : b", "y = a", "0", "w")
    assert wrong(-np.ones((2, 3)), axis=1).tolist() == [0.0, 0.0]     # the identity counts


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
def test_nvcc_compiles_every_kernel(tmp_path):
    kernels = []
    namespace = {"cp": CUPY}
    for r, _ in CASES.values():
        exec(CUPY_KERNELS.kernel(r), namespace)
        kernels += [v for v in namespace.values() if isinstance(v, (ElementwiseKernel,
                                                                     ReductionKernel))
                    and v not in kernels]
    assert len(kernels) >= 2 * len(CASES)
    (tmp_path / "cupy").mkdir()       # CuPy's copy of CUDA's header, for its CUDART_ names
    (tmp_path / "cupy" / "math_constants.h").write_text("#include <math_constants.h>\n")
    (tmp_path / "kernels.cu").write_text(cuda_source(kernels))
    done = subprocess.run(["nvcc", "-ptx", "-arch=sm_90", "--Werror", "all-warnings",
                           f"-I{tmp_path}", "-o",
                           str(tmp_path / "kernels.ptx"), str(tmp_path / "kernels.cu")],
                          capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    ptx = (tmp_path / "kernels.ptx").read_text()
    assert all(f".entry {k.name}(" in ptx for k in kernels)


def lse(x):
    m = np.max(x, axis=1, keepdims=True)
    return np.sum(np.log(np.sum(np.exp(x - m), axis=1)) + m[:, 0])


def chain(x):
    return np.sum(np.tanh(np.sin(x) * 2.0 + np.exp(-x)) ** 2)


def mlp(w1, w2, x):
    h = np.tanh(x @ w1)
    return np.mean((h @ w2 - 1.0) ** 2) + 0.01 * np.sum(np.maximum(w1, 0.0))


GRADIENTS = {"chain": (chain, (rng.normal(size=50),)),
             "logsumexp": (lse, (rng.normal(size=(6, 7)),)),
             "mlp": (mlp, (rng.normal(size=(5, 4)), rng.normal(size=4),
                           rng.normal(size=(8, 5))))}


@pytest.mark.parametrize("name", GRADIENTS)
def test_gradients_with_the_kernels_equal_numpys(name, monkeypatch):
    pytest.importorskip("srcgrad.codegen.backends.fusion.partition")
    monkeypatch.setitem(sys.modules, "cupy", CUPY)
    f, args = GRADIENTS[name]
    g = srcgrad.grad(f, wrt=tuple(range(len(args))) if len(args) > 1 else 0, backend="cupy")
    got, want = g(*args), srcgrad.grad(f, wrt=tuple(range(len(args))) if len(args) > 1
                                       else 0)(*args)
    source = list(g.sources.values())[-1]
    assert "= cp.ElementwiseKernel(" in source, source
    for a, b in zip(got if len(args) > 1 else [got], want if len(args) > 1 else [want]):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


@pytest.mark.skipif(not srcgrad.runtime.device.cuda_available(), reason="no CUDA device")
@pytest.mark.parametrize("name", GRADIENTS)
def test_gradients_on_a_gpu_equal_numpys(name):  # pragma: no cover - needs a GPU
    import cupy
    f, args = GRADIENTS[name]
    wrt = tuple(range(len(args))) if len(args) > 1 else 0
    g = srcgrad.grad(f, wrt=wrt, backend="cupy")
    got = g(*map(cupy.asarray, args))
    assert "= cp.ElementwiseKernel(" in list(g.sources.values())[-1]
    want = srcgrad.grad(f, wrt=wrt)(*args)
    for a, b in zip(got if len(args) > 1 else [got], want if len(args) > 1 else [want]):
        np.testing.assert_allclose(cupy.asnumpy(a), b, rtol=1e-10, atol=1e-12)
