"""Specialisations of a compiled transform that reuse the work of its first build.

A transform's generic code is built when it is created.  At a first call it may be built again
for the shapes of the arguments (``facts``: no run-time shape checks, sizes folded) or for
Python floats (``math`` functions).  Neither changes what parsing and lowering produce: only
the emitters read the facts.  So the first build keeps a copy of its IR as lowering left it
and its graph (:class:`Lowered`: reverse mode's stages with one more), and a specialisation
emits from a fresh copy of that (a specialisation's stages after one that copies): the
analysis and the emission run again, parsing, lowering and building the graph do not.

The copy is needed because emitting writes into the IR: fresh names into ``used``, a block's
own names into the block, and the user's static expressions are placed into the generated
tree, which later passes rewrite.  A specialised module is byte-identical to a full rebuild
with the same facts (tests/structure/test_build_cost.py checks it).  The pytree specialisations are
not made here: a pytree's structure changes the lowering itself.

A transform may be called from many threads at once.  What one call learns (the values its
probe reports) stays with that call, and a specialisation is built under the process-wide
build lock (``BUILD_LOCK``), after looking again whether another thread built it meanwhile;
running the built code takes no lock."""

from __future__ import annotations

import ast
import contextvars
import copy
import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import networkx as nx
import numpy as np

from srcgrad.analysis.shapes import has_loops
from srcgrad.build.parts import BUILD_LOCK
from srcgrad.codegen import DEFAULT_BACKEND, array_backend, as_backend
from srcgrad.codegen import backend as backend_named
from srcgrad.errors import CompileError
from srcgrad.ir import Const, Function, Stmt, Var

if TYPE_CHECKING:
    from srcgrad.build.job import Built, Job
    from srcgrad.build.pipeline import Pipeline

__all__ = ["Generic", "Lowered", "ShapeSpecialiser", "build", "copy_ir", "shape_facts",
           "specialise"]


@dataclass(frozen=True)
class Lowered:
    """A function's IR as lowering left it, never emitted from (copy it before use), and
    its graph (a function of the IR alone)."""

    ir: Function
    graph: nx.DiGraph
    wrt: tuple[int, ...]


def copy_ir(fn: Function, memo: dict[int, Any] | None = None) -> Function:
    """A copy of ``fn`` that emitting from cannot change ``fn``: its statements, its blocks
    (branch and loop bodies), the sets, dicts and lists it and they hold, and every ``ast``
    node (a static expression, a default) are copied.  What the code only reads is shared:
    primitives, user functions, constants, pytree shapes, and the user's values in ``free``
    (the generated module binds those very objects)."""
    memo = {} if memo is None else memo
    done = memo.get(id(fn))
    if done is not None:
        return done
    new = copy.copy(fn)
    memo[id(fn)] = new
    for key, value in vars(fn).items():
        if key == "free":
            new.free = dict(value)
        elif key != "body":
            setattr(new, key, _fresh(value, memo))
    new.body = [_copy_stmt(st, memo) for st in fn.body]
    return new


def _copy_stmt(st: Stmt, memo: dict[int, Any]) -> Stmt:
    new = copy.copy(st)
    new.args = list(st.args)
    new.params = {k: v if type(v) in _SHARED else _fresh(v, memo)
                  for k, v in st.params.items()}
    for key, value in vars(st).items():
        if key not in ("args", "params") and type(value) not in _SHARED:
            setattr(new, key, _fresh(value, memo))
    return new


_SHARED = frozenset({str, int, float, bool, type(None), Var, Const})   # never written


def _fresh(value: Any, memo: dict[int, Any]) -> Any:
    """``value`` as a copy holds it: blocks copied, ``ast`` nodes deep-copied, containers
    rebuilt (a set holds names: copied as it is)."""
    kind = type(value)
    if kind in _SHARED:
        return value
    if kind in (set, frozenset):
        return kind(value)
    if kind in (list, tuple):
        return kind(v if type(v) in _SHARED else _fresh(v, memo) for v in value)
    if kind is dict:
        return {k: v if type(v) in _SHARED else _fresh(v, memo) for k, v in value.items()}
    if isinstance(value, Function):
        return copy_ir(value, memo)
    if isinstance(value, ast.AST):
        return copy.deepcopy(value)
    return value


def _keep(job: Job) -> None:
    """Keep a copy of the IR as lowering left it, and its graph, for the specialisations."""
    job.kept = Lowered(copy_ir(job.ir), job.graph, job.wrt)


def _from_kept(job: Job) -> None:
    """Emit from a fresh copy of the kept IR (``job.kept``), with its graph."""
    job.ir, job.graph = copy_ir(job.kept.ir), job.kept.graph


@functools.cache
def _pipelines() -> tuple[Pipeline, Pipeline]:
    """Reverse mode's stages keeping the lowered IR in ``job.kept`` (:func:`_keep` after the
    graph), and a specialisation's stages from a copy of it (:func:`_from_kept` first); made
    at the first build, as ``import srcgrad`` loads no compiler."""
    from srcgrad.build.pipeline import graph
    from srcgrad.build.reverse import REVERSE, SPECIALISED
    return (REVERSE.extended("reverse, kept", _keep, after=graph),
            SPECIALISED.extended("specialised, from the kept IR", _from_kept))


def build(fun: Any, kind: str, wrt: tuple[int, ...], single: bool,
          backend: str = DEFAULT_BACKEND) -> tuple[Built, Lowered]:
    """Reverse mode's generic code of ``fun`` (what ``srcgrad.build.reverse.build`` builds),
    and the lowered IR and graph it was emitted from, kept for the specialisations."""
    from srcgrad.build.job import Job
    job = Job(fun, wrt, as_backend(backend), kind=kind, single=single)
    return _pipelines()[0].build(job), job.kept


def specialise(lowered: Lowered, fun: Any, kind: str, single: bool,
               backend: str = DEFAULT_BACKEND, scalar: bool = False,
               facts: dict[str, tuple] | None = None, guard: tuple | None = None) -> Built:
    """What ``srcgrad.build.reverse.build(fun, kind, lowered.wrt, single, backend,
    scalar=scalar, facts=facts, guard=guard)`` builds, emitted from a copy of the kept IR
    (``fun``: where an internal error is reported)."""
    from srcgrad.build.job import Job
    return _pipelines()[1].build(Job(fun, lowered.wrt, as_backend(backend), kind=kind,
                                     single=single, scalar=scalar, facts=facts, guard=guard,
                                     kept=lowered))


def shape_facts(values: dict[str, Any]) -> dict[str, tuple]:
    """The shape and dtype of every array among a run's local values (NumPy's or CuPy's;
    ``((), float)`` for a Python float): what the code specialised for those shapes is
    built from."""
    facts = {name: (v.shape, v.dtype) for name, v in values.items()
             if isinstance(v, (np.ndarray, np.generic)) or _device_array(v)}
    facts.update({name: ((), float) for name, v in values.items() if type(v) is float})
    return facts


@dataclass(frozen=True)
class Generic:
    """A transform's generic code and what its specialisations are built with."""

    fn: Callable            # the generated function
    namespace: dict         # the names of its module
    free: dict              # the user's values its module reads by name
    source: str
    lowered: Lowered        # the IR it was emitted from, kept
    target: Any             # the user's function: where an internal error is reported
    kind: str
    single: bool
    backend: str            # the backend's name, as the user gave it
    loops: bool             # whether the backend's loops are specialised (numba's: kernels)


class ShapeSpecialiser:
    """The specialisations of one transform's generic code, for the arguments' shapes and for
    Python floats, emitted from the IR its first build kept.

    ``made`` is the transform's table of built functions (shared with it: the key of a
    signature, or ``"floats"``), ``sources`` the table of their sources; ``guard`` is what a
    specialisation's guard calls for arguments it was not made for, and ``watch`` is given
    what each build resolved (the free values to see rebound).  ``latest`` is the newest
    specialisation, which the transform calls first."""

    def __init__(self, code: Generic, made: dict, sources: dict, guard: Callable,
                 watch: Callable) -> None:
        self.code, self.made, self.sources = code, made, sources
        self.guard, self.watch = guard, watch
        self.latest: Callable | None = None
        self._probe: Callable | None = None

    def _build(self, **how: Any) -> Any:
        """The generic code's specialisation ``how`` (scalar, facts, guard), or None where
        it cannot be built (the generic code then serves)."""
        code = self.code
        try:
            built = specialise(code.lowered, code.target, code.kind, code.single, code.backend,
                               **how)
        except CompileError:
            return None
        self.watch(built.resolved)
        return built

    def by_shapes(self, args: tuple) -> Any:
        """The call, by code specialised for the arguments' shapes and dtypes, learnt at a
        first call.

        The first call with a new signature runs the generic code, which also reports the
        shape of every value; the code built from those facts (no run-time shape checks, sizes
        folded into constants, matrix products written out) serves the later calls.  Only
        plain float arrays and Python floats specialise (what the guard can recognise);
        subclasses, NumPy scalars and other dtypes run the generic code.  The probe's reports
        go to this call's own list: calls in other threads probe other shapes meanwhile.
        """
        generic, made = self.code.fn, self.made
        if not all(_plain(a) for a in args):
            return generic(*args)
        key = tuple((a.shape, a.dtype) if type(a) is np.ndarray or _device_array(a)
                    else type(a) for a in args)
        fn = made.get(key)
        if fn is not None:
            return fn(*args)
        if len(made) >= 16 or not self._loops_specialise():
            return generic(*args)
        probe, records = self.probe(), []
        token = _RECORDS.set(records)
        try:
            result, values = probe(*args)
        finally:
            _RECORDS.reset(token)
        facts = backend_named(self.code.backend).loop_facts(shape_facts(values), records)
        guard = {name: facts[name] for name in self.built_params() if name in facts}
        with BUILD_LOCK:
            if key in made or len(made) >= 16:      # built meanwhile, by another thread
                return result
            built = self._build(facts=facts, guard=(guard, self.guard))
            if built is None:
                made[key] = generic                 # the generic code serves them
                return result
            made[key] = self.latest = built.functions[built.name]
            self.sources[repr(key)] = built.source
        return result

    def _loops_specialise(self) -> bool:
        """Whether the transform's loops (if any) may be specialised: only where the
        backend's are (numba's loops become kernels); the others keep their generic code."""
        return self.code.loops or not has_loops(self.code.lowered.ir)

    def probe(self) -> Callable:
        """The generic function, changed to return its local values along with its result;
        its loop bodies report theirs in every iteration (into the calling probe's list,
        :data:`_RECORDS`).  Built once, under the build lock."""
        probe = self._probe
        if probe is not None:
            return probe
        code = self.code
        with BUILD_LOCK:
            if self._probe is None:
                tree = ast.parse(code.source)
                main = next(n for n in tree.body if isinstance(n, ast.FunctionDef)
                            and n.name == code.fn.__name__)
                for node in main.body:
                    if isinstance(node, ast.Return):
                        node.value = ast.Tuple([node.value, ast.Call(
                            ast.Name("locals", ast.Load()), [], [])], ast.Load())
                namespace = dict(code.namespace)
                backend_named(code.backend).probe_loops(tree, main.name, namespace, _RECORDS)
                exec(compile(ast.fix_missing_locations(tree), code.fn.__code__.co_filename,
                             "exec"), namespace)
                self._probe = namespace[main.name]
            return self._probe

    def for_floats(self) -> Callable:
        """The code specialised for Python floats (``math`` functions), built once."""
        fn = self.made.get("floats")
        if fn is not None:
            return fn
        with BUILD_LOCK:
            fn = self.made.get("floats")      # another thread may have built it
            if fn is None:
                guard = {name: ((), float) for name in self.built_params()}
                built = self._build(scalar=True, guard=(guard, self.guard))
                fn = self.code.fn
                if built is not None:
                    fn = self.latest = built.functions[built.name]
                    self.sources["floats"] = built.source
                self.made["floats"] = fn
        return fn

    def built_params(self) -> list[str]:
        """The generated function's parameter names (the user's, possibly renamed)."""
        import inspect
        return list(inspect.signature(self.code.fn).parameters)


_RECORDS: contextvars.ContextVar[list] = contextvars.ContextVar("srcgrad_probe_records")
"""The list the running probe's loop bodies report into: each probing call has its own (in
its thread), so that calls probing other shapes at the same time do not mix their facts."""


def _plain(a: Any) -> bool:
    """Whether a specialisation's guard can recognise this argument's kind."""
    if type(a) is np.ndarray or _device_array(a):
        return a.dtype.kind in "biuf"
    return type(a) is float or not isinstance(a, (np.ndarray, np.generic, float))


def _device_array(a: Any) -> bool:
    """Whether ``a`` is an array of another library whose code is specialised for shapes
    (CuPy's: told without importing CuPy)."""
    owner = array_backend(a)
    return owner is not None and owner.specialises_shapes
