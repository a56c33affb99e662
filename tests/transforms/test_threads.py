"""Transforms called from many threads at once give each call its own exact answer.

A transform learns at its first call with a shape (it runs a probe, then builds code for that
shape), so first calls that race must neither mix what they learn nor build at the same time:
CPython's AST objects may not be built or compiled by two threads at once.  Each test starts
eight threads on one fresh transform behind a barrier (so the first calls race), with Python's
thread switch interval made short (``SWITCH``) so that they interleave often, and compares
each result with the single-threaded one for that thread's arguments.  Raised exceptions and
FallbackWarnings (an internal error the safety net hid) fail the test too.
"""

from __future__ import annotations

import copy
import sys
import threading
import warnings

import numpy as np
import pytest
from program_generator import generate, load

import srcgrad
from srcgrad.errors import FallbackWarning

THREADS = 8
SWITCH = 1e-4          # seconds between thread switches while threads race (Python's: 5e-3)


def rnn(w, xs, h0):
    h = h0
    total = 0.0
    for t in range(xs.shape[0]):
        h = np.tanh(w @ h + xs[t])
        total = total + np.sum(h * h)
    return total


def mlp(w, x, b):
    return np.sum(np.tanh(x @ w + b) ** 2)


def bumpy(x):
    return np.sum(np.sin(x) * x) + np.sum(x ** 3) / 3.0


def rnn_data(n: int, steps: int, seed: int = 0) -> tuple:
    rng = np.random.default_rng(seed)
    return (rng.normal(size=(n, n)) / 3, rng.normal(size=(steps, n)),
            rng.normal(size=n) / 2)


def mlp_data(n: int, seed: int = 0) -> tuple:
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, n + 1)) / 3, rng.normal(size=(n + 2, n)), rng.normal(size=n + 1)


def _same(got, want) -> bool:
    """Equal structure, shapes and values (to rounding) of two results."""
    if isinstance(want, (tuple, list)):
        return type(got) is type(want) and len(got) == len(want) and all(map(_same, got, want))
    if isinstance(want, dict):
        return isinstance(got, dict) and got.keys() == want.keys() and all(
            _same(got[k], want[k]) for k in want)
    if want is None or isinstance(want, type):          # None, or the type raised
        return got is want
    return np.shape(got) == np.shape(want) and np.allclose(got, want, rtol=1e-9, atol=1e-12)


def _shapes(value):
    """A result's structure and shapes (what a message shows of it)."""
    if isinstance(value, (tuple, list)):
        return type(value)(map(_shapes, value))
    return value if value is None or isinstance(value, type) else np.shape(value)


def _outcome(call, args):
    """``call(*args)``'s result, or the type of what it raised."""
    try:
        return call(*args)
    except Exception as exc:  # noqa: BLE001 - compared with the single-threaded outcome
        return type(exc)


def race(call, inputs: list[tuple], calls: int) -> tuple[list, list, list]:
    """Each input's results of ``calls`` calls of ``call``, one thread an input, all starting
    together; what the threads raised; the FallbackWarnings issued meanwhile."""
    barrier = threading.Barrier(len(inputs))
    results: list = [None] * len(inputs)
    errors: list = []

    def work(k: int) -> None:
        try:
            barrier.wait()
            results[k] = [_outcome(call, inputs[k]) for _ in range(calls)]
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            errors.append(exc)

    interval = sys.getswitchinterval()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        filters = list(warnings.filters)
        sys.setswitchinterval(SWITCH)
        try:
            threads = [threading.Thread(target=work, args=(k,)) for k in range(len(inputs))]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        finally:
            sys.setswitchinterval(interval)
        assert warnings.filters == filters, "the calls left the warning filters changed"
    fallbacks = [str(w.message) for w in caught if issubclass(w.category, FallbackWarning)]
    return results, errors, fallbacks


def check_race(make, inputs: list[tuple], calls: int = 6, rounds: int = 1) -> None:
    """``make()`` gives a fresh callable; every thread's results equal those of one called
    from a single thread, in each of ``rounds`` races of a fresh one."""
    reference = make()
    expected = [reference(*args) for args in inputs]
    for _ in range(rounds):
        results, errors, fallbacks = race(make(), inputs, calls)
        assert not errors, errors
        assert not fallbacks, fallbacks
        for k, (got, want) in enumerate(zip(results, expected)):
            wrong = [i for i, g in enumerate(got) if not _same(g, want)]
            assert not wrong, (f"thread {k} (shapes {[np.shape(a) for a in inputs[k]]}): calls "
                               f"{wrong} differ from the single-threaded result: "
                               f"{_shapes(got[wrong[0]])} != {_shapes(want)}")


# --- backend="numba": loop kernels, specialised at each thread's first call ----------------
RNN_SHAPES = [(2, 12), (3, 12)]      # (hidden size, steps): numba compiles two modules
RNN_INPUTS = [rnn_data(*RNN_SHAPES[k % len(RNN_SHAPES)], seed=k) for k in range(THREADS)]


@pytest.fixture(scope="module")
def numba_kernels():
    pytest.importorskip("numba")
    g = srcgrad.grad(rnn, wrt=(0, 1, 2), backend="numba", strict=True)
    for args in RNN_INPUTS[:len(RNN_SHAPES)]:
        g(*args)
        g(*args)                # the specialised module, compiled by numba (cached on disk)
    assert all("_adjoint(" in s for s in g.sources.values()), "the loop kernels did not run"
    assert len(g.sources) == len(RNN_SHAPES)


@pytest.mark.parametrize("kind", ["grad", "value_and_grad"])
def test_numba_loop_kernels_from_racing_threads(kind, numba_kernels):
    transform = getattr(srcgrad, kind)

    def make():
        return transform(rnn, wrt=(0, 1, 2), backend="numba", strict=True)
    check_race(make, RNN_INPUTS, calls=3, rounds=3)


def test_numba_kernels_built_per_thread_shapes():
    """The kernels built while threads race are those of each shape alone."""
    pytest.importorskip("numba")
    alone = srcgrad.grad(rnn, wrt=(0, 1, 2), backend="numba", strict=True)
    for args in RNN_INPUTS[:len(RNN_SHAPES)]:
        alone(*args)
    for _ in range(3):
        g = srcgrad.grad(rnn, wrt=(0, 1, 2), backend="numba", strict=True)
        race(g, RNN_INPUTS, 2)
        assert g.sources == alone.sources


# --- backend="numpy": shape specialisations, the generic code, and the other transforms ---
MLP_INPUTS = [mlp_data(2 + k) for k in range(THREADS)]


@pytest.mark.parametrize("kind", ["grad", "value_and_grad"])
@pytest.mark.parametrize("fun, inputs", [(mlp, MLP_INPUTS), (rnn, RNN_INPUTS)],
                         ids=["specialised", "loops"])
def test_numpy_from_racing_threads(kind, fun, inputs):
    transform = getattr(srcgrad, kind)
    check_race(lambda: transform(fun, wrt=(0, 1, 2), strict=True), inputs, calls=4, rounds=2)


def test_jvp_from_racing_threads():
    inputs = [(args, tuple(np.ones_like(a) for a in args)) for args in MLP_INPUTS]
    check_race(lambda: srcgrad.jvp(mlp, strict=True), inputs, calls=4, rounds=2)


def test_hessian_from_racing_threads():
    inputs = [(np.linspace(-1.0, 1.0, 2 + k),) for k in range(THREADS)]
    check_race(lambda: srcgrad.hessian(bumpy, strict=True), inputs, calls=3, rounds=2)


def test_vjp_from_racing_threads():
    def make():
        f = lambda w, x, b: np.tanh(x @ w + b)   # noqa: E731 - a new function: a new cache entry
        return lambda *args: srcgrad.vjp(f, *args, strict=True)[1](np.ones((args[1].shape[0],
                                                                            args[0].shape[1])))
    check_race(make, MLP_INPUTS, calls=4, rounds=2)


def refused(x):
    return np.sum(np.sin(x) * eval("1.0"))    # noqa: S307 - eval is not compiled


def test_eager_fallbacks_from_racing_threads():
    """Functions the compiler refuses run on the eager engine in every thread at once (which
    shows their module stand-ins of NumPy's functions meanwhile), next to compiled ones of
    the same module: each is right, and none is built again (nor warns again)."""
    inputs = [(np.linspace(-1.0, 1.0, 2 + k),) for k in range(THREADS)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FallbackWarning)
        transforms = [srcgrad.grad(refused), srcgrad.jvp(refused), srcgrad.grad(bumpy)]
        calls = [transforms[0], lambda x: transforms[1]((x,), (np.ones_like(x),)),
                 transforms[2]]
        expected = [[call(*args) for call in calls] for args in inputs]
    compiled = transforms[2]._fn
    results, errors, fallbacks = race(lambda *args: [call(*args) for call in calls], inputs, 4)
    assert not errors, errors
    assert not fallbacks, fallbacks
    for got, want in zip(results, expected):
        assert all(_same(r, want) for r in got), (_shapes(got), _shapes(want))
    assert transforms[2]._fn is compiled, "built again"


def test_dask_from_racing_threads():
    """Dask's graphs are built in every thread at once (each making Dask's warning of a
    function it lacks an error meanwhile): right results, and the warning filters as they
    were (:func:`race` checks them)."""
    da = pytest.importorskip("dask.array")
    plain = MLP_INPUTS
    inputs = [tuple(da.from_array(a, chunks=max(1, a.shape[0] // 2)) for a in args)
              for args in plain]
    g = srcgrad.grad(mlp, wrt=(0, 1, 2), backend="dask", strict=True)
    reference = srcgrad.grad(mlp, wrt=(0, 1, 2), strict=True)
    expected = [reference(*args) for args in plain]
    results, errors, fallbacks = race(lambda *a: g(*a), inputs, 2)
    assert not errors and not fallbacks, (errors, fallbacks)
    import dask
    results = dask.compute(results, scheduler="sync")[0]     # computed here, lazy there
    for got, want in zip(results, expected):
        assert all(_same(r, want) for r in got), (_shapes(got), _shapes(want))


# --- random programs, each called from several threads at once -----------------------------
@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tmp_path_factory.mktemp("thread_programs")


@pytest.mark.parametrize("seed", range(8))
def test_random_programs_from_racing_threads(seed, folder):
    program = generate(seed)
    fn = load(program, folder)
    saved = copy.deepcopy(program.args)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FallbackWarning)
        want = _outcome(srcgrad.grad(fn, wrt=program.wrt), copy.deepcopy(saved))
        inputs = [tuple(copy.deepcopy(saved)) for _ in range(4)]
        results, errors, _ = race(srcgrad.grad(fn, wrt=program.wrt), inputs, 3)
    assert not errors, errors
    for args, got in zip(inputs, results):
        assert all(_same(g, want) for g in got), (program.source, got, want)
        assert all(_unchanged(a, b) for a, b in zip(args, saved)), "an argument changed"


class _Litter:
    """Cyclic garbage whose finalizer runs Python code: a collection during a build then
    lets another thread run (what made concurrent builds fail in CPython's ast module)."""

    def __init__(self) -> None:
        self.me = self

    def __del__(self) -> None:
        sum(range(20))


def test_building_from_racing_threads(folder):
    """Threads that each build transforms of other random programs at the same time (the
    builds parse, lower and compile): each gets what a single thread gets."""
    programs = [generate(seed) for seed in range(20, 20 + THREADS)]
    functions = [load(program, folder) for program in programs]

    def build_and_call(k: int):
        program = programs[k]
        litter = [_Litter() for _ in range(2000)]
        del litter
        return (_outcome(srcgrad.grad(functions[k], wrt=program.wrt),
                         copy.deepcopy(program.args)),
                _outcome(lambda *a: srcgrad.jvp(functions[k])(a, a),
                         copy.deepcopy(program.args)))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FallbackWarning)
        want = [build_and_call(k) for k in range(THREADS)]
    for _ in range(2):
        results, errors, _ = race(build_and_call, [(k,) for k in range(THREADS)], 1)
        assert not errors, errors
        for k, (got, expected) in enumerate(zip(results, want)):
            assert _same(got[0], expected), (programs[k].source, got, expected)


def _unchanged(a, b) -> bool:
    if isinstance(b, dict):
        return a.keys() == b.keys() and all(_unchanged(a[k], b[k]) for k in b)
    if isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(map(_unchanged, a, b))
    return type(a) is type(b) and np.array_equal(a, b)
