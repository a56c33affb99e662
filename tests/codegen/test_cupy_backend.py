"""The CuPy backend without a GPU: the generic source is NumPy's with the namespace
swapped; the code runs with ``cupy`` bound to tests/support/cupy_standin.py, which runs the fused
kernels' CUDA C of the specialised modules through NumPy.  Bound to plain NumPy (no kernel
classes), a specialised module cannot load and the generic code serves, with the same answers.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest
from cupy_standin import CUPY, ElementwiseKernel

import srcgrad


def loss(w, x, y):
    z = np.tanh(x @ w)
    return np.mean((z - y) ** 2) + np.sum(np.maximum(w, 0.0))


rng = np.random.default_rng(2)
W, X, Y = rng.normal(size=3), rng.normal(size=(5, 3)), rng.normal(size=5)


@pytest.fixture
def cupy_is_numpy(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", np)


@pytest.fixture
def cupy_stand_in(monkeypatch):
    """``cupy`` bound to the stand-in; the list of its elementwise kernels' calls."""
    monkeypatch.setitem(sys.modules, "cupy", CUPY)
    calls, run = [], ElementwiseKernel.__call__

    def counted(self, *args, **kwargs):
        calls.append(self.name)
        return run(self, *args, **kwargs)
    monkeypatch.setattr(ElementwiseKernel, "__call__", counted)
    return calls


def test_cupy_source_is_the_numpy_source_with_the_namespace_swapped(cupy_is_numpy):
    numpy_source = srcgrad.grad(loss).source
    cupy_source = srcgrad.grad(loss, backend="cupy").source
    assert "import cupy as cp" in cupy_source and "import numpy" not in cupy_source
    code = [line for line in cupy_source.splitlines() if not line.strip().startswith("#")]
    assert not any("np." in line for line in code)      # comments quote the user's code
    assert cupy_source.replace("cp.", "np.").replace("import cupy as cp",
                                                     "import numpy as np") == numpy_source


def test_cupy_kernels_run_through_the_stand_in(cupy_stand_in):
    g, want = srcgrad.grad(loss, backend="cupy", strict=True), srcgrad.grad(loss)(W, X, Y)
    np.testing.assert_allclose(g(W, X, Y), want, rtol=1e-12)      # generic; learns shapes
    assert not cupy_stand_in
    np.testing.assert_allclose(g(W, X, Y), want, rtol=1e-12)      # specialised, fused
    assert "= cp.ElementwiseKernel(" in list(g.sources.values())[-1] and cupy_stand_in


def test_cupy_bound_to_plain_numpy_runs_the_generic_code(cupy_is_numpy):
    """Without CuPy's kernel classes the specialised module does not load: the generic code
    serves every call, and answers as NumPy's does."""
    g, want = srcgrad.grad(loss, backend="cupy", strict=True), srcgrad.grad(loss)(W, X, Y)
    for _ in range(2):
        np.testing.assert_allclose(g(W, X, Y), want)
    assert g.sources == {}


def test_auto_backend_picks_numpy_for_host_arrays():
    g = srcgrad.grad(loss, backend="auto")
    np.testing.assert_allclose(g(W, X, Y), srcgrad.grad(loss)(W, X, Y))


def test_cupy_backend_without_cupy_says_what_is_missing(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)
    g = srcgrad.grad(loss, backend="cupy")
    assert g.source is not None
    with pytest.raises(RuntimeError, match="needs its array library"):
        g(W, X, Y)


@pytest.mark.skipif(not srcgrad.runtime.device.cuda_available(), reason="no CUDA device")
def test_on_a_real_device():  # pragma: no cover - needs a GPU
    import cupy
    got = srcgrad.grad(loss, backend="auto")(cupy.asarray(W), cupy.asarray(X), cupy.asarray(Y))
    np.testing.assert_allclose(cupy.asnumpy(got), srcgrad.grad(loss)(W, X, Y), rtol=1e-6)


def rnn(h, w, xs):
    hs = [h]
    for x in xs:
        hs.append(np.tanh(hs[-1] * w + x))
    return np.sum(np.concatenate(hs[1:]) ** 2) + sum(np.sum(v) for v in hs)


def test_cupy_lists_and_loops_run_through_the_stand_in(cupy_stand_in):
    xs = rng.normal(size=(4, 3))
    g = srcgrad.grad(rnn, wrt=(0, 1), backend="cupy", strict=True)
    code = [line for line in g.source.splitlines() if not line.strip().startswith("#")]
    assert "cp.concatenate(hs" in g.source and not any("np." in line for line in code)
    want = srcgrad.grad(rnn, wrt=(0, 1))(W, W * 0.5, xs)
    for _ in range(2):                      # (a loop: the generic code serves both calls)
        for got, expected in zip(g(W, W * 0.5, xs), want):
            np.testing.assert_allclose(got, expected, rtol=1e-12)
