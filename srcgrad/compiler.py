"""The pipeline, one stage per module: parse → lower → graph → emit → module.

``build`` turns a Python function into the source and the loaded functions of one transform
(``grad``, ``value_and_grad`` or ``vjp``); callees are transformed into vjp functions of the
same module, each once.
"""

from __future__ import annotations

import ast
import builtins
import copy
import inspect
import linecache
from dataclasses import dataclass, field
from typing import Any

import networkx as nx
import numpy as np

from srcgrad import generated
from srcgrad.codegen import support
from srcgrad.codegen.control import accumulators
from srcgrad.codegen.lists import finish as finish_lists
from srcgrad.codegen.module import load, render
from srcgrad.codegen.passes import eliminate_dead_code
from srcgrad.codegen.reverse import Emitter, _name, comment
from srcgrad.codegen.symbolic import SymbolicError, assign
from srcgrad.errors import CompileError, Location, MissingBackend
from srcgrad.floats import only_floats
from srcgrad.freshness import RESOLVED
from srcgrad.frontend import Env, parse_function, with_recursion_room
from srcgrad.graph import active_names, build_graph
from srcgrad.ir import Function, Var, fresh_name
from srcgrad.lower import lower
from srcgrad.runtime import rules as _rules
from srcgrad.runtime.primitives import PRIMITIVES

__all__ = ["Built", "build", "lower_function", "RESERVED"]

RESERVED = ({"np", "cp", "math", "_"} | set(dir(builtins))
            | {p.fn.__name__ for p in PRIMITIVES.values()}
            | {name for module in (_rules, support) for name in dir(module)
               if not name.startswith("__")}
            | {"check_scalar"})


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


@with_recursion_room
def build(fun: Any, kind: str, wrt: tuple[int, ...], single: bool, backend: str = "numpy",
          trees: dict[int, Any] | None = None, scalar: bool = False,
          facts: dict[str, tuple] | None = None, guard: tuple | None = None) -> Built:
    """Compile one transform of ``fun``; ``trees`` gives the structure of pytree arguments;
    ``scalar`` specialises it for Python floats (``math`` functions, no shapes); ``facts``
    (the shape and dtype of each value, seen at a first call) specialise it for those, and
    ``guard`` = (argument facts, fallback) makes it hand other arguments to the fallback.

    Raises CompileError only: any other exception inside the compiler is a bug of the
    compiler, reported as an internal error at the construct being compiled."""
    token = RESOLVED.set([])
    try:
        built = _build(fun, kind, wrt, single, backend, trees, scalar, facts, guard)
        built.resolved = RESOLVED.get()
        return built
    except (CompileError, MemoryError):
        raise
    except RecursionError:
        raise CompileError("the function is nested too deeply for the compiler (Python's "
                           "recursion limit was reached)", _failed_at(fun, None)) from None
    except Exception as exc:
        raise CompileError(f"internal error of the compiler ({type(exc).__name__}: {exc}); "
                           "please report it", _failed_at(fun, exc.__traceback__)) from exc
    finally:
        RESOLVED.reset(token)


def _failed_at(fun: Any, tb: Any) -> Location | None:
    """Where the compiler was when it failed: the statement being lowered or emitted (the
    innermost frame that knows one), else the function's first line."""
    from srcgrad.ir import Stmt
    frames = []
    while tb is not None:
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    for frame in reversed(frames):
        owner = frame.f_locals.get("self")
        src = getattr(owner, "src", None)
        if src is not None and hasattr(src, "filename") and getattr(owner, "line", 0):
            return Location(src.filename, owner.line, 0, 0, src.line(owner.line), src.name)
        st, fn = frame.f_locals.get("st"), getattr(owner, "fn", None)
        if isinstance(st, Stmt) and st.line and isinstance(fn, Function):
            line = linecache.getline(fn.filename, st.line)
            return Location(fn.filename, st.line, 0, 0, line, fn.name)
    code = getattr(fun, "__code__", None)
    if code is None:
        return None
    line = linecache.getline(code.co_filename, code.co_firstlineno)
    return Location(code.co_filename, code.co_firstlineno, 0, 0, line,
                    getattr(fun, "__name__", "?"))


def _build(fun: Any, kind: str, wrt: tuple[int, ...], single: bool, backend: str,
           trees: dict[int, Any] | None, scalar: bool, facts: dict[str, tuple] | None,
           guard: tuple | None) -> Built:
    ir = lower_function(fun, trees, wrt)
    if scalar:
        only_floats(ir)
    wrt_names = [ir.params[i] for i in wrt]
    graph = build_graph(ir, wrt_names)
    namespace = "math" if scalar else "np" if backend == "numpy" else "cp"
    module = _ModuleBuilder(ir, namespace, facts)
    if guard is not None:
        module.guard = guard[0]
        module.free["dispatch"] = guard[1]
    try:
        main = module.transform(ir, graph, kind, wrt_names, single)
    except SymbolicError as exc:
        raise CompileError(str(exc), Location(ir.filename, ir.firstline, 0, 0, "", ir.name)) \
            from None
    title = (f"{kind} of {ir.name} ({_where(ir)}) with respect to "
             f"{', '.join(wrt_names)}")
    if scalar:
        module.free.setdefault("math", __import__("math"))
        title += " (specialised for Python floats)"
    module.free, copies = generated.split_free(module.free, module.functions,
                                               module.embedded_free)
    module.helpers.update(copies)
    try:
        text = render(module.functions, module.helpers, module.temps, title, module.free,
                      backend)
    except ValueError as exc:             # two embedded functions of one name
        raise CompileError(str(exc), Location(ir.filename, ir.firstline, 0, 0, "", ir.name)) \
            from None
    try:
        functions = load(text, f"{kind} {ir.name}", module.free, backend)
        generated.register(functions, module.helpers, module.free)
    except ImportError as exc:             # backend="cupy" without CuPy: the source stands
        functions = {main: _missing_backend(backend, exc)}
    return Built(text, graph, functions, main, ir, module.free)


def _missing_backend(backend: str, exc: Exception) -> Any:
    def unavailable(*args: Any) -> Any:
        raise MissingBackend(f"backend={backend!r} needs its array library: {exc} "
                           "(pip install srcgrad[cuda])")
    return unavailable


def _where(ir: Function) -> str:
    """``file:line`` of the function; for a module srcgrad generated (a transform of a
    transform), the user's line it came from."""
    from srcgrad.codegen.primal import located, short_filename
    if not ir.filename.startswith("<srcgrad "):
        return f"{short_filename(ir.filename)}:{ir.firstline}"
    return f"generated from {located(ir.filename, ir.firstline + 1, '')[1].split('  ')[0]}"


class _ModuleBuilder:
    """Collects the functions, helpers and free names of one generated module."""

    def __init__(self, ir: Function, namespace: str, facts: dict | None = None) -> None:
        self.namespace = namespace
        self.facts = facts
        self.guard: dict | None = None
        self.functions: list[ast.FunctionDef] = []
        self.helpers: dict[str, Any] = {}
        self.temps: set[str] = set()
        self.free: dict[str, Any] = dict(ir.free)
        self.vjp_names: dict[Any, str] = {}
        self.in_progress: list[Any] = []
        self.taken = set(ir.used)
        self.embedded: dict[Any, str] = {}
        self.embedded_free: set[str] = set()

    def fresh_global(self, base: str) -> str:
        return fresh_name(base, self.taken)

    def embedded_name(self, fn: Any, base: str, ir: Function) -> str:
        """The module's name for another transform's generated function it calls (a name
        no variable of ``ir`` and no function of the module has)."""
        name = self.embedded.get(fn)
        if name is None:
            name = self.embedded[fn] = fresh_name(base, self.taken | ir.used)
            ir.used.add(name)
            self.taken.add(name)
            for key, value in generated.free_of(fn).items():     # what its code reads
                self.embedded_free.add(key)
                if self.free.setdefault(key, value) is not value:
                    raise CompileError(f"two functions read different values named {key}; "
                                       "srcgrad cannot put both in one generated module")
        return name

    def vjp_name(self, callee: Any, label: str | None = None,
                 inactive: frozenset[int] = frozenset()) -> str:
        """The name of ``callee``'s vjp function, emitting it the first time; ``inactive``:
        the positions of parameters no caller differentiates (a list of data, say), which
        get no gradient (a vjp of its own for each such set)."""
        key = (callee, inactive) if inactive else callee
        if key in self.vjp_names:
            return self.vjp_names[key]
        if callee in self.in_progress:
            raise CompileError(f"{callee.__name__} calls itself (recursion is not compiled "
                               "yet)")
        block = isinstance(callee, Function)           # a branch or loop body
        base = label or callee.name if block else label or (
            callee.__name__ if callee.__name__ != "<lambda>" else "lambda")
        name = self.vjp_names[key] = self.fresh_global(f"{base}_vjp")
        self.in_progress.append(callee)
        ir = callee if block else lower_function(callee)
        if inactive:
            ir = copy.copy(ir)
            ir.nondiff = set(ir.nondiff) | {p for i, p in enumerate(ir.params) if i in inactive}
        self.taken |= ir.used
        graph = build_graph(ir, [p for p in ir.params if p not in ir.nondiff], check=False)
        self.free.update(ir.free)
        self.transform(ir, graph, "vjp", list(ir.params), False, name=name)
        self.in_progress.pop()
        return name

    def transform(self, ir: Function, graph: nx.DiGraph, kind: str, wrt: list[str],
                  single: bool, name: str | None = None) -> str:
        active = active_names(graph)

        def vjp_name(callee: Any, label: str | None = None) -> str:
            return self.vjp_name(callee, label, _inactive(ir, active, callee))
        em = Emitter(ir, active, ir.fresh, vjp_name, self.namespace,
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
            grads = ast.Tuple([ast.Constant(None) if p in ir.nondiff else em.gradient_of(p)
                               for p in ir.params], ast.Load())     # None: nobody asks
            backward = ast.FunctionDef(
                name=ir.fresh(f"{ir.name}_backward" if ir.name != "<lambda>" else "backward"),
                args=_args([seed]), body=back + [ast.Return(grads)], decorator_list=[],
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
        fn = ast.FunctionDef(name=fname, args=_args(ir.params), body=body, decorator_list=[],
                             returns=None, type_params=[], lineno=0)
        finish_lists(em, fn)
        if kind != "vjp":
            eliminate_dead_code(fn, {st.target for st in ir.body if st.kind == "prim"})
        if self.guard and name is None:
            fn.body.insert(0, _guard(self.guard, ir.params))
        self.functions.append(fn)
        self.free.update(ir.free)              # with user functions the emitter bound
        self.helpers.update(em.tracer.helpers)
        lowering_temps = {st.target for st in ir.body if st.kind == "prim"
                          and st.target not in ir.source_names}
        self.temps |= em.tracer.temps | ir.inline | lowering_temps
        return fname


def _inactive(ir: Function, active: set[str], callee: Any) -> frozenset[int]:
    """Positions of ``callee``'s parameters (a user function's) whose argument has no
    gradient at every call of it in ``ir``: its vjp needs no gradient for them."""
    if isinstance(callee, Function):
        return frozenset()
    out: set[int] | None = None
    for st in ir.body:
        if st.kind != "call" or st.fn is not callee:
            continue
        try:
            skip = len(inspect.signature(callee).parameters) - len(st.args)
        except (TypeError, ValueError):
            return frozenset()
        here = {skip + i for i, a in enumerate(st.args)
                if not (isinstance(a, Var) and a.name in active)}
        out = here if out is None else out & here
    return frozenset(out or ())


def _returns_list(ir: Function) -> bool:
    """Whether the result is a run-time list, or a tuple with one among its items."""
    if not isinstance(ir.result, Var):
        return False
    return ir.result.name in ir.lists or any(name in ir.lists for name in ir.outputs())


def _guard(facts: dict, params: list[str]) -> ast.stmt:
    """``if`` the arguments are not the shapes this code was specialised for: hand them on."""
    tests = []
    for name, (shape, dtype) in facts.items():
        if dtype is float:
            tests.append(f"type({name}) is not float")
        else:
            kind = np.dtype(dtype)            # numeric (api._plain): np.<name> exists
            tests.append(f"type({name}) is not np.ndarray or {name}.shape != {shape!r} "
                         f"or {name}.dtype != np.{'bool_' if kind.kind == 'b' else kind.name}")
    if not tests:
        tests = ["False"]
    text = (f"if {' or '.join(tests)}:\n"
            f"    return dispatch({', '.join(params)})")
    guard = ast.parse(text).body[0]
    guard.body.insert(0, comment("specialised for the shapes of a first call; others go on"))
    return guard


def _args(names: list[str]) -> ast.arguments:
    return ast.arguments(posonlyargs=[], args=[ast.arg(n) for n in names], vararg=None,
                         kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[])


def check_scalar(value):
    """grad needs a scalar result; anything else is a vjp."""
    if getattr(value, "shape", ()) != () and getattr(value, "size", 1) != 1:
        raise ValueError(f"grad requires a scalar output, but the function returned shape "
                         f"{value.shape}; use srcgrad.vjp for non-scalar outputs")

