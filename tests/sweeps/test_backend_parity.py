"""Every backend passes the same gradient tests: the whole rule table, control
flow, lists and random programs (tests/support/parity_cases.py), each transform called twice (the
second call runs the module specialised for the shapes, with its fused kernels), and every
result equal to the NumPy backend's: structure, type, shape, dtype, and values to rounding.

- ``backend="numba"``: the whole catalogue runs with numba's JIT disabled (numba's
  ``njit`` then hands back the kernel's Python function: the kernels' logic exactly as
  written, without paying about a second of compilation each), and a representative set of
  gradients runs jitted.
- ``backend="cupy"``, with ``cupy`` bound to tests/support/cupy_standin.py, which runs the generated
  CUDA C of each kernel through NumPy.

The kernel calls of each second call are counted, so that these tests cannot pass by
running no kernel at all: a specialised source with kernels must call them, and a floor of
cases must have done so.
"""

from __future__ import annotations

import functools
import hashlib
import pathlib
import sys
import types

import numpy as np
import pytest
from cupy_standin import CUPY, ElementwiseKernel, ReductionKernel
from parity_cases import (
    CATALOGUE,
    Case,
    Outcome,
    compare,
    describe,
    kernels,
    mismatch,
    run,
)

import srcgrad
from srcgrad.ir import GENERATED
from srcgrad.tools.cli import main as cli

KERNEL_FLOORS = {"rule": 45, "random": 5}
"""How many cases of a family must have run kernels, for each backend (numba and CuPy: 53 and
52 of the rule table's 280 primitives, 8 and 7 of 120 random programs, when this was written;
control flow and lists are not specialised: srcgrad.analysis.shapes.shapes_follow_from_inputs)."""


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """Where random programs and the generated modules (SRCGRAD_CACHE_DIR) are written."""
    return tmp_path_factory.mktemp("parity")


@pytest.fixture(scope="module")
def built(folder):
    cases: dict[str, Case] = {}

    def case(name: str) -> Case:
        if name not in cases:
            cases[name] = CATALOGUE[name](folder)
        return cases[name]
    return case


@pytest.fixture(scope="module")
def reference(built):
    """The NumPy backend's outcome of every case."""
    return {name: run(built(name), "numpy") for name in CATALOGUE}


def _counted(kernel, calls: list[int]):
    @functools.wraps(kernel)
    def counted(*args, **kwargs):
        calls[0] += 1
        return kernel(*args, **kwargs)
    return counted


@pytest.fixture(scope="module")
def numba_sweep(built, reference, folder):
    """Every case with ``backend="numba"``, its kernels as Python (numba's DISABLE_JIT, read
    when a kernel is decorated) and their calls counted."""
    numba = pytest.importorskip("numba")
    real, calls, decorated = numba.njit, [0], []

    def njit(*args, **options):
        def decorate(function):
            decorated.append(real(**options)(function))    # under DISABLE_JIT: function
            return _counted(decorated[-1], calls)
        return decorate(args[0]) if args and callable(args[0]) else decorate
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(numba.config, "DISABLE_JIT", True)
        patch.setattr(numba, "njit", njit)
        patch.setenv("SRCGRAD_CACHE_DIR", str(folder))
        outcomes = {name: run(built(name), "numba", lambda: calls[0]) for name in CATALOGUE}
    assert decorated and all(isinstance(k, types.FunctionType) for k in decorated)
    return outcomes


@pytest.fixture(scope="module")
def cupy_sweep(built, reference):
    """Every case with ``backend="cupy"`` and ``cupy`` the NumPy stand-in, its kernels'
    calls counted."""
    calls = [0]
    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(sys.modules, "cupy", CUPY)
        for kind in (ElementwiseKernel, ReductionKernel):
            patch.setattr(kind, "__call__", _counted(kind.__call__, calls))
        return {name: run(built(name), "cupy", lambda: calls[0]) for name in CATALOGUE}


def _check(name: str, got: Outcome, want: Outcome, marker: str) -> None:
    problem = compare(got, want)
    assert problem is None, f"{name}\n{describe(name)}\n{problem}\n{got.source}"
    assert (got.kernels > 0) == (marker in got.source), (
        f"{name}: {got.kernels} kernel calls, and the specialised source "
        f"{'has' if marker in got.source else 'has no'} kernels\n{got.source}")


@pytest.mark.parametrize("name", CATALOGUE)
def test_numba_gradient_equals_numpys(name, numba_sweep, reference):
    _check(name, numba_sweep[name], reference[name], "@njit")


@pytest.mark.parametrize("name", CATALOGUE)
def test_cupy_gradient_equals_numpys(name, cupy_sweep, reference):
    _check(name, cupy_sweep[name], reference[name], "Kernel(")


@pytest.mark.parametrize("backend", ["numba", "cupy"])
def test_kernels_ran_in_enough_cases(backend, request):
    sweep = request.getfixturevalue(f"{backend}_sweep")
    for family, floor in KERNEL_FLOORS.items():
        ran = [name for name, o in sweep.items() if o.kernels and name.startswith(family)]
        assert len(ran) >= floor, (backend, family, ran)


# --- jitted: the kernels compiled by numba ----------------------------------------------------

def chain(x):
    return np.sum(np.sin(x) * np.exp(-x) + x ** 2)


def logsumexp(x):
    m = np.max(x, axis=1, keepdims=True)
    return np.sum(np.log(np.sum(np.exp(x - m), axis=1)) + m[:, 0])


def softmax_cross_entropy(w, x, labels):
    logits = x @ w
    shifted = logits - np.max(logits, axis=1, keepdims=True)
    log_probs = shifted - np.log(np.sum(np.exp(shifted), axis=1, keepdims=True))
    return -np.mean(np.sum(labels * log_probs, axis=1))


def mlp(w1, w2, x):
    h = np.tanh(x @ w1)
    return np.mean((h @ w2 - 1.0) ** 2) + 0.01 * np.sum(np.maximum(w1, 0.0))


def where_maximum(x, y):
    z = np.where(x > 0.2, x * y, np.maximum(x, y) * 0.5)
    return np.sum(z ** 2 + np.minimum(z, 0.1))


def broadcast(col, row):
    return np.sum(np.tanh(col * row + col) ** 2)


def scaled(x, s):
    return np.sum(np.exp(s * x) / (1.0 + x ** 2))


def column_means(x):
    m = np.mean(x ** 2, axis=0)
    return np.sum(np.sqrt(m + 1.0)) + np.max(np.abs(x))


def logistic(w, b, x, y):
    z = x @ w + b
    return np.mean(np.log1p(np.exp(-z)) + (1 - y) * z)


def masked(x):
    mask = x > 0.0
    return np.sum(np.sin(x) * mask * x + np.cos(x) * 0.1)


def loop(h, w, x):
    for _ in range(3):
        h = np.tanh(h * w + x)
    return np.sum(h ** 2)


rng = np.random.default_rng(7)
JITTED = {
    "chain": (chain, (rng.normal(size=1000),)),
    "logsumexp": (logsumexp, (rng.normal(size=(50, 40)),)),
    "softmax_cross_entropy": (softmax_cross_entropy, (
        rng.normal(size=(6, 5)), rng.normal(size=(30, 6)), np.eye(5)[rng.integers(0, 5, 30)])),
    "mlp": (mlp, (rng.normal(size=(8, 16)), rng.normal(size=16), rng.normal(size=(40, 8)))),
    "where_maximum": (where_maximum, (rng.normal(size=(20, 30)), rng.normal(size=30))),
    "broadcast (n, 1)": (broadcast, (rng.normal(size=(30, 1)), rng.normal(size=(1, 20)))),
    "python float": (scaled, (rng.normal(size=(10, 10)), 0.7)),
    "column means": (column_means, (rng.normal(size=(25, 12)),)),
    "logistic": (logistic, (rng.normal(size=4), 0.1, rng.normal(size=(50, 4)),
                            (rng.random(50) > 0.5) * 1.0)),
    "bool mask": (masked, (rng.normal(size=(40, 30)),)),
    "loop": (loop, (rng.normal(size=20), rng.normal(size=20), rng.normal(size=20))),
    "parallel (prange)": (chain, (rng.normal(size=(300, 256)),)),
}


def _dispatchers(source: str) -> list:
    """The numba kernels of the module loaded from ``source`` (kernel_files names it)."""
    module = sys.modules[f"{GENERATED}{hashlib.sha1(source.encode()).hexdigest()[:10]}"]
    return [getattr(module, k.name) for k in kernels(source)]


@pytest.mark.parametrize("name", JITTED)
def test_jitted_numba_gradient_equals_numpys(name, folder, monkeypatch):
    pytest.importorskip("numba")
    monkeypatch.setenv("SRCGRAD_CACHE_DIR", str(folder / "jitted"))
    fn, args = JITTED[name]
    case = Case(fn, list(args), tuple(i for i, a in enumerate(args)
                                      if isinstance(a, (np.ndarray, float))))
    got = run(case, "numba")
    problem = compare(got, run(case, "numpy"))
    assert problem is None, f"{name}\n{problem}\n{got.source}"
    jitted = _dispatchers(got.source) if got.source else []
    assert jitted and "@njit" in got.source, got.source      # a loop too: codegen/loop_kernels
    assert all(k.signatures for k in jitted), got.source           # compiled: they ran
    assert ("prange(" in got.source) == (name == "parallel (prange)")


# --- forward mode and the command line -------------------------------------------------------

def energy(x, y):
    return np.sum(np.sin(x) * y ** 2) + np.sum(np.tanh(x * y))


def field(x):
    return np.sin(x) * x


def test_forward_transforms_take_numba_and_give_numpys_results():
    """jvp and the Jacobians accept ``backend="numba"``: forward mode is not specialised, so
    its code is NumPy's (no kernels); the reverse-mode parts may fuse."""
    x, y = np.linspace(-1.0, 1.0, 5), np.linspace(0.2, 1.4, 5)
    ones, zeros = np.ones(5), np.zeros(5)

    def results(backend):
        j = srcgrad.jvp(energy, backend=backend, strict=True)
        h = srcgrad.hessian(energy, backend=backend, strict=True)
        hvp = srcgrad.jvp(srcgrad.grad(energy, backend=backend), backend=backend, strict=True)
        assert "import numpy as np" in j.source and "cp." not in j.source
        return [j((x, y), (ones, zeros)), srcgrad.jacfwd(field, backend=backend)(x),
                srcgrad.jacrev(field, backend=backend)(x), h(x, y), h(x, y),
                hvp((x, y), (ones, zeros)), hvp((x, y), (ones, zeros))]
    for got, want in zip(results("numba"), results("numpy"), strict=True):
        assert mismatch(got, want) is None, mismatch(got, want)


def test_the_command_line_shows_numbas_code(capsys):
    target = pathlib.Path(__file__).parents[1] / "support" / "snapshot_functions.py"
    assert cli(["show", f"{target}:elementwise_chain", "--backend", "numba"]) == 0
    assert "def elementwise_chain_grad(x):" in capsys.readouterr().out
