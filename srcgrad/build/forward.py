"""Forward mode's build: the jvp of a Python function, or its directional derivative alone
(the tangent, which reverse mode then differentiates for a Hessian-vector product or a
Hessian's column).

``build_jvp`` runs :data:`FORWARD`: the pipeline's shared stages around forward mode's own
module (:class:`ForwardModule`) and its title.  The result is
``f_jvp(*primals, *tangents) -> (value, tangent)``, one tangent for each differentiated
argument; callees and the blocks of branches and loops get jvp functions of the same module,
one for each set of arguments that carry tangents.
"""

from __future__ import annotations

import ast
import copy
from typing import Any

from srcgrad.analysis.draws import check_draws
from srcgrad.build.job import Built, Job
from srcgrad.build.parts import ModuleParts, where
from srcgrad.build.pipeline import Pipeline, emitting, finish, graph, lower
from srcgrad.codegen import (
    DEFAULT_BACKEND,
    FLOAT,
    Backend,
    ForwardEmitter,
    as_backend,
    block_params,
    function_kinds,
)
from srcgrad.ir import Function, fresh_name

__all__ = ["build_jvp", "FORWARD", "ForwardModule"]


def _module(job: Job) -> None:
    job.module = ForwardModule(job.ir, job.backend.alias, job.tangent_only)


def _forward(job: Job) -> str:
    """The main jvp function and its callees'."""
    return job.module.transform(job.ir, job.wrt_names, None)


def _title(job: Job) -> None:
    ir = job.ir
    what = "directional derivative" if job.tangent_only else "jvp"
    job.title = f"{what} of {ir.name} ({where(ir)}) with respect to {', '.join(job.wrt_names)}"
    job.label = f"jvp {ir.name}"


FORWARD = Pipeline("forward", (lower, graph, _module, emitting(_forward), _title, finish))
"""A jvp (or a directional derivative), from the user's function."""


def build_jvp(fun: Any, wrt: tuple[int, ...], backend: Backend | str = DEFAULT_BACKEND,
              trees: dict[int, Any] | None = None, tangent_only: bool = False) -> Built:
    """Compile the jvp of ``fun`` with respect to the arguments at ``wrt``; ``tangent_only``:
    the function returns the tangent alone (a directional derivative, which reverse mode
    then differentiates: a Hessian-vector product).

    Raises CompileError only: any other exception is a bug of the compiler, reported as an
    internal error at the construct being compiled."""
    return FORWARD.build(Job(fun, wrt, as_backend(backend), trees=trees,
                             tangent_only=tangent_only))


class ForwardModule(ModuleParts):
    """Collects the jvp functions, helpers and free names of one generated module."""

    def __init__(self, ir: Function, namespace: str, tangent_only: bool = False) -> None:
        super().__init__(ir)
        self.namespace, self.tangent_only = namespace, tangent_only
        self.flat: dict[str, int] = {}       # a callee's jvp returning a flat tuple: its items

    def lower(self, callee: Any) -> Function:
        return copy.copy(super().lower(callee))

    def jvp_name(self, callee: Any, positions: frozenset, label: str | None) -> str:
        """The name of the jvp of ``callee`` (a user function, or a block) whose parameters
        at ``positions`` carry tangents, emitting it the first time."""
        def emit(ir: Function, name: str, block: bool) -> None:
            flat = block or bool(ir.outputs())     # a tuple: its items, then their tangents
            if not block:                  # a helper's draws (a block's: with its caller's)
                check_draws(ir, {p for i, p in enumerate(ir.params) if i in positions})
            if flat and not block:
                self.flat[name] = len(ir.outputs())
            self.transform(ir, [p for i, p in enumerate(ir.params) if i in positions], name,
                           flat)
        return self.callee((callee, positions), callee, label, "jvp", emit)

    def transform(self, ir: Function, active: list[str], name: str | None,
                  block: bool = False) -> str:
        """Emit the jvp of ``ir`` (the module's main function when ``name`` is None)."""
        kinds = block_params(ir)          # a block's, from its branch or loop
        if kinds is None:                 # the top's tangents are of floats; a helper's: any
            kinds = {p: FLOAT for p in active} if name is None else {}
        em = ForwardEmitter(ir, active, ir.fresh, self.jvp_name, self.namespace,
                            kinds=function_kinds(ir, kinds))
        em.flat_outputs = self.flat.get
        self.embedding(em, ir)
        body = em.body()
        top = name is None
        if block:                                 # outputs, then their tangents: one tuple
            result = em.flat_result()
        else:
            result = ast.Tuple([em.operand(ir.result), em.result_tangent(top)], ast.Load())
            if top and self.tangent_only:
                result = result.elts[1]
        body.append(ast.Return(result))
        base = ir.name if ir.name != "<lambda>" else "lambda"
        fname = name or fresh_name(f"{base}_{'tangent' if self.tangent_only else 'jvp'}",
                                   self.taken)
        pure = {st.target for st in ir.body if st.kind == "prim" or _method_lookup(st)} | \
            em.tangent_names | em.tracer.temps
        self.keep(em, ir, fname, list(ir.params) + em.tangent_params, body, pure)
        self.bind_free(ir)
        return fname


def _method_lookup(st: Any) -> bool:
    """``acc_sum = acc.sum``: the lowering's name for a method it then calls as a static; left
    out when nothing else reads it (a bound method as a value is not compiled again)."""
    return st.kind == "static" and isinstance(st.expr, ast.Attribute) and isinstance(
        st.expr.value, ast.Name)
