"""Reverse mode's build: ``grad``, ``value_and_grad`` and ``vjp`` of a Python function.

Its stages (:data:`REVERSE`) are the pipeline's shared ones around its own: the module it
collects functions into (:class:`ReverseModule`), the analysis and the reverse emitter, and
its title.  A specialisation for the shapes of a first call or for Python floats
(:data:`SPECIALISED`) runs the same stages on a job that holds an IR already lowered and its
graph; callees are transformed into vjp functions of the same module, each once.
"""

from __future__ import annotations

import ast
from typing import Any

import networkx as nx
import numpy as np

from srcgrad.analysis.draws import check_draws
from srcgrad.analysis.floats import only_floats
from srcgrad.analysis.graph import Analysis, BlockUse, analyse, build_graph
from srcgrad.build.job import Built, Job
from srcgrad.build.lowering import lower_function
from srcgrad.build.parts import ModuleParts, args_of, where
from srcgrad.build.pipeline import Pipeline, emitting, finish, graph, lower
from srcgrad.codegen import (
    DEFAULT_BACKEND,
    MATH,
    Backend,
    ReverseEmitter,
    accumulators,
    as_backend,
    assign,
    comment,
    name_expr,
    own_lists,
)
from srcgrad.ir import Function, Var, fresh_name

__all__ = ["Built", "ReverseModule", "build", "REVERSE", "SPECIALISED", "check_scalar"]


def _module(job: Job) -> None:
    """The module the functions are collected into (``math``'s for Python floats), with the
    shape guard of a specialisation."""
    if job.scalar:
        only_floats(job.ir, lower=lower_function)      # callees too
        job.backend = MATH
    job.module = module = ReverseModule(job.ir, job.backend, job.facts)
    module.reaches = job.reaches
    if job.guard is not None:
        module.guard = job.guard[0]
        module.free["dispatch"] = job.guard[1]


def _reverse(job: Job) -> str:
    """The analysis, then the main function and its callees' vjp functions."""
    analysis = analyse(job.ir, job.graph, reaches=job.reaches)
    return job.module.transform(job.ir, job.graph, analysis, job.kind, job.wrt_names,
                                job.single)


def _title(job: Job) -> None:
    ir = job.ir
    job.title = f"{job.kind} of {ir.name} ({where(ir)}) with respect to " \
        f"{', '.join(job.wrt_names)}"
    job.label = f"{job.kind} {ir.name}"
    if job.scalar:
        job.module.free.setdefault("math", __import__("math"))
        job.title += " (specialised for Python floats)"


_EMIT = (_module, emitting(_reverse), _title, finish)

REVERSE = Pipeline("reverse", (lower, graph, *_EMIT))
"""A transform's generic code, from the user's function."""

SPECIALISED = Pipeline("specialised", _EMIT)
"""Its specialisations, from an IR already lowered (the job's ``ir``, which emitting writes
fresh names into) and its graph (``graph``)."""


def build(fun: Any, kind: str, wrt: tuple[int, ...], single: bool,
          backend: Backend | str = DEFAULT_BACKEND,
          trees: dict[int, Any] | None = None, scalar: bool = False,
          facts: dict[str, tuple] | None = None, guard: tuple | None = None) -> Built:
    """Compile one transform of ``fun``; ``trees`` gives the structure of pytree arguments;
    ``scalar`` specialises it for Python floats (``math`` functions, no shapes); ``facts``
    (the shape and dtype of each value, seen at a first call) specialise it for those, and
    ``guard`` = (argument facts, fallback) makes it hand other arguments to the fallback.

    Raises CompileError only: any other exception inside the compiler is a bug of the
    compiler, reported as an internal error at the construct being compiled."""
    return REVERSE.build(Job(fun, wrt, as_backend(backend), kind=kind, single=single,
                             trees=trees, scalar=scalar, facts=facts, guard=guard))


class ReverseModule(ModuleParts):
    """Collects the functions, helpers and free names of one reverse-mode module."""

    def __init__(self, ir: Function, backend: Backend | str, facts: dict | None = None
                 ) -> None:
        super().__init__(ir)
        self.backend = as_backend(backend)
        self.facts = facts
        self.reaches: dict[Function, frozenset[str]] = {}   # the analysis' cache
        self.guard: dict | None = None

    def vjp_name(self, callee: Any, label: str | None = None,
                 inactive: frozenset[int] = frozenset(), use: BlockUse | None = None) -> str:
        """The name of ``callee``'s vjp function, emitting it the first time; ``inactive``:
        the positions of parameters no caller differentiates (a list of data, say), which
        get no gradient (a vjp of its own for each such set); ``use``: how the caller
        differentiates a block."""
        use = use or BlockUse()

        def emit(ir: Function, name: str, block: bool) -> None:
            nondiff = frozenset(ir.nondiff) | use.nondiff | {
                p for i, p in enumerate(ir.params) if i in inactive}
            graph = build_graph(ir, [p for p in ir.params if p not in nondiff], check=False,
                                reaches=self.reaches)
            if not block:                  # a helper's draws (a block's: with its caller's)
                check_draws(ir, {p for p in ir.params if p not in nondiff})
            analysis = analyse(ir, graph, nondiff, use.accumulates, self.reaches)
            self.transform(ir, graph, analysis, "vjp", list(ir.params), False, name=name)
        return self.callee((callee, inactive) if inactive else callee, callee, label, "vjp",
                           emit)

    def transform(self, ir: Function, graph: nx.DiGraph, analysis: Analysis, kind: str,
                  wrt: list[str], single: bool, name: str | None = None) -> str:
        """Emit one function of the module (its main one when ``name`` is None) from the
        analysis of ``ir``."""
        def vjp_name(callee: Any, label: str | None = None) -> str:
            return self.vjp_name(callee, label, analysis.inactive.get(callee, frozenset()),
                                 analysis.blocks.get(callee, BlockUse()))
        em = ReverseEmitter(ir, analysis, ir.fresh, vjp_name, self.backend,
                            facts=self.facts if name is None else None)
        self.embedding(em, ir)
        body = em.primal()
        result = em.operand(ir.result)
        if kind == "vjp":
            body += self._backward(em, ir, analysis, result, top=name is None)
        else:
            if not em.scalar and not em.known_scalar(ir.result):
                body.append(ast.Expr(ast.Call(em.tracer.use_helper("check_scalar", check_scalar),
                                              [result], [])))
            body += em.adjoint(1.0)
            grads = [em.gradient_of(p) for p in wrt]
            value = grads[0] if single else ast.Tuple(grads, ast.Load())
            if kind == "value_and_grad":
                value = ast.Tuple([result, value], ast.Load())
            body.append(ast.Return(value))
        fname = name or fresh_name(f"{ir.name}_{kind}" if ir.name != "<lambda>"
                                   else f"lambda_{kind}", self.taken)
        pure = None if kind == "vjp" else {st.target for st in ir.body if st.kind == "prim"}
        fn = self.keep(em, ir, fname, ir.params, body, pure)
        if self.guard and name is None:
            fn.body.insert(0, _guard(self.guard, ir.params, self.backend.alias))
        self.free.update(ir.free)              # with user functions the emitter bound
        return fname

    def _backward(self, em: Any, ir: Function, analysis: Analysis, result: ast.expr,
                  top: bool) -> list[ast.stmt]:
        """A vjp's ``backward`` closure, and the return of the value with it."""
        seed = ir.fresh(f"d_{ir.result.name}" if hasattr(ir.result, "name") else "d_out")
        totals = accumulators(em, ir, seed)
        if totals:
            totals.insert(0, comment("the loop's running totals for what its body reads"))
        back = totals + em.adjoint(name_expr(seed))
        if top and _returns_list(ir):
            own = em.tracer.use_helper("own_lists", own_lists)
            back.insert(0, assign(seed, ast.Call(own, [name_expr(seed)], [])))
        grads = ast.Tuple([ast.Constant(None) if p in analysis.nondiff else em.gradient_of(p)
                           for p in ir.params], ast.Load())     # None: nobody asks
        backward = ast.FunctionDef(
            name=ir.fresh(f"{ir.name}_backward" if ir.name != "<lambda>" else "backward"),
            args=args_of([seed]), body=back + [ast.Return(grads)], decorator_list=[],
            returns=None, type_params=[], lineno=0)
        return [backward, ast.Return(ast.Tuple([result, name_expr(backward.name)],
                                               ast.Load()))]


def _returns_list(ir: Function) -> bool:
    """Whether the result is a run-time list, or a tuple with one among its items."""
    if not isinstance(ir.result, Var):
        return False
    return ir.result.name in ir.lists or any(name in ir.lists for name in ir.outputs())


def _guard(facts: dict, params: list[str], alias: str = "np") -> ast.stmt:
    """``if`` the arguments are not the shapes this code was specialised for: hand them on
    (``alias``: the array module's name, ``np`` or ``cp``, whose arrays it expects)."""
    tests = []
    for name, (shape, dtype) in facts.items():
        if dtype is float:
            tests.append(f"type({name}) is not float")
        else:
            kind = np.dtype(dtype)            # numeric (api._plain): np.<name> exists
            tests.append(f"type({name}) is not {alias}.ndarray or {name}.shape != {shape!r} "
                         f"or {name}.dtype != {alias}."
                         f"{'bool_' if kind.kind == 'b' else kind.name}")
    if not tests:
        tests = ["False"]
    text = (f"if {' or '.join(tests)}:\n"
            f"    return dispatch({', '.join(params)})")
    guard = ast.parse(text).body[0]
    guard.body.insert(0, comment("specialised for the shapes of a first call; others go on"))
    return guard


def check_scalar(value):
    """grad needs a scalar result; anything else is a vjp."""
    if getattr(value, "shape", ()) != () and getattr(value, "size", 1) != 1:
        raise ValueError(f"grad requires a scalar output, but the function returned shape "
                         f"{value.shape}; use srcgrad.vjp for non-scalar outputs")
