"""Forward mode's pipeline: parse → lower → graph → the forward emitter → module.

``build_jvp`` turns a Python function into the source and the loaded functions of its jvp
with respect to the arguments at ``wrt``: ``f_jvp(*primals, *tangents) -> (value, tangent)``,
one tangent for each differentiated argument.  Callees and the blocks of branches and loops
get jvp functions of the same module, one for each set of arguments that carry tangents.
"""

from __future__ import annotations

import ast
import copy
from typing import Any

from srcgrad.build.parts import ModuleParts, args_of, guarded, where
from srcgrad.codegen.backends.base import Backend, as_backend
from srcgrad.codegen.backends.registry import DEFAULT_BACKEND
from srcgrad.codegen.emit.forward import Forward
from srcgrad.codegen.emit.lists import finish as finish_lists
from srcgrad.codegen.passes.cleanup import eliminate_dead_code
from srcgrad.codegen.emit.symbolic import SymbolicError
from srcgrad.codegen.emit.value_kinds import FLOAT, block_params, function_kinds
from srcgrad.build.reverse import Built, lower_function
from srcgrad.errors import CompileError, Location
from srcgrad.analysis.graph import build_graph
from srcgrad.ir import Function, fresh_name

__all__ = ["build_jvp"]


def build_jvp(fun: Any, wrt: tuple[int, ...], backend: Backend | str = DEFAULT_BACKEND,
              trees: dict[int, Any] | None = None, tangent_only: bool = False) -> Built:
    """Compile the jvp of ``fun`` with respect to the arguments at ``wrt``; ``tangent_only``:
    the function returns the tangent alone (a directional derivative, which reverse mode
    then differentiates: a Hessian-vector product).

    Raises CompileError only: any other exception is a bug of the compiler, reported as an
    internal error at the construct being compiled."""
    return guarded(fun, lambda: _build(fun, wrt, backend, trees, tangent_only))


def _build(fun: Any, wrt: tuple[int, ...], backend: Backend | str, trees: dict[int, Any] | None,
           tangent_only: bool) -> Built:
    ir = lower_function(fun, trees, wrt)
    wrt_names = [ir.params[i] for i in wrt]
    graph = build_graph(ir, wrt_names)      # also refuses a tangent flowing into a shape
    module = _ForwardModule(ir, as_backend(backend).alias, tangent_only)
    try:
        main = module.transform(ir, wrt_names, None)
    except SymbolicError as exc:
        raise CompileError(str(exc), Location(ir.filename, ir.firstline, 0, 0, "", ir.name)) \
            from None
    what = "directional derivative" if tangent_only else "jvp"
    title = f"{what} of {ir.name} ({where(ir)}) with respect to {', '.join(wrt_names)}"
    text, functions = module.finish(ir, title, f"jvp {ir.name}", backend, main)
    return Built(text, graph, functions, main, ir, module.free)


class _ForwardModule(ModuleParts):
    """Collects the jvp functions, helpers and free names of one generated module."""

    def __init__(self, ir: Function, namespace: str, tangent_only: bool = False) -> None:
        super().__init__(ir)
        self.namespace, self.tangent_only = namespace, tangent_only
        self.names: dict[Any, str] = {}
        self.flat: dict[str, int] = {}       # a callee's jvp returning a flat tuple: its items

    def jvp_name(self, callee: Any, positions: frozenset, label: str | None) -> str:
        """The name of the jvp of ``callee`` (a user function, or a block) whose parameters
        at ``positions`` carry tangents, emitting it the first time."""
        key = (callee, positions)
        if key in self.names:
            return self.names[key]
        if callee in self.in_progress and not isinstance(callee, Function):
            raise CompileError(f"{callee.__name__} calls itself (recursion is not compiled "
                               "yet)")
        block = isinstance(callee, Function)
        base = label or (callee.name if block else callee.__name__)
        base = "lambda" if base == "<lambda>" else base
        ir = callee if block else lower_function(callee)
        if not block:
            ir = copy.copy(ir)
        self.taken |= ir.used                       # its names first: the jvp's avoids them
        name = self.names[key] = fresh_name(f"{base}_jvp", self.taken)
        self.in_progress.append(callee)
        self.bind_free(ir)
        flat = block or bool(ir.outputs())         # a tuple: its items, then their tangents
        if flat and not block:
            self.flat[name] = len(ir.outputs())
        self.transform(ir, [p for i, p in enumerate(ir.params) if i in positions], name, flat)
        self.in_progress.pop()
        return name

    def transform(self, ir: Function, active: list[str], name: str | None,
                  block: bool = False) -> str:
        """Emit the jvp of ``ir`` (the module's main function when ``name`` is None)."""
        kinds = block_params(ir)          # a block's, from its branch or loop
        if kinds is None:                 # the top's tangents are of floats; a helper's: any
            kinds = {p: FLOAT for p in active} if name is None else {}
        em = Forward(ir, active, ir.fresh, self.jvp_name, self.namespace,
                     kinds=function_kinds(ir, kinds))
        em.flat_outputs = self.flat.get
        em.tracer.embed = lambda fn, base: self.embedded_name(fn, base, ir)
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
        fn = ast.FunctionDef(name=fname, args=args_of(list(ir.params) + em.tangent_params),
                             body=body, decorator_list=[], returns=None, type_params=[],
                             lineno=0)
        finish_lists(em, fn)
        pure = {st.target for st in ir.body if st.kind == "prim" or _method_lookup(st)} | \
            em.tangent_names | em.tracer.temps
        eliminate_dead_code(fn, pure)
        self.functions.append(fn)
        self.bind_free(ir)
        self.helpers.update(em.tracer.helpers)
        lowering_temps = {st.target for st in ir.body if st.kind == "prim"
                          and st.target not in ir.source_names}
        self.temps |= em.tracer.temps | ir.inline | lowering_temps
        return fname


def _method_lookup(st: Any) -> bool:
    """``acc_sum = acc.sum``: the lowering's name for a method it then calls as a static; left
    out when nothing else reads it (a bound method as a value is not compiled again)."""
    return st.kind == "static" and isinstance(st.expr, ast.Attribute) and isinstance(
        st.expr.value, ast.Name)
