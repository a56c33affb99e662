"""Symbolic values: the rule table's rules, called on these, print themselves as source.

A :class:`Sym` stands for a value of the generated code (a name or an expression).  NumPy calls
(``__array_ufunc__``, ``__array_function__``), operators, primitives and rule helpers on it
return new Syms; every operation is bound to a temporary by the :class:`Tracer`, and a later
pass inlines the temporaries used once.  A rule that does Python logic on a symbolic value
(``if x.ndim == 1``) raises :class:`SymbolicError`: such logic belongs in a named helper.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Callable
from typing import Any

import numpy as np

from srcgrad.codegen.backends.base import Backend, as_backend
from srcgrad.codegen.printer import unparse
from srcgrad.ir import Const, Var, const_expr, is_generated, value_expr
from srcgrad.runtime.rules import primitives

__all__ = ["Sym", "Tracer", "SymbolicError", "assign", "to_expr", "subscript_expr",
           "helper_sources", "numpy_path", "is_generated", "operand_expr"]


class SymbolicError(TypeError):
    """A rule asked for a concrete value (a bool, an int, a length) of a symbolic one."""


_BINOPS = {"add": ast.Add, "sub": ast.Sub, "mul": ast.Mult, "truediv": ast.Div,
           "matmul": ast.MatMult, "pow": ast.Pow, "mod": ast.Mod, "floordiv": ast.FloorDiv,
           "and": ast.BitAnd, "or": ast.BitOr, "xor": ast.BitXor}
_CMPOPS = {"lt": ast.Lt, "le": ast.LtE, "gt": ast.Gt, "ge": ast.GtE, "eq": ast.Eq,
           "ne": ast.NotEq}


def numpy_path(func: Any, backend: Backend | str = "np") -> ast.expr:
    """``np.linalg.solve`` for ``numpy.linalg.solve``, written for ``backend`` (a
    :class:`~srcgrad.codegen.backends.base.Backend`, or a namespace: ``"np"``, ``"cp"``,
    ``"math"``)."""
    return as_backend(backend).path(func)


def name_expr(name: str, store: bool = False) -> ast.Name:
    """The variable ``name``, read (or assigned, with ``store``)."""
    return ast.Name(name, ast.Store() if store else ast.Load())


def operand_expr(a: Any) -> ast.expr:
    """A statement's operand as source: a variable by its name, a constant as it prints."""
    return name_expr(a.name) if isinstance(a, Var) else const_expr(a)


def index_expr(index: Any) -> ast.expr:
    """An index of the IR for printing inside ``x[...]``: a run-time value (a Var) by its
    name, a named constant as its expression, slices written ``a:b``."""
    if isinstance(index, Var):
        return name_expr(index.name)
    if isinstance(index, Const):
        return const_expr(index)
    return subscript_expr(index)


def to_expr(value: Any) -> ast.expr:
    """Any value a rule passes along (Syms, numbers, tuples, slices) as an expression.

    A 0-d array (a rule's ``np.zeros_like(g)`` or ``np.where`` evaluated on the folded seed
    ``1.0`` and constant operands) prints as its number."""
    return value_expr(value, leaf=_leaf)


def _leaf(value: Any) -> ast.expr | None:
    if isinstance(value, Sym):
        return value.node
    if isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "biuf":
        return value_expr(value.item())
    if isinstance(value, np.ndarray) and value.size <= 64 and value.dtype.kind in "biuf":
        return ast.Call(ast.Attribute(ast.Name("np", ast.Load()), "array", ast.Load()),
                        [value_expr(value.tolist())], [ast.keyword("dtype", value_expr(
                            value.dtype))])       # a rule's value of constants: ravel(0.5)
    return None


def assign(target: str | list[str], value: ast.expr) -> ast.stmt:
    """``target = value``; a list of names unpacks (``out, back = value``)."""
    if isinstance(target, list):
        tgt: ast.expr = ast.Tuple([ast.Name(t, ast.Store()) for t in target], ast.Store())
    else:
        tgt = ast.Name(target, ast.Store())
    return ast.Assign([tgt], value, lineno=0)


def _hint(expr: ast.expr) -> str:
    """A readable name for a temporary that stays (one read twice or more)."""
    if isinstance(expr, ast.Compare):
        return "mask"
    if isinstance(expr, ast.Call):
        func = expr.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "t")
        return name.lstrip("_")
    return "t"


def _same(default: Any, value: Any) -> bool:
    if isinstance(value, Sym) or default is inspect.Parameter.empty:
        return False
    if default is np._NoValue:
        return value is None or value is False
    try:
        return type(default) is type(value) and bool(default == value)
    except Exception:  # noqa: BLE001 - arrays and the like are never defaults
        return False


def _defaults(fn: Any) -> dict:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return {}
    return {p.name: p.default for p in params if p.default is not inspect.Parameter.empty}


def _is_number(value: Any, target: float) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == target


class Tracer:
    """Collects the statements a rule's symbolic evaluation produces, and the helpers used."""

    def __init__(self, fresh: Any, backend: Backend | str = "np", facts: dict | None = None
                 ) -> None:
        self.fresh = fresh
        self.backend = as_backend(backend)
        self.facts = facts or {}          # name -> (shape, dtype) of a specialisation
        self.stmts: list[ast.stmt] = []
        self.temps: set[str] = set()
        self.defs: dict[str, ast.expr] = {}     # every temporary's expression
        self.helpers: dict[str, Any] = {}
        self.called: dict[str, Any] = {}    # helper name -> the primitive or helper it calls
        self.embed: Any = None      # (generated function, base) -> its name in this module

    def bind(self, expr: ast.expr) -> Sym:
        name = self.fresh(_hint(expr))
        self.temps.add(name)
        self.defs[name] = expr
        self.stmts.append(assign(name, expr))
        return Sym(ast.Name(name, ast.Load()), self)

    def sym(self, name: str) -> Sym:
        return Sym(ast.Name(name, ast.Load()), self)

    def call(self, func: ast.expr, args: tuple, kwargs: dict, defaults: dict | None = None
             ) -> Sym:
        """``func(*args, **kwargs)``, leaving out keywords equal to their defaults."""
        defaults = defaults or {}
        keywords = [ast.keyword(k, self.index_expr(v) if k == "index" else to_expr(v))
                    for k, v in kwargs.items() if not (k in defaults and _same(defaults[k], v))]
        return self.bind(ast.Call(func, [to_expr(a) for a in args], keywords))

    def index_expr(self, index: Any) -> ast.expr:
        """An index value as ``np.s_[:, 1]`` when it holds slices, else as itself."""
        parts = index if isinstance(index, tuple) else (index,)
        if any(isinstance(p, slice) or p is Ellipsis for p in parts):
            return ast.Subscript(self.backend.attribute("s_"), subscript_expr(index),
                                 ast.Load())
        return to_expr(index)

    def use_helper(self, name: str, fn: Any) -> ast.expr:
        if self.embed is not None and is_generated(fn):   # another transform's function
            name = self.embed(fn, name)
        self.helpers.setdefault(name, fn)
        return ast.Name(name, ast.Load())


class Sym:
    """A symbolic value of the generated code."""

    __slots__ = ("node", "tracer")
    __array_priority__ = 2000

    def __init__(self, node: ast.expr, tracer: Tracer) -> None:
        self.node = node
        self.tracer = tracer

    def __repr__(self) -> str:
        return f"Sym({unparse(self.node)})"

    # -- operators, with the folding that keeps seeds of 1.0 out of the generated code
    def _binop(self, op: str, other: Any, reflected: bool = False) -> Any:
        if op == "mul":
            if _is_number(other, 1):
                return self
        elif op == "pow" and not reflected and _is_number(other, 1):
            return self
        elif op in ("add", "sub") and _is_number(other, 0):
            return self if op == "add" or not reflected else -self
        elif op == "truediv" and _is_number(other, 1) and not reflected:
            return self
        left, right = (to_expr(other), self.node) if reflected else (self.node, to_expr(other))
        return self.tracer.bind(ast.BinOp(left, _BINOPS[op](), right))

    def _cmp(self, op: str, other: Any) -> Sym:
        return self.tracer.bind(ast.Compare(self.node, [_CMPOPS[op]()], [to_expr(other)]))

    def __neg__(self) -> Sym:
        return self.tracer.bind(ast.UnaryOp(ast.USub(), self.node))

    def __pos__(self) -> Sym:
        return self

    def __invert__(self) -> Sym:
        return self.tracer.bind(ast.UnaryOp(ast.Invert(), self.node))

    def __getitem__(self, index: Any) -> Sym:
        return Sym(ast.Subscript(self.node, subscript_expr(index), ast.Load()), self.tracer)

    def __hash__(self) -> int:
        return id(self)

    # -- attributes a rule may read
    def _fact(self) -> tuple | None:
        return self.tracer.facts.get(self.node.id) if isinstance(self.node, ast.Name) else None

    @property
    def shape(self) -> Any:
        fact = self._fact()
        if fact is not None:
            return fact[0]                     # known: rules fold it into constants
        return self._query("shape")

    @property
    def ndim(self) -> Any:
        fact = self._fact()
        if fact is not None:
            return len(fact[0])
        return self._query("ndim")

    def _query(self, what: str) -> Sym:
        """``np.shape(x)`` of a variable (which may hold a Python float, with no ``.shape``),
        ``expr.shape`` of an expression a rule made (an array)."""
        if isinstance(self.node, ast.Name) and self.node.id not in self.tracer.temps:
            return Sym(ast.Call(self.tracer.backend.attribute(what), [self.node], []),
                       self.tracer)
        return Sym(ast.Attribute(self.node, what, ast.Load()), self.tracer)

    @property
    def dtype(self) -> Sym:
        return Sym(ast.Attribute(self.node, "dtype", ast.Load()), self.tracer)

    @property
    def T(self) -> Sym:
        return self.tracer.bind(ast.Attribute(self.node, "T", ast.Load()))

    # -- what a symbolic value cannot give
    def _concrete(self, *_: Any) -> Any:
        raise SymbolicError(f"a rule needs the concrete value of {unparse(self.node)}; "
                            "put that logic in a srcgrad helper")

    __bool__ = __int__ = __index__ = __float__ = __len__ = __iter__ = _concrete

    # -- NumPy and srcgrad dispatch
    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Sym:
        if method != "__call__":
            raise SymbolicError(f"np.{ufunc.__name__}.{method} in a rule")
        tracer = next(i.tracer for i in inputs if isinstance(i, Sym))
        return tracer.call(tracer.backend.path(ufunc), inputs, kwargs)

    def __array_function__(self, func: Any, types: Any, args: tuple, kwargs: dict) -> Sym:
        return self.tracer.call(self.tracer.backend.path(func), args, kwargs,
                                _defaults(func))

    @staticmethod
    def __srcgrad_primitive__(prim: Any, args: tuple, params: dict) -> Sym:
        tracer = _tracer_of(args, params)
        func = tracer.use_helper(prim.fn.__name__, prim.fn)
        tracer.called.setdefault(func.id, prim)
        return tracer.call(func, args, params, _defaults(prim.fn))

    @staticmethod
    def __srcgrad_helper__(wrapper: Any, args: tuple, kwargs: dict) -> Sym:
        tracer = _tracer_of(args, kwargs)
        func = tracer.use_helper(wrapper.__name__, wrapper.helper_source)
        tracer.called.setdefault(func.id, wrapper)
        return tracer.call(func, args, kwargs, _defaults(wrapper.helper_source))


for _op in _BINOPS:
    setattr(Sym, f"__{_op}__", lambda self, other, _o=_op: self._binop(_o, other))
    setattr(Sym, f"__r{_op}__", lambda self, other, _o=_op: self._binop(_o, other, True))
for _op in _CMPOPS:
    setattr(Sym, f"__{_op}__", lambda self, other, _o=_op: self._cmp(_o, other))


def _tracer_of(args: tuple, params: dict) -> Tracer:
    for a in list(args) + list(params.values()):
        if isinstance(a, Sym):
            return a.tracer
    raise AssertionError("no symbolic argument")


def subscript_expr(index: Any) -> ast.expr:
    if isinstance(index, tuple):
        return ast.Tuple([subscript_expr(i) for i in index], ast.Load())
    if isinstance(index, slice):
        return ast.Slice(*(None if p is None else to_expr(p)
                           for p in (index.start, index.stop, index.step)))
    return to_expr(index)


# ---------------------------------------------------------------------------------------------
# The source of the helpers a generated module uses.

def _definition(fn: Any, name: str) -> str:
    source = textwrap.dedent(inspect.getsource(fn))
    tree = ast.parse(source)
    node = tree.body[0]
    node.decorator_list = []
    node.name = name
    if isinstance(node, ast.ClassDef):         # an exception class a helper raises
        return unparse(node)
    node.returns = None
    for arg in node.args.args + node.args.kwonlyargs:
        arg.annotation = None
    return unparse(node)


def helper_sources(helpers: dict[str, Any],
                   own: Callable[[str], Any] = lambda name: None) -> list[str]:
    """Definitions of ``helpers`` and of the runtime functions they call (and, for another
    transform's generated functions, of everything of its module they call), in a stable
    order; ``own(name)``: a backend's own version of a helper, written instead.  Two
    different definitions of one name are refused (ValueError)."""
    done: dict[str, str] = {}
    todo = sorted(helpers.items(), key=lambda item: item[0])
    while todo:
        name, fn = todo.pop(0)
        fn = own(name) or fn
        text = _definition(fn, name)
        if name in done:
            if done[name] != text:
                raise ValueError(f"two different functions named {name} would be printed in "
                                 "one generated module; give the functions distinct names")
            continue
        done[name] = text
        module_globals = getattr(fn, "__globals__", {})
        for node in ast.walk(ast.parse(done[name])):
            if isinstance(node, ast.Name) and node.id not in done:
                dep = module_globals.get(node.id)
                src = getattr(dep, "helper_source", None) or (getattr(dep, "fn", None)
                                                              if hasattr(dep, "vjps") else dep)
                module = getattr(src, "__module__", None) or ""
                if isinstance(src, type) and is_generated(src):    # a generated module's
                    src = getattr(primitives, src.__name__, src)   # copy of a runtime class
                    module = getattr(src, "__module__", None) or ""
                if callable(src) and (module.startswith("srcgrad.") or is_generated(src)):
                    todo.append((node.id, src))
    return [done[k] for k in sorted(done)]
