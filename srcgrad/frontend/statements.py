"""Statements that check or guard rather than compute: ``raise``, ``try`` and ``with``.

``raise E(args)`` of an allow-listed exception class runs in the generated primal as the user
wrote it (an ``effect``), so the same error with the same message comes on the same path; a
branch that always raises needs no value for what the other branch assigns.  ``try`` is
lowered by :mod:`srcgrad.frontend.try_blocks`.  ``with np.errstate(...)`` and ``with
warnings.catch_warnings()`` lower their body as a block whose forward and adjoint run under
the same context.  A ``for`` loop over a user's generator is expanded by
:mod:`srcgrad.frontend.generators`.
"""

from __future__ import annotations

import ast
import builtins
import copy
import warnings
from typing import Any, Protocol

import numpy as np

from srcgrad.errors import CompileError
from srcgrad.frontend.dicts import Dicts
from srcgrad.frontend.effects import Effects
from srcgrad.frontend.generators import generator_loop
from srcgrad.frontend.jumps import placeholders
from srcgrad.frontend.parse import Env, Source
from srcgrad.frontend.scopes import assigned, read
from srcgrad.frontend.statics import Statics
from srcgrad.frontend.tables.guards import caught_warnings
from srcgrad.frontend.try_blocks import TryBlocks, raises
from srcgrad.ir import Closure, Const, Pack, Stmt, Tree, Var, bind_values
from srcgrad.runtime.rules.primitives import NotCompiled

__all__ = ["Statements", "EXCEPTIONS"]

EXCEPTIONS = frozenset({
    ValueError, TypeError, RuntimeError, AssertionError, IndexError, KeyError, LookupError,
    NotImplementedError, ArithmeticError, ZeroDivisionError, FloatingPointError,
    OverflowError, np.linalg.LinAlgError})
"""The exception classes a compiled ``raise`` or ``except`` names (builtin, and NumPy's)."""


_ERRSTATE = ("all", "divide", "over", "under", "invalid")
_FILTERS = (warnings.simplefilter, warnings.filterwarnings, warnings.resetwarnings)


class Host(Protocol):
    """What the lowering of these statements reads of, and asks of, the lowerer that holds it."""

    scope: dict[str, Any]
    body: list                         # the statements emitted so far
    src: Source
    env: Env
    free: dict[str, Any]
    effects: Effects
    statics: Statics
    following: tuple                   # the statement being lowered, and those after it
    control: Any                       # if and for, lowered there
    dicts: Dicts

    def expr(self, node: ast.expr) -> Any: ...

    def statement(self, s: ast.stmt) -> None: ...

    def live_after(self) -> set[str]: ...

    def fresh_internal(self, base: str) -> str: ...

    def error(self, message: str, node: ast.AST) -> CompileError: ...


class Statements:
    """The lowering of ``raise``, ``try`` and ``with``; the lowerer's ``statements``."""

    def __init__(self, host: Host) -> None:
        self.host = host
        self.tries = TryBlocks(host, self)
        host.following = (None, [])     # the host's block() keeps it as it lowers statements

    def lower(self, s: ast.For | ast.If | ast.Raise | ast.Try | ast.With) -> None:
        """A ``raise``, a ``try``, a ``with``, an ``if`` (a branch that raises is given the
        names the other assigns) or a ``for`` loop (over a generator: expanded here)."""
        if isinstance(s, ast.If):
            self.host.control.if_statement(self._raising(s))
        elif isinstance(s, ast.Raise):
            self.raise_statement(s)
        elif isinstance(s, ast.With):
            self.with_statement(s)
        elif isinstance(s, ast.Try):
            self.tries.lower(s)
        elif not generator_loop(self.host, s):
            self.host.control.for_statement(s)

    # ---------------------------------------------------------------------------- raise
    def raise_statement(self, s: ast.Raise) -> None:
        """``raise E(args)``: run as written, when the path gets there."""
        host = self.host
        if getattr(s, "srcgrad_again", False):      # a handler's re-raise: the same exception
            self.check_names(s.exc)
            if s.cause is not None:
                self.check_names(s.cause)
            return host.effects.effect(s)
        if s.exc is None:
            raise host.error("srcgrad compiles a bare `raise` only in an `except` block it "
                             "compiles (it re-raises what the try body raised)", s)
        call = s.exc.func if isinstance(s.exc, ast.Call) else s.exc
        if getattr(self.exception_class(call, "raise"), "not_compiled", False):
            return self._guard(s)
        if isinstance(s.exc, ast.Call):
            for part in [*s.exc.args, *(k.value for k in s.exc.keywords)]:
                self.check_names(part)
        if s.cause is not None:        # from None, or from the exception a handler caught
            self.check_names(s.cause)
        host.effects.effect(s)

    def _guard(self, s: ast.Raise) -> None:
        """A generated module's ``raise NotCompiled(message)`` (its code differentiated
        again): the same guard in this module, raising srcgrad's own class."""
        args = s.exc.args if isinstance(s.exc, ast.Call) else []
        if not all(isinstance(a, ast.Constant) for a in args):
            raise self.host.error("a generated guard's message must be a literal", s)
        raise_ = ast.Raise(ast.Call(ast.Name("NotCompiled", ast.Load()), list(args), []), None)
        for n in ast.walk(raise_):
            ast.copy_location(n, s)
        self.host.emit(Stmt(None, "effect", params={"defines": {"NotCompiled": NotCompiled}},
                            expr=raise_, uses=()))

    def _raising(self, s: ast.If) -> ast.If:
        """``s``, a branch that always raises first given a placeholder for each name the
        other branch assigns anew (never read: the branch raises before it returns)."""
        host = self.host
        branches = [s.body, s.orelse]
        if not any(raises(b) for b in branches):
            return s
        s = copy.copy(s)
        for i, (mine, other) in enumerate((branches, branches[::-1])):
            names = sorted(n for n in assigned(other) - assigned(mine) - read(mine)
                           if n not in host.scope)
            if raises(mine) and names:
                filled = placeholders(names, [False] * len(names), mine[0]) + mine
                s.body, s.orelse = (filled, s.orelse) if i == 0 else (s.body, filled)
        return s

    def exception_class(self, node: ast.expr, what: str) -> type:
        """The allow-listed exception class ``node`` names, else a CompileError."""
        host = self.host
        try:
            value = host.expr(node)
        except CompileError:
            value = None
        cls = value.value if isinstance(value, Const) else None
        if isinstance(cls, type) and getattr(cls, "not_compiled", False):
            return cls                 # a generated module's guard, differentiated again
        if not (isinstance(cls, type) and cls in EXCEPTIONS):
            names = ", ".join(sorted(c.__name__ for c in EXCEPTIONS))
            raise host.error(f"srcgrad compiles {what} of a builtin exception class ({names}); "
                             f"{ast.unparse(node)} is not one", node)
        return cls

    def check_names(self, node: ast.expr) -> None:
        """Every name ``node`` reads is a value the generated code has (an array, a number,
        a tuple, a global); a lambda or a dict built here is refused."""
        host = self.host
        inner = {a.arg for n in ast.walk(node) if isinstance(n, ast.Lambda)
                 for a in ast.walk(n.args) if isinstance(a, ast.arg)} | {
            t.id for n in ast.walk(node) if isinstance(n, ast.comprehension)
            for t in ast.walk(n.target) if isinstance(t, ast.Name)}
        for n in ast.walk(node):
            if not isinstance(n, ast.Name) or n.id in inner:
                continue
            if n.id in host.scope:
                value = host.scope[n.id]
                host.dicts.local_value(value, n)
                if not isinstance(value, (Var, Const, Pack, Tree)) or isinstance(value, Closure):
                    raise host.error(f"srcgrad cannot pass {n.id!r} to this statement", n)
                continue
            try:
                host.env.resolve(n.id)
            except Exception:  # noqa: BLE001 - not a global either
                if not hasattr(builtins, n.id):
                    raise host.error(f"name {n.id!r} is not defined", n) from None

    # ----------------------------------------------------------------------------- with
    def with_statement(self, s: ast.With) -> None:
        """``with np.errstate(...):`` or ``with warnings.catch_warnings():`` (and the filters
        it sets first): the body as a block (a branch whose test is always true) whose
        forward and adjoint run under that context."""
        host = self.host
        item = s.items[0] if len(s.items) == 1 else None
        call = item.context_expr if item is not None else None
        if item is None or item.optional_vars is not None or not isinstance(call, ast.Call):
            raise host.error("srcgrad compiles `with np.errstate(...):` and `with warnings."
                             "catch_warnings():` only (one context manager, no `as`)", s)
        try:
            fn = host.expr(call.func)
        except CompileError:
            fn = None
        fn = fn.value if isinstance(fn, Const) else None
        if fn is np.errstate:
            body, context = s.body, self._errstate(call)
        elif fn is warnings.catch_warnings and not call.args and not call.keywords:
            body, context = self._caught(s)
        elif fn is caught_warnings:                   # generated code, differentiated again
            body, context = s.body, host.statics.rename(call)[0]
        else:
            raise host.error("srcgrad compiles `with np.errstate(...):` and `with warnings."
                             f"catch_warnings():` only; {ast.unparse(call)} is not compiled "
                             "as a context manager", call)
        test = ast.copy_location(ast.Constant(True), s)
        block = ast.copy_location(ast.If(test, copy.deepcopy(body), copy.deepcopy(body)), s)
        before = len(host.body)
        host.statement(block)
        for st in host.body[before:]:
            if st.kind == "branch":
                st.params["context"] = context

    def _errstate(self, call: ast.Call) -> ast.expr:
        for k in call.keywords:
            if k.arg not in _ERRSTATE or call.args or not (
                    isinstance(k.value, ast.Constant) and k.value.value in ("ignore", "warn")):
                raise self.host.error("srcgrad compiles np.errstate with the modes 'ignore' "
                                      "and 'warn' only (the adjoint runs under the same "
                                      "errstate, and would raise where the function does not)",
                                      k)
        return self.host.statics.rename(call)[0]

    def _caught(self, s: ast.With) -> tuple[list[ast.stmt], ast.expr]:
        """The body after the filters it sets first (``warnings.simplefilter("ignore")``),
        and ``caught_warnings(lambda: (<those calls>,))``: the same filters, set in a copy
        of the warnings state, around the block's forward and its adjoint."""
        host = self.host
        calls = []
        for st in s.body:
            call = st.value if isinstance(st, ast.Expr) else None
            try:
                fn = host.expr(call.func) if isinstance(call, ast.Call) else None
            except CompileError:
                fn = None
            if not (isinstance(fn, Const) and any(fn.value is f for f in _FILTERS)):
                break
            for part in [*call.args, *(k.value for k in call.keywords)]:
                self.check_names(part)
            calls.append(copy.deepcopy(call))
        helper = host.fresh_internal("caught_warnings")
        bind_values(host.free, {helper: caught_warnings}, host.src.where(s))
        thunk = ast.Lambda(ast.arguments([], [], None, [], [], None, []),
                           ast.Tuple(calls, ast.Load()))
        context = ast.Call(ast.Name(helper, ast.Load()), [thunk], [])
        for n in ast.walk(context):
            ast.copy_location(n, s)
        body = s.body[len(calls):] or [ast.copy_location(ast.Pass(), s)]
        return body, host.statics.rename(context)[0]
