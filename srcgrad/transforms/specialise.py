"""Specialisations of a compiled transform that reuse the work of its first build.

A transform's generic code is built when it is created.  At a first call it may be built again
for the shapes of the arguments (``facts``: no run-time shape checks, sizes folded) or for
Python floats (``math`` functions).  Neither changes what parsing and lowering produce: only
the emitters read the facts.  So the first build keeps a copy of its IR as lowering left it
and its graph (:class:`Lowered`), and a specialisation emits from a fresh copy of that
(``compiler.build_from_ir``): the analysis and the emission run again, parsing, lowering and
building the graph do not.

The copy is needed because emitting writes into the IR: fresh names into ``used``, a block's
own names into the block, and the user's static expressions are placed into the generated
tree, which later passes rewrite.  A specialised module is byte-identical to a full rebuild
with the same facts (tests/test_build_cost.py checks it).  The pytree specialisations are not
made here: a pytree's structure changes the lowering itself.

A transform may be called from many threads at once.  What one call learns (the values its
probe reports) stays with that call, and a specialisation is built under the process-wide
build lock (``BUILD_LOCK``), after looking again whether another thread built it meanwhile;
running the built code takes no lock."""

from __future__ import annotations

import ast
import contextvars
import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import networkx as nx
import numpy as np

from srcgrad.analysis.shapes import has_loops
from srcgrad.build.parts import BUILD_LOCK, guarded
from srcgrad.codegen.backends.numba.loop_sites import (
    RECORD,
    ShapeFacts,
    fact_of,
    instrument,
    merge,
    python_scalars,
)
from srcgrad.codegen.backends.registry import DEFAULT_BACKEND, array_backend
from srcgrad.errors import CompileError
from srcgrad.ir import Const, Function, Stmt, Var

__all__ = ["Lowered", "Specialising", "build", "copy_ir", "shape_facts",
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


def build(fun: Any, kind: str, wrt: tuple[int, ...], single: bool,
          backend: str = DEFAULT_BACKEND) -> tuple[Any, Lowered]:
    """``compiler.build(fun, kind, wrt, single, backend)`` (the generic code), and the
    lowered IR and graph it was emitted from, kept for the specialisations."""
    from srcgrad.build import reverse as compiler  # its stages (and so what patches them)

    def lowered_and_emitted() -> tuple[Any, Lowered]:
        ir = compiler.lower_function(fun, None, wrt)
        reaches: dict = {}
        graph = compiler.build_graph(ir, [ir.params[i] for i in wrt], reaches=reaches)
        kept = Lowered(copy_ir(ir), graph, wrt)
        return compiler.build_from_ir(ir, graph, kind, wrt, single, backend,
                                      reaches=reaches), kept
    return guarded(fun, lowered_and_emitted)


def specialise(lowered: Lowered, fun: Any, kind: str, single: bool,
               backend: str = DEFAULT_BACKEND, scalar: bool = False,
               facts: dict[str, tuple] | None = None, guard: tuple | None = None) -> Any:
    """What ``compiler.build(fun, kind, lowered.wrt, single, backend, scalar=scalar,
    facts=facts, guard=guard)`` builds, emitted from a copy of the kept IR (``fun``: where
    an internal error is reported)."""
    from srcgrad.build import reverse as compiler

    def emitted() -> Any:
        ir = copy_ir(lowered.ir)
        if scalar:
            compiler.only_floats(ir)          # a check: the graph does not change
        return compiler.build_from_ir(ir, lowered.graph, kind, lowered.wrt, single, backend,
                                      scalar, facts, guard)
    return guarded(fun, emitted)


def shape_facts(values: dict[str, Any]) -> dict[str, tuple]:
    """The shape and dtype of every array among a run's local values (NumPy's or CuPy's;
    ``((), float)`` for a Python float): what the code specialised for those shapes is
    built from."""
    facts = {name: (v.shape, v.dtype) for name, v in values.items()
             if isinstance(v, (np.ndarray, np.generic)) or _device_array(v)}
    facts.update({name: ((), float) for name, v in values.items() if type(v) is float})
    return facts


class Specialising:
    """The specialisations of a Transform (mixed into it): for the arguments' shapes and for
    Python floats, emitted from the IR its first build kept (``self._lowered``)."""

    def _specialised_build(self, **how: Any) -> Any:
        """The generic code's specialisation ``how`` (scalar, facts, guard), or None where
        it cannot be built (the generic code then serves)."""
        try:
            built = specialise(self._lowered, self._target, self.kind, self._single,
                               self.backend, **how)
        except CompileError:
            return None
        self._snapshot.watch(built.resolved)
        return built

    def _by_shapes(self, args: tuple) -> Any:
        """Code specialised for the arguments' shapes and dtypes, learnt at a first call.

        The first call with a new signature runs the generic code, which also reports the
        shape of every value; the code built from those facts (no run-time shape checks, sizes
        folded into constants, matrix products written out) serves the later calls.  Only
        plain float arrays and Python floats specialise (what the guard can recognise);
        subclasses, NumPy scalars and other dtypes run the generic code.  The probe's reports
        go to this call's own list: calls in other threads probe other shapes meanwhile.
        """
        if not all(_plain(a) for a in args):
            return self._fn(*args)
        key = tuple((a.shape, a.dtype) if type(a) is np.ndarray or _device_array(a)
                    else type(a) for a in args)
        fn = self._specialised.get(key)
        if fn is not None:
            return fn(*args)
        if len(self._specialised) >= 16 or not self._loops_specialise():
            return self._fn(*args)
        lowered, probe, records = self._lowered, self._probe(), []
        token = _RECORDS.set(records)
        try:
            result, values = probe(*args)
        finally:
            _RECORDS.reset(token)
        facts: dict = shape_facts(values)
        if records:                      # loop bodies reported their locals, each iteration
            facts = ShapeFacts(facts, merge(records))
        guard = {name: facts[name] for name in self._built_params() if name in facts}
        with BUILD_LOCK:
            if key in self._specialised or len(self._specialised) >= 16 \
                    or self._lowered is not lowered:     # built meanwhile, or built anew
                return result
            built = self._specialised_build(facts=facts, guard=(guard, self._redispatch))
            if built is None:
                self._specialised[key] = self._fn          # the generic code serves them
                return result
            self._specialised[key] = self._latest = built.functions[built.name]
            self.sources[repr(key)] = built.source
        return result

    def _loops_specialise(self) -> bool:
        """Whether this transform's loops (if any) may be specialised: only where the
        backend's are (numba's loops become kernels); the others keep their generic code."""
        lowered = getattr(self, "_lowered", None)
        return self._backend.specialises_loops or lowered is None or not has_loops(lowered.ir)

    def _probe(self) -> Callable:
        """The generic function, changed to return its local values along with its result;
        its loop bodies report theirs in every iteration (into the calling probe's list,
        :data:`_RECORDS`).  Built once, under the build lock."""
        probe = self._probe_fn
        if probe is not None:
            return probe
        with BUILD_LOCK:
            if self._probe_fn is None:
                tree = ast.parse(self.source)
                main = next(n for n in tree.body if isinstance(n, ast.FunctionDef)
                            and n.name == self._fn.__name__)
                for node in main.body:
                    if isinstance(node, ast.Return):
                        node.value = ast.Tuple([node.value, ast.Call(
                            ast.Name("locals", ast.Load()), [], [])], ast.Load())
                instrument(tree, main.name)
                namespace = dict(self._namespace)
                namespace[RECORD] = _record
                exec(compile(ast.fix_missing_locations(tree), self._fn.__code__.co_filename,
                             "exec"), namespace)
                self._probe_fn = namespace[main.name]
            return self._probe_fn

    def _scalar_version(self) -> Callable:
        """The code specialised for Python floats (``math`` functions), built once."""
        fn = self._specialised.get("floats")
        if fn is not None:
            return fn
        with BUILD_LOCK:
            fn = self._specialised.get("floats")      # another thread may have built it
            if fn is None:
                guard = {name: ((), float) for name in self._built_params()}
                built = self._specialised_build(scalar=True, guard=(guard, self._redispatch))
                fn = self._fn
                if built is not None:
                    fn = self._latest = built.functions[built.name]
                    self.sources["floats"] = built.source
                self._specialised["floats"] = fn
        return fn

    def _built_params(self) -> list[str]:
        """The generated function's parameter names (the user's, possibly renamed)."""
        import inspect
        return list(inspect.signature(self._fn).parameters)


_RECORDS: contextvars.ContextVar[list] = contextvars.ContextVar("srcgrad_probe_records")
"""The list the running probe's loop bodies report into: each probing call has its own (in
its thread), so that calls probing other shapes at the same time do not mix their facts."""


def _record(body: str, part: str, values: dict[str, Any]) -> None:
    """What an instrumented loop body calls with its locals (``RECORD``)."""
    records = _RECORDS.get(None)
    if records is not None:
        records.append((body, part, {name: fact_of(v) for name, v in values.items()},
                        python_scalars(values)))


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
