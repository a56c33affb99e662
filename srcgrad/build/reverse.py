"""The pipeline, one stage per module: parse → lower → graph → emit → module.

``build`` turns a Python function into the source and the loaded functions of one transform
(``grad``, ``value_and_grad`` or ``vjp``); callees are transformed into vjp functions of the
same module, each once.
"""

from __future__ import annotations

import ast
import builtins
import importlib.util
import pathlib
import sys
from dataclasses import dataclass, field
from typing import Any

import networkx as nx
import numpy as np

from srcgrad.build.parts import ModuleParts, args_of, guarded, where
from srcgrad.codegen.emit import support
from srcgrad.codegen.backends.base import MATH, Backend, as_backend
from srcgrad.codegen.backends.registry import BOUND_NAMES, DEFAULT_BACKEND
from srcgrad.codegen.emit.control import accumulators
from srcgrad.codegen.emit.lists import finish as finish_lists
from srcgrad.codegen.passes.cleanup import eliminate_dead_code
from srcgrad.codegen.emit.primal import comment
from srcgrad.codegen.emit.reverse import Emitter
from srcgrad.codegen.emit.symbolic import SymbolicError, assign
from srcgrad.codegen.emit.symbolic import name_expr as _name
from srcgrad.errors import CompileError, Location
from srcgrad.analysis.floats import only_floats
from srcgrad.frontend.parse import Env, parse_function
from srcgrad.analysis.graph import Analysis, BlockUse, analyse, build_graph
from srcgrad.ir import Function, Var, fresh_name
from srcgrad.frontend.lower import lower
from srcgrad.runtime import rules as _rules
from srcgrad.runtime.rules.primitives import PRIMITIVES

__all__ = ["Built", "build", "lower_function", "RESERVED"]



def _defined_in(module: str) -> set[str]:
    """The top-level functions of a module of helper sources, read from its text (importing
    it would import its library, which may be missing)."""
    spec = importlib.util.find_spec(module)
    tree = ast.parse(pathlib.Path(spec.origin).read_text(encoding="utf-8"))
    return {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}


RESERVED = frozenset(
    BOUND_NAMES | {"njit", "prange", "_", "check_scalar", "dispatch"} | set(dir(builtins))
    | {p.fn.__name__ for p in PRIMITIVES.values()}
    | {name for module in (_rules, support) for name in dir(module) if not name.startswith("__")}
    | {name for module in list(sys.modules.values())          # every @helper a rule
       if (getattr(module, "__name__", "") or "").startswith("srcgrad.runtime.rules.")
       for name, value in vars(module).items() if hasattr(value, "helper_source")}
    | _defined_in("srcgrad.codegen.backends.dask.helpers") | _defined_in("srcgrad.codegen.backends.numba.libm"))
"""Every name a generated module binds or reads for itself (its array modules, helpers,
builtins, kernels' helpers, the shape guard's ``dispatch``): a user's variable or global of
one of these names is given another name in the generated code, so it can never shadow
them."""


@dataclass
class Built:
    source: str
    graph: nx.DiGraph
    functions: dict[str, Any]
    name: str
    ir: Function
    free: dict[str, Any]
    resolved: list = field(default_factory=list)   # attributes bound when building


def lower_function(fun: Any, trees: dict[int, Any] | None = None,
                   wrt: tuple[int, ...] | None = None) -> Function:
    """Parse and lower ``fun`` (raises CompileError for what the compiler cannot)."""
    src = parse_function(fun)
    return lower(src, Env(fun), set(RESERVED), trees, wrt)


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
    return guarded(fun, lambda: _build(fun, kind, wrt, single, backend, trees, scalar,
                                       facts, guard))


def _build(fun: Any, kind: str, wrt: tuple[int, ...], single: bool, backend: str,
           trees: dict[int, Any] | None, scalar: bool, facts: dict[str, tuple] | None,
           guard: tuple | None) -> Built:
    ir = lower_function(fun, trees, wrt)
    reaches: dict[Function, frozenset[str]] = {}
    graph = build_graph(ir, [ir.params[i] for i in wrt], reaches=reaches)
    return build_from_ir(ir, graph, kind, wrt, single, backend, scalar, facts, guard, reaches)


def build_from_ir(ir: Function, graph: nx.DiGraph, kind: str, wrt: tuple[int, ...],
                  single: bool, backend: Backend | str, scalar: bool = False,
                  facts: dict[str, tuple] | None = None, guard: tuple | None = None,
                  reaches: dict[Function, frozenset[str]] | None = None) -> Built:
    """The module of one transform of the lowered ``ir``, from its graph (``build`` after
    lowering): analysis, the emitter, the module's text, loaded.  Emitting writes fresh
    names into ``ir``; ``reaches`` is the analysis' cache of the graph's build."""
    if scalar:
        only_floats(ir, lower=lower_function)      # callees too
    wrt_names = [ir.params[i] for i in wrt]
    module = _ModuleBuilder(ir, MATH if scalar else as_backend(backend), facts)
    module.reaches = {} if reaches is None else reaches
    if guard is not None:
        module.guard = guard[0]
        module.free["dispatch"] = guard[1]
    try:
        analysis = analyse(ir, graph, reaches=module.reaches)
        main = module.transform(ir, graph, analysis, kind, wrt_names, single)
    except SymbolicError as exc:
        raise CompileError(str(exc), Location(ir.filename, ir.firstline, 0, 0, "", ir.name)) \
            from None
    title = (f"{kind} of {ir.name} ({where(ir)}) with respect to "
             f"{', '.join(wrt_names)}")
    if scalar:
        module.free.setdefault("math", __import__("math"))
        title += " (specialised for Python floats)"
    text, functions = module.finish(ir, title, f"{kind} {ir.name}", module.backend, main,
                                    facts)
    return Built(text, graph, functions, main, ir, module.free)


class _ModuleBuilder(ModuleParts):
    """Collects the functions, helpers and free names of one generated module."""

    def __init__(self, ir: Function, backend: Backend | str, facts: dict | None = None
                 ) -> None:
        super().__init__(ir)
        self.backend = as_backend(backend)
        self.facts = facts
        self.reaches: dict[Function, frozenset[str]] = {}   # the analysis' cache
        self.guard: dict | None = None
        self.vjp_names: dict[Any, str] = {}

    def fresh_global(self, base: str) -> str:
        return fresh_name(base, self.taken)

    def vjp_name(self, callee: Any, label: str | None = None,
                 inactive: frozenset[int] = frozenset(), use: BlockUse | None = None) -> str:
        """The name of ``callee``'s vjp function, emitting it the first time; ``inactive``:
        the positions of parameters no caller differentiates (a list of data, say), which
        get no gradient (a vjp of its own for each such set); ``use``: how the caller
        differentiates a block."""
        key = (callee, inactive) if inactive else callee
        if key in self.vjp_names:
            return self.vjp_names[key]
        if callee in self.in_progress:
            raise CompileError(f"{callee.__name__} calls itself (recursion is not compiled "
                               "yet)")
        block = isinstance(callee, Function)           # a branch or loop body
        base = label or callee.name if block else label or (
            callee.__name__ if callee.__name__ != "<lambda>" else "lambda")
        ir = callee if block else lower_function(callee)
        self.taken |= ir.used                       # its names first: the vjp's avoids them
        name = self.vjp_names[key] = self.fresh_global(f"{base}_vjp")
        self.in_progress.append(callee)
        use = use or BlockUse()
        nondiff = frozenset(ir.nondiff) | use.nondiff | {
            p for i, p in enumerate(ir.params) if i in inactive}
        graph = build_graph(ir, [p for p in ir.params if p not in nondiff], check=False,
                            reaches=self.reaches)
        self.bind_free(ir)
        analysis = analyse(ir, graph, nondiff, use.accumulates, self.reaches)
        self.transform(ir, graph, analysis, "vjp", list(ir.params), False, name=name)
        self.in_progress.pop()
        return name

    def transform(self, ir: Function, graph: nx.DiGraph, analysis: Analysis, kind: str,
                  wrt: list[str], single: bool, name: str | None = None) -> str:
        """Emit one function of the module (its main one when ``name`` is None) from the
        analysis of ``ir``."""
        def vjp_name(callee: Any, label: str | None = None) -> str:
            return self.vjp_name(callee, label, analysis.inactive.get(callee, frozenset()),
                                 analysis.blocks.get(callee, BlockUse()))
        em = Emitter(ir, analysis, ir.fresh, vjp_name, self.backend,
                     facts=self.facts if name is None else None)
        em.tracer.embed = lambda fn, base: self.embedded_name(fn, base, ir)
        body = em.primal()
        result = em.operand(ir.result)
        if kind == "vjp":
            seed = ir.fresh(f"d_{ir.result.name}" if hasattr(ir.result, "name") else "d_out")
            totals = accumulators(em, ir, seed)
            if totals:
                totals.insert(0, comment("the loop's running totals for what its body reads"))
            back = totals + em.adjoint(_name(seed))
            if name is None and _returns_list(ir):
                own = em.tracer.use_helper("own_lists", support.own_lists)
                back.insert(0, assign(seed, ast.Call(own, [_name(seed)], [])))
            grads = ast.Tuple([ast.Constant(None) if p in analysis.nondiff else em.gradient_of(p)
                               for p in ir.params], ast.Load())     # None: nobody asks
            backward = ast.FunctionDef(
                name=ir.fresh(f"{ir.name}_backward" if ir.name != "<lambda>" else "backward"),
                args=args_of([seed]), body=back + [ast.Return(grads)], decorator_list=[],
                returns=None, type_params=[], lineno=0)
            body += [backward, ast.Return(ast.Tuple([result, _name(backward.name)],
                                                    ast.Load()))]
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
        fname = name or self.fresh_global(f"{ir.name}_{kind}" if ir.name != "<lambda>"
                                          else f"lambda_{kind}")
        fn = ast.FunctionDef(name=fname, args=args_of(ir.params), body=body, decorator_list=[],
                             returns=None, type_params=[], lineno=0)
        finish_lists(em, fn)
        if kind != "vjp":
            eliminate_dead_code(fn, {st.target for st in ir.body if st.kind == "prim"})
        if self.guard and name is None:
            fn.body.insert(0, _guard(self.guard, ir.params, self.backend.alias))
        self.functions.append(fn)
        self.free.update(ir.free)              # with user functions the emitter bound
        self.helpers.update(em.tracer.helpers)
        lowering_temps = {st.target for st in ir.body if st.kind == "prim"
                          and st.target not in ir.source_names}
        self.temps |= em.tracer.temps | ir.inline | lowering_temps
        return fname


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

