"""Statements kept for their effect: ``print(...)``, logging calls and ``assert`` run by the
generated code as the user wrote them (an ``effect`` statement), and an expression whose
value is not used (lowered, its value dropped).  A method called on an array or a list for
its effect in place (``x.sort()``, ``xs.extend(ys)``) is refused: the compiler follows only
``.append``.
"""

from __future__ import annotations

import ast
import logging
from typing import Any, Protocol

from srcgrad.errors import CompileError
from srcgrad.frontend.lists import Lists, is_append
from srcgrad.frontend.object_writes import refuse_method
from srcgrad.frontend.randomness import Randomness
from srcgrad.frontend.statics import Statics
from srcgrad.frontend.super_calls import is_super
from srcgrad.frontend.tables import constructs as T
from srcgrad.ir import Const, Stmt, Var, hashable

__all__ = ["Effects"]


class Host(Protocol):
    """What the lowering of effects reads of, and asks of, the lowerer that holds it."""

    statics: Statics
    lists: Lists
    randomness: Randomness

    def expr(self, node: ast.expr) -> Any: ...

    def emit(self, stmt: Stmt) -> Var: ...

    def error(self, message: str, node: ast.AST) -> CompileError: ...


class Effects:
    """The lowering of statements kept for their effect; the lowerer's ``effects``."""

    def __init__(self, host: Host) -> None:
        self.host = host

    def expression(self, s: ast.Expr) -> None:
        """An expression statement: ``xs.append(v)``, a docstring (nothing), ``print(...)``,
        or a value not used."""
        host, value = self.host, s.value
        if isinstance(value, ast.Constant):
            return                                         # a docstring
        if is_append(value):
            refuse_method(host, value)                 # o.lst.append(v): the caller's list
            return host.lists.append(value)
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute):
            if is_super(value.func.value, host):
                host.expr(value)                           # super().__init__(name)
                return
            receiver = host.expr(value.func.value)
            if host.lists.is_list(receiver):
                raise host.error(f"srcgrad compiles a list's .append; list."
                                 f"{value.func.attr}() is not compiled", value)
            if host.randomness.draws_from(receiver, value):
                host.expr(value)                           # rs.randn(): the stream moves on
                return
            if isinstance(receiver, Var) and not host.statics.is_static(receiver):
                raise host.error(f"srcgrad cannot compile .{value.func.attr}() for its "
                                 "effect on an array", value)
        if isinstance(value, ast.Call) and self.is_effect(value):
            self.effect(s)                                 # print(...)
        else:
            host.expr(value)                               # its value is not used

    def is_effect(self, call: ast.Call) -> bool:
        """Whether ``call`` is one kept for its effect: ``print(...)``, a logging call."""
        host = self.host
        try:
            fn = host.expr(call.func) if not isinstance(call.func, ast.Attribute) or \
                not isinstance(host.expr(call.func.value), Var) else None
        except CompileError:
            return False
        return isinstance(fn, Const) and (hashable(fn.value) and fn.value in T.EFFECTS
                                          or _is_logging(fn.value))

    def effect(self, s: ast.stmt) -> None:
        """``s`` as the user wrote it, its names renamed: run for its effect."""
        self.host.randomness.lower_inside(s)           # print(rs.randn()): drawn once, here
        expr, uses = self.host.statics.rename(s)
        self.host.emit(Stmt(None, "effect", expr=expr, uses=uses))


_LOG_CALLS = frozenset({"debug", "info", "warning", "error", "critical", "exception", "log"})


def _is_logging(fn: Any) -> bool:
    """``logging.info`` (and its siblings), or that method of a logger known when compiling
    (``logger = logging.getLogger(__name__)`` as a global): it runs in the forward."""
    name = getattr(fn, "__name__", None)
    if name not in _LOG_CALLS:
        return False
    owner = getattr(fn, "__self__", None)
    if owner is not None:
        return isinstance(owner, (logging.Logger, logging.LoggerAdapter))
    return getattr(logging, name, None) is fn
