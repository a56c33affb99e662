"""Functions as values: a function passed to a helper, carried into a loop or a branch, or
bound to a parameter whose default is a function.

A call whose arguments hold a function known when compiling (a user function, a NumPy
function, a lambda or nested ``def``) is lowered in place, the callee's parameter bound to that
function: its calls inside are then calls of a known function (a user function's ``call``, a
NumPy function's primitive, a lambda's body).  A lambda or nested ``def`` handed on so is
captured (:func:`srcgrad.frontend.inline.capture`): the callee calls it from its own
scope.  A loop or branch body is handed such functions as it is handed closures, not as
parameters.
"""

from __future__ import annotations

import ast
import types
from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

from srcgrad.errors import CompileError
from srcgrad.frontend.inline import _free_names, escaping
from srcgrad.frontend.parse import Env, parse_function, returns_of
from srcgrad.frontend.scopes import assigned
from srcgrad.ir import Closure, Const, Pack, Tree, Var, constant
from srcgrad.runtime.rules.primitives import Primitive

__all__ = ["is_function", "holds_function", "passed_on", "starred_names",
           "as_tree", "CallableArgument", "function_value", "returns_function",
           "bind_function"]


class Host(Protocol):
    """What handing functions on reads of, and asks of, the lowerer (and what capturing
    closures asks: :func:`srcgrad.frontend.inline.capture`)."""

    scope: dict[str, Any]
    env: Env
    following: tuple                   # the statement being lowered, and those after it

    def expr(self, node: ast.expr) -> Any: ...

    def error(self, message: str, node: ast.AST) -> CompileError: ...


_FUNCTIONS = (types.FunctionType, types.BuiltinFunctionType, types.MethodType, np.ufunc,
              Primitive)


def is_function(value: Any) -> bool:
    """A function known when compiling: a closure, or a constant function (not a class, not an
    object with ``__call__``: those are data to the helper)."""
    if isinstance(value, Closure):
        return True
    return isinstance(value, Const) and isinstance(value.value, _FUNCTIONS)


def holds_function(values: list) -> bool:
    """Whether some value passed (or an item of a tuple or list literal passed) is a
    function known when compiling."""
    def walk(v: Any) -> bool:
        if isinstance(v, Pack):
            return any(walk(i) for i in v.items)
        return is_function(v)
    return any(walk(v) for v in values)


def passed_on(host: Host, values: list, keywords: dict, node: ast.AST,
              lower: Callable[[list, dict], Any]) -> Any:
    """``lower(values, keywords)``, a call lowered in place, with the closures among the
    arguments captured (:func:`srcgrad.frontend.inline.capture`): the callee calls them from
    its own scope, where the caller's names cannot change.  One that comes back out (the
    callee returns it, or a function calling it) would read those names later: refused
    when the caller assigns one of them again after this statement."""
    result = lower([escaping(host, v) for v in values],
                   {k: escaping(host, v) for k, v in keywords.items()})
    if _holds_closure(result):
        where, after = getattr(host, "following", (None, []))
        later = assigned(list(after) + ([where] if where is not None else []))
        read = {n for c in _closures([*values, *keywords.values()])
                for n in _free_names(c.node) if n in host.scope}
        stale = sorted(read & later)
        if stale:
            raise host.error(f"a function passed here comes back out of the call and reads "
                             f"{stale[0]!r}, which is assigned again after it; srcgrad does "
                             "not compile that (pass the value as an argument)", node)
    return result


def _closures(values: list) -> list[Closure]:
    out = []
    for v in values:
        if isinstance(v, Pack):
            out += _closures(v.items)
        elif isinstance(v, Closure):
            out.append(v)
    return out


def _holds_closure(value: Any) -> bool:
    return bool(_closures([value]))


def starred_names(blocks: list[list[ast.AST]]) -> set[str]:
    """The names the blocks spell out in a call (``f(*args)``, ``g(**kw)``)."""
    out = set()
    for block in blocks:
        for st in block:
            for n in ast.walk(st):
                if isinstance(n, ast.Starred) and isinstance(n.value, ast.Name):
                    out.add(n.value.id)
                elif isinstance(n, ast.keyword) and n.arg is None and \
                        isinstance(n.value, ast.Name):
                    out.add(n.value.id)
    return out


def as_tree(value: Any) -> Tree | None:
    """A tuple literal of names (``args`` of a helper's ``*args``) as a tree, passed to a
    block leaf by leaf so that its length stays known there; None for anything else."""
    if isinstance(value, Pack) and not value.is_list and value.items and all(
            isinstance(v, Var) for v in value.items):
        return Tree(tuple, dict(enumerate(value.items)))
    return None


class CallableArgument:
    """What the code built at a call is specialised for, of an argument that is a function:
    that function (the parameter is bound to it when lowering).  Its ``repr`` (the
    transform's key) names it by identity, or, for a plain function with no closure and no
    defaults (``lambda v: v ** 2`` written at the call), by its code and globals: such
    functions compute alike.  The transform keeps what a key names alive, so that no other
    object ever takes its identity."""

    def __init__(self, fn: Any, version: int = 0) -> None:
        self.fn, self.version = fn, version       # version: its globals rebound so often
        plain = isinstance(fn, types.FunctionType) and fn.__closure__ is None and \
            not fn.__defaults__ and not fn.__kwdefaults__
        self.named_by = (fn.__code__, fn.__globals__) if plain else (fn,)

    def name(self) -> str:
        ids = ", ".join(f"{id(o):#x}" for o in self.named_by)
        return f"{getattr(self.fn, '__qualname__', type(self.fn).__name__)} ({ids})"

    def __repr__(self) -> str:
        return f"<the function {self.name()}, version {self.version}>"


def function_value(value: Any) -> bool:
    """Whether an argument passed is a function the code can be built for."""
    return is_function(Const(value))


def returns_function(callee: Any) -> bool:
    """Whether ``callee`` returns a lambda or a function it defines (``return apply``): it is
    lowered in place, so that the caller gets that function (captured) to call."""
    if not isinstance(callee, types.FunctionType):
        return False
    try:
        node = parse_function(callee).node
    except CompileError:
        return False
    defined = {n.name for n in ast.walk(node) if isinstance(n, ast.FunctionDef) and n is not node}
    return any(isinstance(v, ast.Lambda) or isinstance(v, ast.Name) and v.id in defined
               for v in returns_of(node))


def bind_function(host: Any, user: str, param: str, fn: Any) -> None:
    """The parameter ``user`` (SSA ``param``) bound to the function ``fn`` the code is built
    for: its calls are calls of that function.  Only the transform that keys its code by the
    functions passed (:mod:`srcgrad.transforms.callable_args`) asks for this."""
    host.scope[user] = constant(fn, ast.Name(param, ast.Load()))
