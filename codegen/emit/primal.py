"""The primal statements, printed alike by both emitters: each lowered statement as Python.

A primitive prints as the operator or the NumPy call it stands for (``a + b``, ``np.sum(x,
axis=0)``, ``x[1:]``), a user's function with a rule from ``srcgrad.defvjp`` by the name the
code reads it by, and any other primitive as a call of its helper, whose source the module
holds; every source line starts with a ``# file:line  text`` comment.  Calls and control
flow differ between the modes: each emitter prints those itself.  An emitter holds one
:class:`Primal`, which reads of it what :class:`Host` lists.
"""

from __future__ import annotations

import ast
import functools
import keyword
import linecache
import math
import os
import re
from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

from srcgrad.codegen.backends.base import Backend
from srcgrad.codegen.common.markers import comment
from srcgrad.codegen.emit import lists
from srcgrad.codegen.emit.symbolic import Sym, Tracer, assign, index_expr, operand_expr, to_expr
from srcgrad.codegen.emit.symbolic import name_expr as _name
from srcgrad.ir import Const, Function, Stmt, Var, const_expr
from srcgrad.runtime.rules.lists import PRINTED_AS
from srcgrad.runtime.rules.primitives import NUMPY_BINDINGS

__all__ = ["Host", "Primal", "short_filename", "located"]

_NUMPY_OF = {}
for _fun, (_prim, _) in NUMPY_BINDINGS.items():
    _NUMPY_OF.setdefault(_prim, _fun)
_NUMPY_OF.update(PRINTED_AS)


def _function_of(prim: Any) -> Any:
    """The function a primitive prints as (NumPy's, or a user's given a rule by defvjp,
    also after this module was imported)."""
    fun = _NUMPY_OF.get(prim)
    if fun is None:
        fun = next((f for f, (p, _) in NUMPY_BINDINGS.items() if p is prim), None)
        if fun is not None:
            _NUMPY_OF[prim] = fun
    return fun


def _is_math(prim: Any) -> bool:
    return getattr(getattr(prim, "fn", None), "__module__", None) == "math"


def _is_numpy(fun: Any) -> bool:
    module = getattr(fun, "__module__", None) or ""
    return isinstance(fun, np.ufunc) or module == "builtins" or module.split(".")[0] in (
        "numpy", "cupy")


def _spelled(spelling: tuple, args: list[ast.expr], keywords: Callable[[], list[ast.keyword]],
             params: dict[str, Any], backend: Backend) -> ast.expr:
    """A primitive written as its ``spelling`` hint says (the forms are listed in
    :mod:`srcgrad.runtime.rules`): an operator, a subscript, a method, or its function
    called in a form of its own."""
    form, *rest = spelling
    if form == "operator":             # ``x + y``, or ``x ** p`` with ``p`` a parameter
        right = to_expr(params[rest[1]]) if len(rest) > 1 else args[1]
        return backend.binop(args[0], _operator(f"x {rest[0]} y")(), right)
    if form == "compare":
        return ast.Compare(args[0], [_operator(f"x {rest[0]} y")()], [args[1]])
    if form == "unary":
        return ast.UnaryOp(_operator(f"{rest[0]}x")(), args[0])
    if form == "subscript":
        return ast.Subscript(args[0], index_expr(params[rest[0]]), ast.Load())
    if form == "method":
        return ast.Call(ast.Attribute(args[0], rest[0], ast.Load()),
                        [to_expr(params[p]) for p in rest[1:]], [])
    if form == "sequence":             # the inputs as one list: ``np.stack([a, b], axis=0)``
        return ast.Call(backend.path(rest[0]), [ast.List(args, ast.Load())], keywords())
    if form == "leading":              # parameters first: ``np.einsum("ij,jk", a, b)``
        return ast.Call(backend.path(rest[0]), [ast.Constant(params[p]) for p in rest[1:]]
                        + args, [])
    raise ValueError(f"unknown spelling {spelling!r}")


@functools.cache
def _operator(text: str) -> type:
    """The operator of the expression ``text`` (``x + y``, ``x < y``, ``-x``): Python's own
    reading of a symbol."""
    node = ast.parse(text, mode="eval").body
    return type(node.ops[0] if isinstance(node, ast.Compare) else node.op)


class Host(Protocol):
    """What the primal printer reads of the emitter that holds it: the function (its body,
    file, and the free names a user's function is bound to), the tracer the rules print
    with, and the emitter's supply of fresh names."""

    fn: Function
    tracer: Tracer
    fresh: Callable[[str], str]


class Primal:
    """Prints the statements both emitters write alike (primitives, static values, effects,
    and the packing, unpacking and indexing of tuples, lists and pytrees); an emitter prints
    calls and control flow itself, and holds this as its ``printer``."""

    def __init__(self, host: Host) -> None:
        self.host = host                      # a weak proxy: the emitter owns the printer

    def commented(self, emit: Callable[[Stmt], Any]) -> list[ast.stmt]:
        """``emit(st)`` of every statement, under a ``# file:line  text`` comment where the
        line changes."""
        fn = self.host.fn
        out: list[ast.stmt] = []
        line = None
        for st in fn.body:
            key, where = located(fn.filename, st.line, st.text)
            if key != line:
                line = key
                out.append(comment(where))
            made = emit(st)
            out.extend(made if isinstance(made, list) else [made])
        return out

    def rule_operands(self, st: Stmt) -> tuple[Any, list, dict]:
        """What a rule of ``st``'s primitive is called on: its result, inputs and parameters
        as symbolic values (numbers stay numbers, so rules fold them)."""
        sym = self.host.tracer.sym
        xs = [sym(a.name) if isinstance(a, Var) else self._const(a) for a in st.args]
        params = {k: sym(v.name) if isinstance(v, Var) else self._const(v)
                  if isinstance(v, Const) else v for k, v in st.params.items()}
        return sym(st.target), xs, params

    def _const(self, c: Const) -> Any:
        value = c.value
        if isinstance(value, (int, float, bool, np.integer, np.bool_)) or value is None:
            return value          # NumPy integers too: 1.0 * np.uint8(200) folds to a float
        return Sym(const_expr(c), self.host.tracer)

    def statement(self, st: Stmt) -> ast.stmt:
        """A statement other than a call, a branch, a loop or an append, as source."""
        if st.kind == "effect":
            for name, helper in st.params.get("defines", {}).items():   # the code it needs
                self.host.tracer.helpers.setdefault(name, helper)
            return st.expr
        if st.kind == "static":
            stmt = assign(st.target, st.expr)
            if st.params.get("draw"):
                stmt.srcgrad_keep = True     # a random draw: never dropped, moved or inlined
            return stmt
        if st.kind == "pack":
            items = [operand_expr(a) for a in st.args]
            return assign(st.target, ast.List(items, ast.Load()) if st.params.get("list")
                          else ast.Tuple(items, ast.Load()))
        if st.kind == "listget":
            return lists.primal_listget(st)
        if st.kind == "unpack":
            return assign(st.target, ast.Subscript(operand_expr(st.args[0]),
                                                    ast.Constant(st.params["index"]),
                                                    ast.Load()))
        if st.kind == "leaf":
            value = operand_expr(st.args[0])
            for key in st.params["path"]:
                value = ast.Subscript(value, ast.Constant(key), ast.Load())
            return assign(st.target, value)
        stmt = assign(st.target, self.prim_expr(st))
        if _is_math(st.fn):
            stmt.srcgrad_keep = True         # math.log(-1.0) raises: never dropped as dead
        return stmt

    def math_module(self) -> ast.expr:
        """The name the generated module reads Python's ``math`` module by."""
        free = self.host.fn.free
        if free.get("math", math) is math:
            free["math"] = math
            return _name("math")
        return _name(self.bound_name(math))

    def prim_expr(self, st: Stmt) -> ast.expr:
        """A primitive's statement as source: as its ``spelling`` hint says, else a call of
        its function (NumPy's, Python's ``math``, a user's, or a helper of the module)."""
        prim, tracer = st.fn, self.host.tracer
        backend = tracer.backend
        args = [operand_expr(a) for a in st.args]
        if prim.spelling is not None:
            spelled = _spelled(prim.spelling, args, lambda: self.keywords(st), st.params,
                               backend)
            own = backend.helper("indexed") if isinstance(spelled, ast.Subscript) else None
            index = st.params.get(prim.spelling[1]) if len(prim.spelling) > 1 else None
            if own is not None and any(isinstance(k, Var) for k in (
                    index if isinstance(index, tuple) else (index,))):   # known at run time
                key = spelled.slice
                if any(isinstance(n, ast.Slice) for n in ast.walk(key)):
                    key = ast.Subscript(backend.attribute("s_"), key, ast.Load())
                return ast.Call(tracer.use_helper(own.__name__, own), [spelled.value, key], [])
            return spelled
        if _is_math(prim):                  # Python's math function itself
            return ast.Call(ast.Attribute(self.math_module(), prim.fn.__name__, ast.Load()),
                            args, [])
        kwargs = self.keywords(st)
        numpy_fun = _function_of(prim)
        if numpy_fun is not None and not _is_numpy(numpy_fun):
            return ast.Call(_name(self.bound_name(numpy_fun)), args, kwargs)
        if numpy_fun is not None:
            return ast.Call(backend.path(numpy_fun), args, kwargs)
        return ast.Call(tracer.use_helper(prim.fn.__name__, prim.fn), args, kwargs)

    def keywords(self, st: Stmt) -> list[ast.keyword]:
        """A primitive's parameters as keyword arguments (an index with slices as ``np.s_``)."""
        return [ast.keyword(k, self.host.tracer.index_expr(v) if k == "index" and not
                            isinstance(v, (Var, Const)) else _param(v))
                for k, v in st.params.items()]

    def bound_name(self, fun: Any) -> str:
        """The name of a user's function (given a rule by ``srcgrad.defvjp``) in the
        generated module: the name the user's code reads it by, else a fresh one bound there."""
        free = self.host.fn.free
        for name, value in free.items():
            if value is fun:
                return name
        base = getattr(fun, "__name__", "")
        base = base if base.isidentifier() and not keyword.iskeyword(base) else "function"
        name = self.host.fresh(base)
        free[name] = fun
        return name


def _param(v: Any) -> ast.expr:
    if isinstance(v, Var):
        return _name(v.name)
    return const_expr(v) if isinstance(v, Const) else to_expr(v)


def located(filename: str, line: int, text: str) -> tuple[Any, str]:
    """``file:line  text`` for a statement's comment, and what tells one line from the next.
    In a module srcgrad generated (a transform of a transform), the user's own line that the
    generated one came from: the ``# file:line  text`` comment above it."""
    if filename.startswith("<srcgrad "):
        lines = linecache.getlines(filename)
        for k in range(min(line, len(lines)) - 1, -1, -1):
            found = _LOCATED.match(lines[k])
            if found:
                return found.group(1), found.group(1)
            if lines[k].lstrip().startswith("def "):
                break
    return line, f"{short_filename(filename)}:{line}  {text}"


_LOCATED = re.compile(r"^\s*# (?:adjoint of )?(\S+:\d+  .*)$")


def short_filename(filename: str) -> str:
    """The file's name as comments show it (its base name: the same text from any directory)."""
    return os.path.basename(filename)
