"""backend="dask": the generated code, laziness, chunking, scatters and refusals.

Gradients over whole catalogues are tests/sweeps/test_dask_parity.py's; a real cluster is
tests/codegen/test_dask_cluster.py's.  Here the in-process synchronous scheduler runs the graphs,
and a scheduler that counts its calls tells when building a gradient computed something.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")

import srcgrad  # noqa: E402
from srcgrad.errors import MissingBackend  # noqa: E402
from srcgrad.tools.cli import main as cli  # noqa: E402

RNG = np.random.default_rng(0)
XN = RNG.normal(size=(96, 5))
YN = (RNG.random(96) > 0.5) * 1.0
WN = RNG.normal(size=5)


def logistic(w, X, y):
    z = X @ w
    p = 1 / (1 + np.exp(-z))
    return -np.mean(y * np.log(p) + (1 - y) * np.log(1 - p))


def data(chunk: int = 12):
    return da.from_array(XN, chunks=(chunk, 5)), da.from_array(YN, chunks=chunk)


class Counting:
    """A scheduler that runs graphs synchronously and counts them."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, dsk, keys, **kwargs):
        self.calls += 1
        return dask.get(dsk, keys, **kwargs)


@pytest.fixture
def counted():
    scheduler = Counting()
    with dask.config.set(scheduler=scheduler):
        yield scheduler


def test_the_module_reads_as_dask_array_calls():
    g = srcgrad.value_and_grad(logistic, backend="dask", strict=True)
    source = g.source
    assert "import numpy as np\nimport dask.array as da\n" in source
    assert "exp_z_neg = da.exp(-z)" in source
    assert "np.mean(plus)" in source          # NumPy hands it to Dask (NEP 18)
    assert "d_plus = filled(plus, d_plus)" in source      # chunked like the data


def test_gradients_are_lazy_one_graph_and_equal_numpys(counted):
    X, y = data()
    w = WN.copy()
    value, grad = srcgrad.value_and_grad(logistic, backend="dask", strict=True)(w, X, y)
    assert counted.calls == 0                         # building computed nothing
    assert isinstance(value, da.Array) and isinstance(grad, da.Array)
    got_value, got_grad = dask.compute(value, grad)
    assert counted.calls == 1                         # value and gradient in one pass
    want_value, want_grad = srcgrad.value_and_grad(logistic)(WN, XN, YN)
    np.testing.assert_allclose(got_value, want_value, rtol=1e-12)
    np.testing.assert_allclose(got_grad, want_grad, rtol=1e-12, atol=1e-15)
    assert np.array_equal(w, WN)                       # nothing the caller passed is written


def test_a_small_parameters_gradient_is_a_tree_reduction_over_chunks():
    X, y = data(chunk=2)                              # 48 chunks
    grad = srcgrad.grad(logistic, backend="dask", strict=True)(WN, X, y)
    graph = dict(grad.__dask_graph__())
    deps = {k: set() for k in graph}
    from dask.core import get_dependencies
    for key in graph:
        deps[key] = get_dependencies(graph, key)
    assert max(len(d) for d in deps.values()) < 48     # no task reads every chunk


def test_a_gradient_over_the_data_keeps_the_datas_chunks():
    def energy(x):
        return np.mean(np.sin(x) ** 2)
    X, _ = data(chunk=24)
    grad = srcgrad.grad(energy, backend="dask", strict=True)(X)
    assert grad.chunks == X.chunks
    np.testing.assert_allclose(grad.compute(), srcgrad.grad(energy)(XN), rtol=1e-12)


def test_python_float_and_pytree_parameters_get_dask_gradients():
    def model(params, X, y):
        h = np.tanh(X @ params["w"] + params["b"])
        return np.mean((h - y) ** 2) * params["scale"]
    params = {"w": WN.copy(), "b": 0.5, "scale": 2.0}
    X, y = data()
    grads = srcgrad.grad(model, backend="dask", strict=True)(params, X, y)
    assert all(isinstance(g, da.Array) for g in grads.values())
    assert grads["b"].shape == () and grads["b"].dtype == np.float64
    want = srcgrad.grad(model)(params, XN, YN)
    (got,) = dask.compute(grads)
    for k in want:
        np.testing.assert_allclose(got[k], want[k], rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("index", [np.array([1, 2, 2, 5, 1, 1, 9, 0]), [0, 0, 3]])
def test_a_gather_with_repeats_scatters_its_gradient_adding_them(index):
    def embed(E, tokens):
        return np.sum(np.tanh(E[tokens]) ** 2)
    E = RNG.normal(size=(10, 3))
    tokens = da.from_array(np.asarray(index), chunks=3)
    got = srcgrad.grad(embed, backend="dask", strict=True)(E, tokens)
    assert isinstance(got, da.Array)
    np.testing.assert_allclose(got.compute(), srcgrad.grad(embed)(E, np.asarray(index)),
                               rtol=1e-12)


def test_basic_indexes_with_new_axes_ellipses_and_reversals():
    def f(x):
        return np.sum(x[1:5, ::-1] ** 2) + np.sum(x[None, 2] * 3) + np.sum(x[..., None, 1:3])
    X, _ = data(chunk=7)
    got = srcgrad.grad(f, backend="dask", strict=True)(X)
    np.testing.assert_allclose(got.compute(), srcgrad.grad(f)(XN), rtol=1e-12)


def branchy(x, y):
    if np.sum(x) > 0:
        y = y * 2
    while np.max(np.abs(y)) > 1:
        y = y / 2
    return np.sum(x * y)


def test_control_flow_on_dask_values_computes_them_when_it_must(counted):
    X, _ = data()
    Y = da.from_array(XN * 10, chunks=(12, 5))
    grads = srcgrad.grad(branchy, wrt=(0, 1), backend="dask", strict=True)(X, Y)
    assert counted.calls >= 2                    # the branch and each test of the while
    got = dask.compute(*grads)
    want = srcgrad.grad(branchy, wrt=(0, 1))(XN, XN * 10)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-12)


def test_auto_picks_dask_for_dask_arrays_and_numpy_otherwise():
    X, y = data()
    g = srcgrad.grad(logistic, backend="auto", strict=True)
    assert isinstance(g(WN, X, y), da.Array)
    assert type(g(WN, XN, YN)) is np.ndarray
    assert isinstance(g({"not": "used"} and WN, X, YN), da.Array)


def test_a_function_dask_lacks_is_refused_on_dask_arrays_at_its_line():
    def f(x):
        return np.sum(np.sort(x) ** 2)
    g = srcgrad.grad(f, backend="dask", strict=True)
    np.testing.assert_allclose(g(XN), srcgrad.grad(f)(XN))    # NumPy's arrays: NumPy's sort
    X, _ = data()
    with pytest.raises(srcgrad.CompileError, match=r"at test_dask_backend.py:\d+  return "
                       r"np.sum\(np.sort\(x\) \*\* 2\): The `numpy.sort` function is not "
                       r"implemented by Dask array"):
        g(X)
    with pytest.warns(srcgrad.FallbackWarning, match="numpy.sort"):
        eager = srcgrad.grad(f, backend="dask")(X)      # the eager engine computes X
    np.testing.assert_allclose(eager, srcgrad.grad(f)(XN), rtol=1e-12)


IDX = np.array([1, 1, 2])


def test_what_dask_cannot_do_lazily_is_refused_at_the_users_line():
    def f(x):
        y = np.sin(x)
        return np.sum(y[IDX] ** 2)
    X = da.zeros((3000, 2000), chunks=(1000, 2000))     # 6e6 elements, repeated rows
    with pytest.raises(srcgrad.CompileError, match=r"lazily at test_dask_backend.py:\d+  "
                       r"return np.sum\(y\[IDX\] \*\* 2\)"):
        srcgrad.grad(f, backend="dask", strict=True)(X)


def test_vjp_and_jvp_run_on_dask_arrays():
    def f(x):
        return np.tanh(x) * 2
    X, _ = data()
    out, back = srcgrad.vjp(f, X, backend="dask", strict=True)
    assert isinstance(out, da.Array)
    (cot,) = back(da.ones_like(out))
    np.testing.assert_allclose(cot.compute(), 2 / np.cosh(XN) ** 2, rtol=1e-12)
    value, tangent = srcgrad.jvp(f, (X,), (da.ones_like(X),), backend="dask", strict=True)
    assert isinstance(tangent, da.Array)
    np.testing.assert_allclose(tangent.compute(), 2 / np.cosh(XN) ** 2, rtol=1e-12)


def test_without_dask_the_error_names_the_extra(monkeypatch):
    for name in [m for m in sys.modules if m == "dask" or m.startswith("dask.")]:
        monkeypatch.setitem(sys.modules, name, None)
    g = srcgrad.grad(lambda x: np.sum(x ** 2), backend="dask")
    with pytest.raises(MissingBackend, match=r"pip install srcgrad\[dask\]"):
        g(XN)


def test_the_command_line_prints_dask_code(tmp_path, capsys):
    path = tmp_path / "model.py"
    path.write_text("import numpy as np\n\n\ndef f(x):\n    return np.sum(np.exp(x))\n")
    assert cli(["show", f"{path}:f", "--backend", "dask"]) == 0
    out = capsys.readouterr().out
    assert "import dask.array as da" in out and "da.exp(x)" in out


def test_arrays_of_unknown_chunk_sizes_are_refused_not_divided_by_nan():
    def loss(w, X):
        return np.mean(np.tanh(X @ w))
    X, _ = data()
    unknown = X[X[:, 0] > -0.5]                    # shape (nan, 5)
    g = srcgrad.grad(loss, backend="dask", strict=True)
    with pytest.raises(srcgrad.CompileError, match="unknown chunk sizes"):
        g(WN, unknown)
    known = unknown.compute_chunk_sizes()
    want = srcgrad.grad(loss)(WN, XN[XN[:, 0] > -0.5])
    np.testing.assert_allclose(g(WN, known).compute(), want, rtol=1e-12)
    with pytest.warns(srcgrad.FallbackWarning, match="unknown chunk sizes"):
        eager = srcgrad.grad(loss, backend="dask")(WN, X[X[:, 0] > -0.5])
    np.testing.assert_allclose(eager, want, rtol=1e-12)


def test_a_two_dimensional_dask_index_scatters_its_gradient():
    def bag(E, tokens):
        return np.sum(E[tokens] ** 2)
    E = RNG.normal(size=(10, 4))
    tokens = RNG.integers(0, 10, size=(40, 3))
    got = srcgrad.grad(bag, backend="dask", strict=True)(E, da.from_array(tokens, chunks=7))
    np.testing.assert_allclose(got.compute(), srcgrad.grad(bag)(E, tokens), rtol=1e-12)


@pytest.mark.parametrize("loss", [
    lambda X, w: np.mean(X) + np.sum(w),                  # the gradient of X: one number
    lambda X, w: np.sum(np.sum(X, axis=0) * w),           # a row, spread over every row
    lambda X, w: np.sum(X[:, 0]) * w[0],                  # a column
], ids=["mean", "column sums", "a column"])
def test_a_dask_inputs_gradient_is_a_dask_array_chunked_like_it(loss):
    X = da.from_array(XN, chunks=(12, 5))
    got = srcgrad.grad(loss, backend="dask", strict=True)(X, WN)
    assert isinstance(got, da.Array) and got.chunks == X.chunks
    np.testing.assert_allclose(got.compute(), srcgrad.grad(loss)(XN, WN), rtol=1e-12)


def test_numpy_functions_dask_lacks_still_run_on_numpy_parameters():
    def f(w, X):
        return np.inner(w, w) + np.sum(np.sort(w)) + np.sum(X @ w)
    X, _ = data()
    got = srcgrad.grad(f, backend="dask", strict=True)(WN, X)
    np.testing.assert_allclose(dask.compute(got)[0], srcgrad.grad(f)(WN, XN), rtol=1e-12)


def test_writes_through_masks_and_new_axes_of_dask_arrays():
    def clipped(x):
        y = x * 1.0
        y[y < 0.0] = 0.0                   # a mask of Dask values, one value: np.where
        return np.sum(y ** 2)

    def through_a_view(x):
        y = x * 2.0
        v = y[None]
        v[0, 0] = 0.5                      # written through a new axis (a view of y)
        return np.sum(y * x)
    X, _ = data()
    for f in (clipped, through_a_view):
        got = srcgrad.grad(f, backend="dask", strict=True)(X)
        assert isinstance(got, da.Array)
        np.testing.assert_allclose(got.compute(), srcgrad.grad(f)(XN), rtol=1e-12)

    def scaled(x):
        y = x * 1.0
        y[y < 0.0] *= 1.5                  # several values: their positions need a compute
        return np.sum(y)
    with pytest.raises(srcgrad.CompileError, match=r"lazily at .*y\[y < 0.0\] \*= 1.5"):
        srcgrad.grad(scaled, backend="dask", strict=True)(X)


def test_a_numpy_mask_of_a_numpy_array_scatters_into_a_dask_gradient():
    def f(x, y):
        picked = x[x > 0.2]                # NumPy values, then a Dask scale
        return np.sum(np.sin(picked * np.sum(y)))
    Y = da.from_array(YN, chunks=12)
    got = srcgrad.grad(f, backend="dask", strict=True)(XN, Y)
    np.testing.assert_allclose(dask.compute(got)[0], srcgrad.grad(f)(XN, YN), rtol=1e-12)


def test_a_vjp_over_dask_arrays_refuses_what_dask_lacks():
    def f(x, w):
        return np.sort(x * w, axis=0)           # Dask has no sort
    X, _ = data()
    with pytest.raises(srcgrad.CompileError, match="numpy.sort"):
        srcgrad.vjp(f, X, WN, backend="dask", strict=True)


def test_a_numpy_table_indexed_by_dask_integers_stays_lazy(counted):
    def embed(E, tokens, y):
        h = np.tanh(E[tokens])
        return np.mean((np.sum(h, axis=1) - y) ** 2)
    E = RNG.normal(size=(10, 4))
    tokens = RNG.integers(0, 10, size=40)
    step = srcgrad.value_and_grad(embed, backend="dask", strict=True)
    value, grad = step(E, da.from_array(tokens, chunks=10), da.from_array(YN[:40], chunks=10))
    assert counted.calls == 0 and isinstance(value, da.Array) and isinstance(grad, da.Array)
    assert "indexed(E, index)" in step.source
    want = srcgrad.value_and_grad(embed)(E, tokens, YN[:40])
    for got, expected in zip(dask.compute(value, grad), want):
        np.testing.assert_allclose(got, expected, rtol=1e-12)
