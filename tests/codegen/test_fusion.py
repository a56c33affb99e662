"""The fusion pass (codegen/backends/fusion/partition.py) and the plumbing that hands a backend's
kernel emitter
the regions of its shape-specialised modules.

The pass is checked on the specialised main functions of real gradients (caught on their way
through ``Backend.specialise``) and on small hand-written functions for each rule; the
plumbing end to end with a stand-in emitter that writes each region as plain NumPy."""

from __future__ import annotations

import ast
import copy
import cProfile
import dataclasses
import importlib.util
import pstats
import sys

import numpy as np
import pytest

import srcgrad
from srcgrad.codegen import module
from srcgrad.codegen.backends import base as backends
from srcgrad.codegen.backends.base import NUMBA, as_backend
from srcgrad.codegen.backends.fusion.partition import find_regions
from srcgrad.codegen.backends.fusion.regions import (
    Apply,
    KernelEmitter,
    Let,
    Lit,
    Note,
    Reduce,
    Ref,
    Update,
)
from srcgrad.errors import MissingBackend

F64, BOOL, F32 = np.dtype(np.float64), np.dtype(np.bool_), np.dtype(np.float32)


def chain(x):
    y = np.sin(x) * 2.0 + np.exp(-x)
    return np.sum(y * y)


def row_lse(x):
    m = np.max(x, axis=1, keepdims=True)
    z = np.where(x > 0, x, 0.1 * x)
    return np.sum(np.log(np.sum(np.exp(z - np.maximum(m, 0.0)), axis=1)))


def mlp(w, x):
    h = np.tanh(x * 2.0 + 1.0)
    z = h @ w
    return np.sum(np.exp(z) * z)


def _text(e):
    if isinstance(e, Ref):
        return e.name
    if isinstance(e, Lit):
        return repr(e.value)
    return f"np.{e.func.__name__}({', '.join(_text(a) for a in e.args)})"


class NumpyKernels(KernelEmitter):
    """A stand-in KernelEmitter: each region as plain NumPy over its steps."""

    def prelude(self):
        return ["# kernels: NumPy stand-ins"]

    def kernel(self, region):
        lines = [f"def {region.name}({', '.join(v.name for v in region.inputs)}):"]
        for s in region.steps:
            if isinstance(s, Note):
                lines.append(f"    # {s.text}")
            elif isinstance(s, Let):
                lines.append(f"    {s.name} = np.array(np.broadcast_to({_text(s.expr)}, "
                             f"{region.domain}), dtype=np.{s.dtype.name})")
            elif isinstance(s, Reduce):
                lines.append(f"    {s.name} = np.{s.func.__name__}.reduce(np.broadcast_to("
                             f"{_text(s.expr)}, {region.domain}), axis={s.axes}, "
                             f"keepdims={s.keepdims})")
            else:
                lines.append(f"    np.{s.func.__name__}({s.name}, {_text(s.expr)}, "
                             f"out={s.name})")
        lines.append(f"    return ({''.join(v.name + ', ' for v in region.outputs)})")
        return "\n".join(lines)

    def call(self, region):
        call = f"{region.name}({', '.join(v.name for v in region.inputs)})"
        outputs = "".join(v.name + ", " for v in region.outputs)
        return [f"{outputs}= {call}"] if outputs else [call]


def _numba_with(kernels):
    """``backend="numba"`` with another kernel emitter, needing no numba."""
    return dataclasses.replace(NUMBA, kernels=kernels, library=None, extra=None)


@pytest.fixture
def numba_as(monkeypatch):
    """Make ``backend="numba"`` mean the given backend, for this test."""
    def install(backend):
        monkeypatch.setitem(backends._BY_NAME, "numba", backend)
        return backend
    return install


@pytest.fixture
def specialised(monkeypatch, numba_as):
    """``specialised(f, *args)``: the specialised main function of ``grad(f)`` for
    ``args`` as the fusion pass is handed it, its facts and the names taken."""
    seen = []

    def recording(fn, facts, taken, **how):
        seen.append((copy.deepcopy(fn), dict(facts), set(taken)))
        return find_regions(fn, facts, taken, **how)
    monkeypatch.setattr(module, "find_regions", recording)
    numba_as(_numba_with(NumpyKernels()))

    def run(f, *args):
        srcgrad.grad(f, backend="numba", strict=True)(*args)
        return seen[-1]
    return run


def _check(fn, regions):
    """What every region must be: in order, apart, each step reading inputs or earlier
    steps, never a reduction of its own region, no library call inside."""
    last = 0
    for r in regions:
        assert last <= r.start < r.stop <= len(fn.body)
        last = r.stop
        assert not isinstance(r.steps[0], Note) and not isinstance(r.steps[-1], Note)
        inputs = {v.name for v in r.inputs}
        defined, reduced = set(), set()
        for s in r.steps:
            if isinstance(s, Note):
                continue
            reads = _refs(s.expr)
            assert reads <= inputs | defined and not reads & reduced, (s, inputs, defined)
            if isinstance(s, Update):
                assert s.name in defined or s.name in r.updated
            else:
                assert s.name not in inputs
                defined.add(s.name)
                (reduced.add if isinstance(s, Reduce) else reduced.discard)(s.name)
        assert {v.name for v in r.outputs} <= defined and set(r.updated) <= inputs
        for st in fn.body[r.start:r.stop]:
            assert not any(isinstance(n, ast.MatMult) for n in ast.walk(st))


def _refs(e):
    if isinstance(e, Ref):
        return {e.name}
    return set().union(*(_refs(a) for a in e.args)) if isinstance(e, Apply) else set()


def _lets(region):
    return [s.name for s in region.steps if not isinstance(s, Note)]


# ------------------------------------------------------------------ real gradients
def test_an_elementwise_chain_is_one_region(specialised):
    fn, facts, taken = specialised(chain, np.linspace(0.1, 1.0, 7))
    regions = find_regions(fn, facts, taken)
    _check(fn, regions)
    assert len(regions) == 1
    (r,) = regions
    assert r.domain == (7,) and [v.name for v in r.inputs] == ["x"]
    assert [v.name for v in r.outputs] == ["d_x"] and r.updated == ()
    assert all(isinstance(s, (Let, Note)) for s in r.steps) and "y" in _lets(r)
    assert _lets(r)[-1] == "d_x" and sum(isinstance(s, Note) for s in r.steps) >= 1
    assert isinstance(fn.body[r.stop], ast.Return)        # everything up to the return
    assert r.name not in taken and r.name.isidentifier()


def test_a_row_logsumexp_splits_where_a_reduction_is_read(specialised):
    fn, facts, taken = specialised(row_lse, np.random.default_rng(0).normal(
        size=(3, 4)))
    regions = find_regions(fn, facts, taken)
    _check(fn, regions)
    first = regions[0]
    assert first.domain == (3, 4) and isinstance(first.steps[0], Reduce)
    m = first.steps[0]
    assert (m.name, m.func, m.axes, m.keepdims, m.shape) == ("m", np.maximum, (1,), True, (3, 1))
    assert {"mask", "z"} <= set(_lets(first)) and "m" in [v.name for v in first.outputs]
    readers = [r for r in regions[1:] if "m" in {v.name for v in r.inputs}]
    assert readers and readers[0].start >= first.stop     # the reads of m: a region after
    wheres = [s for r in regions for s in r.steps if isinstance(s, Let)
              and isinstance(s.expr, Apply) and s.expr.func is np.where]
    assert wheres                                         # np.where fuses


def test_a_matrix_product_splits_regions_and_an_owned_buffer_is_updated(specialised):
    rng = np.random.default_rng(1)
    fn, facts, taken = specialised(mlp, rng.normal(size=(4, 3)), rng.normal(size=(5, 4)))
    regions = find_regions(fn, facts, taken)
    _check(fn, regions)
    assert [r.domain for r in regions] == [(5, 4), (5, 3)]
    updates = [s for s in regions[1].steps if isinstance(s, Update)]
    assert [u.name for u in updates] == ["d_z"] and updates[0].func is np.add
    assert "d_z" in _lets(regions[1])                     # its buffer: made in the region


def test_float32_does_not_fuse(specialised):
    fn, facts, taken = specialised(chain, np.linspace(0.1, 1.0, 7, dtype=np.float32))
    assert facts["x"][1] == F32 and find_regions(fn, facts, taken) == []


# ------------------------------------------------------------------ rules, by hand
def _fn(source):
    return ast.parse(source).body[0]


def test_an_update_writes_an_earlier_regions_output_it_owns():
    fn = _fn("def f(x, w):\n t = np.exp(x) + 1.0\n s = np.dot(x, w)\n"
             " t += np.sin(x) * s\n u = t * 2.0 - 1.0\n return u")
    facts = {"x": ((4,), F64), "w": ((4,), F64), "t": ((4,), F64), "s": ((), F64),
             "u": ((4,), F64)}
    r1, r2 = find_regions(fn, facts, set())
    assert (r1.start, r1.stop, [v.name for v in r1.outputs]) == (0, 1, ["t"])
    assert (r2.start, r2.stop, r2.updated) == (2, 4, ("t",))
    assert [v.name for v in r2.inputs] == ["x", "s", "t"] and [v.name for v in r2.outputs] == ["u"]
    assert isinstance(r2.steps[0], Update) and r2.steps[0].func is np.add


@pytest.mark.parametrize("between", ["keep = helper(t)", "v = t", "v = t.T"])
def test_an_update_of_a_buffer_passed_on_or_aliased_stays_numpys(between):
    fn = _fn(f"def f(x):\n t = np.exp(x) + 1.0\n {between}\n t += np.sin(x) * 2.0\n"
             " return t")
    facts = {"x": ((4,), F64), "t": ((4,), F64), "v": ((4,), F64)}
    regions = find_regions(fn, facts, set())
    assert [(r.start, r.stop) for r in regions] == [(0, 1)]    # v = t stays an alias


def test_a_name_defined_twice_in_a_region_is_renamed():
    fn = _fn("def f(x):\n y = x * 2.0\n y = y + 1.0\n z = np.sin(y)\n return z")
    facts = {"x": ((3,), F64), "y": ((3,), F64), "z": ((3,), F64)}
    (r,) = find_regions(fn, facts, {"y_1"})
    first, second, third = r.steps
    assert first.name not in ("y", "y_1", "x", "z") and second.name == "y"
    assert second.expr.args[0] == Ref(first.name) and third.expr.args[0] == Ref("y")
    assert [v.name for v in r.outputs] == ["z"]


def test_a_region_never_redefines_a_value_it_reads_from_before_it():
    fn = _fn("def f(x, w):\n y = np.exp(x) * 2.0\n q = y @ w\n y = y * 3.0 + 1.0\n"
             " r = np.exp(y) * 3.0\n return r, q")
    facts = {"x": ((3,), F64), "w": ((3,), F64), "y": ((3,), F64), "q": ((), F64),
             "r": ((3,), F64)}
    regions = find_regions(fn, facts, set())
    assert [(r.start, r.stop) for r in regions] == [(0, 1), (3, 4)]
    assert [v.name for v in regions[1].inputs] == ["y"]


def test_reading_a_reduction_starts_a_new_region_and_shapes_split_too():
    fn = _fn("def f(x, c):\n s = np.sum(x * x, axis=-1, keepdims=True)\n t = np.exp(x) * 2.0\n"
             " u = np.exp(x / s)\n b = c * 2.0 + 1.0\n return u + t + b")
    facts = {"x": ((3, 4), F64), "c": ((3, 1), F64), "s": ((3, 1), F64),
             "t": ((3, 4), F64), "u": ((3, 4), F64), "b": ((3, 1), F64)}
    r1, r2, r3 = find_regions(fn, facts, set())
    assert (r1.start, r1.stop, r2.start, r2.stop) == (0, 2, 2, 3)
    assert r1.steps[0] == Reduce("s", np.add, Apply(np.multiply, (Ref("x"), Ref("x")), F64),
                                 (1,), True, (3, 1), F64)
    assert "s" in [v.name for v in r2.inputs] and r3.domain == (3, 1)


def test_outputs_are_the_values_read_later_or_by_a_nested_function():
    fn = _fn("def f(x):\n a = np.exp(x) * 2.0\n b = a + 1.0\n c = b * b\n"
             " def back(g):\n  return g * a\n return c, back")
    facts = {"x": ((3,), F64), "a": ((3,), F64), "b": ((3,), F64), "c": ((3,), F64)}
    (r,) = find_regions(fn, facts, set())
    assert [v.name for v in r.outputs] == ["a", "c"] and r.stop == 3


def test_comments_inside_a_region_are_notes_and_those_around_it_are_not():
    fn = _fn("def f(x, w):\n __srcgrad_comment__('one')\n a = np.exp(x) * 2.0\n"
             " __srcgrad_comment__('two')\n b = a + 1.0\n __srcgrad_comment__('three')\n"
             " q = b @ w\n return q")
    facts = {"x": ((3,), F64), "w": ((3,), F64), "a": ((3,), F64), "b": ((3,), F64)}
    (r,) = find_regions(fn, facts, set())
    assert (r.start, r.stop) == (1, 4) and r.steps[1] == Note("two")


@pytest.mark.parametrize("statement, facts", [
    ("y = np.exp(x, out=x) + 1.0", {}),                      # a keyword: NumPy's
    ("y = np.matmul(x, x) + 1.0", {}),                       # a gufunc
    ("y = x * (s / 0.5) + 1.0", {}),                         # Python's arithmetic
    ("y = np.exp(v) + 1.0", {"v": ((3,), F32)}),             # float32
    ("y = np.exp(n) + 1.0", {"n": ((3,), np.dtype(np.int64))}),
    ("y = np.exp(x) + 1.0", {"y": ((4,), F64)}),             # facts disagree
    ("y = np.exp(u) + 1.0", {}),                             # unknown name
    ("y = np.exp(x) + 1.0", {"y": ((3,), F32)}),             # another dtype seen
    ("y = np.sum(b, axis=0) + x", {"b": ((3,), BOOL)}),      # an int sum
])
def test_what_is_not_elementwise_over_known_float64_values_is_a_boundary(statement, facts):
    fn = _fn(f"def f(x, s):\n {statement}\n return y")
    assert find_regions(fn, {"x": ((3,), F64), "s": ((), float), **facts}, set()) == []


def test_fills_shapes_and_the_helpers_identities_fuse():
    fn = _fn("def f(x):\n o = np.full(np.shape(x * x), 1.0)\n"
             " d = unbroadcast(o * x, (3, 4))\n e = unreduce(s, shape=(3, 4), axis=1, "
             "keepdims=True) * np.ones_like(x)\n return d, e")
    facts = {"x": ((3, 4), F64), "s": ((3, 1), F64), "o": ((3, 4), F64),
             "d": ((3, 4), F64), "e": ((3, 4), F64)}
    fn.args.args.append(ast.arg("s"))
    (r,) = find_regions(fn, facts, set())
    assert r.steps[0] == Let("o", Lit(1.0), F64) and (r.start, r.stop) == (0, 3)
    assert r.steps[2].expr == Apply(np.multiply, (Ref("s"), Lit(1.0)), F64)


def test_a_backend_that_cannot_spell_a_function_leaves_it_out():
    fn = _fn("def f(x):\n a = np.exp(x) * 2.0\n b = np.sin(a) + 1.0\n c = b * 3.0 - 1.0\n"
             " return c")
    facts = {"x": ((3,), F64), "a": ((3,), F64), "b": ((3,), F64), "c": ((3,), F64)}
    regions = find_regions(fn, facts, {"a_kernel"}, supports=lambda f: f is not np.sin)
    assert [(r.start, r.stop, r.name) for r in regions] == [(0, 1, "a_kernel_1"),
                                                          (2, 3, "c_kernel")]


def test_the_pass_is_linear_in_the_length_of_the_function():
    def calls(n):
        lines = ["def f(x, w):", " a0 = x * 1.0"] + [
            f" a{i} = a{i - 1} * 1.01 + np.sin(a{i - 1})" if i % 7 else f" a{i} = a{i - 1} @ w"
            for i in range(1, n)] + [f" return a{n - 1}"]
        fn = _fn("\n".join(lines))
        facts = {f"a{i}": ((3,), F64) if i % 7 else ((), F64) for i in range(n)}
        facts.update(x=((3,), F64), w=((3,), F64))
        profile = cProfile.Profile()
        profile.enable()
        find_regions(fn, facts, set())
        profile.disable()
        return sum(row[1] for row in pstats.Stats(profile).stats.values())
    counts = [calls(n) for n in (200, 400, 800)]
    assert (counts[2] - counts[1]) / (counts[1] - counts[0]) <= 2.5, counts


# ------------------------------------------------------------------ plumbing
@pytest.mark.parametrize("f, shapes", [
    (chain, [(7,), (3,), (7,), (1,)]),
    (row_lse, [(3, 4), (2, 5), (3, 4)]),
])
def test_kernels_end_to_end_with_a_stand_in_emitter(numba_as, f, shapes):
    numba_as(_numba_with(NumpyKernels()))
    g, ref = srcgrad.grad(f, backend="numba", strict=True), srcgrad.grad(f)
    rng = np.random.default_rng(3)
    for shape in shapes:
        x = rng.normal(size=shape)
        for _ in range(2):                 # the first call probes, the second runs the kernels
            np.testing.assert_allclose(g(x), ref(x), rtol=1e-13, atol=1e-15)
    assert len(g.sources) == len(set(shapes))
    for source in g.sources.values():
        assert "# kernels: NumPy stand-ins" in source and "_kernel(" in source
    assert g.source == ref.source                     # the generic code has no kernels
    first = g._specialised[((shapes[0], F64),)]
    x = rng.normal(size=shapes[1])
    np.testing.assert_allclose(first(x), ref(x))      # its guard hands other shapes on


def test_specialised_modules_are_deterministic(numba_as):
    numba_as(_numba_with(NumpyKernels()))
    texts = []
    for _ in range(2):
        g = srcgrad.grad(row_lse, backend="numba", strict=True)
        g(np.ones((3, 4)))
        texts.append(list(g.sources.values())[-1])
    assert texts[0] == texts[1] and "def m_kernel(x):" in texts[0]


def test_backend_names_and_a_missing_numba(monkeypatch):
    assert as_backend("numba") is NUMBA and NUMBA.alias == "np" and NUMBA.extra == "numba"
    with pytest.raises(ValueError, match="'numba'"):
        srcgrad.grad(chain, backend="numbaa")
    monkeypatch.setitem(sys.modules, "numba", None)
    g = srcgrad.grad(chain, backend="numba")
    assert g.source is not None
    with pytest.raises(MissingBackend, match=r"pip install srcgrad\[numba\]"):
        g(np.ones(3))


@pytest.mark.skipif(importlib.util.find_spec("numba") is None, reason="numba not installed")
def test_numba_kernels_from_their_file():
    g, ref = srcgrad.grad(chain, backend="numba", strict=True), srcgrad.grad(chain)
    x = np.linspace(0.1, 1.0, 9)
    for _ in range(2):
        np.testing.assert_allclose(g(x), ref(x), rtol=1e-13)
    source = list(g.sources.values())[-1]
    assert "@njit" in source and g._latest.__code__.co_filename.endswith(".py")


def root_over(x, y):
    return np.sum(y / x ** 0.5 + y * 2.0)


def test_an_arrays_square_root_power_is_numpys_sqrt(specialised):
    # NumPy computes array ** 0.5 as np.sqrt: (-0.0) ** 0.5 is -0.0 and (-inf) ** 0.5 nan,
    # where pow (a kernel's **) gives 0.0 and inf
    x = np.array([[-np.inf, -0.0, 4.0, -4.0]])
    fn, facts, taken = specialised(root_over, x, np.ones_like(x))
    applies = [e for r in find_regions(fn, facts, taken) for s in r.steps
               if isinstance(s, Let) for e in _applies(s.expr)]
    assert any(e.func is np.sqrt for e in applies)
    assert not any(e.func is np.power and e.args[1] == Lit(0.5) for e in applies)


def _applies(e):
    if isinstance(e, Apply):
        yield e
        for a in e.args:
            yield from _applies(a)


def test_a_scalars_square_root_power_stays_numpys():
    fn = _fn("def f(x, s):\n    y = x * s ** 0.5\n    z = y * y\n    return z\n")
    facts = {"x": ((4,), F64), "s": ((), F64), "y": ((4,), F64), "z": ((4,), F64)}
    for r in find_regions(fn, facts, set()):      # s may be a 0-d array or a NumPy scalar
        assert "y" not in _lets(r)
