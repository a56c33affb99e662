"""Diagnosis only: the refusals of a function past its first, and the helpers it calls.

The compiler stops at the first construct it refuses.  To list more, a function is lowered
again by :class:`Diagnosing`, a lowerer that, for a statement of the function's own body that
is refused, notes the refusal and binds the names that statement assigns to a stand-in value
(one of the function's array parameters) before going on.  A refusal met later in a statement
that reads such a name is marked as following the earlier one: it may change once that line
compiles.  Nothing here serves a real build, and no user code is called: the source is read
and its names resolved as the compiler resolves them.
"""

from __future__ import annotations

import ast
import contextvars
import inspect
import types
from dataclasses import dataclass, field
from typing import Any

from srcgrad.build.lowering import RESERVED
from srcgrad.errors import CompileError
from srcgrad.frontend.callees import is_library
from srcgrad.frontend.lower import Lowerer
from srcgrad.frontend.objects import NeedsArgumentTypes
from srcgrad.frontend.parse import Env, Unresolved, not_plain, parse_function
from srcgrad.frontend.scopes import bound
from srcgrad.ir import Const, Var

__all__ = ["Finding", "refusals", "helpers"]


@dataclass
class Finding:
    """A refusal found, and the line of an earlier refusal it may follow from (or None)."""

    error: CompileError
    after: int | None = None


@dataclass
class _Notes:
    """What one diagnosis collects: the function's own node, its findings, and each name a
    refused statement assigned, with that statement's line."""

    node: ast.AST
    found: list[Finding] = field(default_factory=list)
    stand_ins: dict[str, int] = field(default_factory=dict)


_NOTES: contextvars.ContextVar[_Notes | None] = contextvars.ContextVar("srcgrad_diagnosis",
                                                                      default=None)


class Diagnosing(Lowerer):
    """A lowerer that goes on past a refused statement of the diagnosed function's own body
    (not of a branch, a loop body or a helper lowered in place, which the compiler refuses
    whole at that statement); every other lowering is the compiler's own."""

    def statement(self, s: ast.stmt) -> None:
        notes = _NOTES.get()
        if notes is None or self.src.node is not notes.node:
            super().statement(s)
            return
        try:
            super().statement(s)
        except NeedsArgumentTypes:
            self._stand_in(s, notes, None)       # waits for the arguments: not a refusal
        except CompileError as exc:
            reads = {_key(n) for n in ast.walk(s) if isinstance(n, (ast.Name, ast.Attribute))
                     and isinstance(n.ctx, ast.Load)}
            earlier = [notes.stand_ins[n] for n in reads if n in notes.stand_ins]
            notes.found.append(Finding(exc, min(earlier) if earlier else None))
            self._stand_in(s, notes, s.lineno)

    def _stand_in(self, s: ast.stmt, notes: _Notes, line: int | None) -> None:
        """Bind what ``s`` assigns to one of the function's array parameters."""
        value = next((v for v in self.scope.values()
                      if isinstance(v, Var) and v.name in self.param_names), Const(0.0))
        names = bound(s) | _augmented(s)
        for name in names:
            self.scope[name] = value
        if line is None:
            return
        stored = {_key(n) for n in ast.walk(s) if isinstance(n, ast.Attribute)
                  and isinstance(n.ctx, ast.Store)}         # self.history = ...: read later
        for name in names | stored:
            notes.stand_ins.setdefault(name, line)


def _key(node: ast.Name | ast.Attribute) -> str:
    return node.id if isinstance(node, ast.Name) else ast.unparse(node)


def _augmented(s: ast.stmt) -> set[str]:
    """The names an augmented assignment or a loop binds (``x += 1``, ``for i in ...``)."""
    if isinstance(s, ast.AugAssign) and isinstance(s.target, ast.Name):
        return {s.target.id}
    if isinstance(s, (ast.For, ast.While, ast.If, ast.With, ast.Try)):
        return {n.id for n in ast.walk(s) if isinstance(n, ast.Name)
                and isinstance(n.ctx, ast.Store)}
    return set()


def refusals(fun: Any, trees: dict[int, Any] | None = None,
             wrt: tuple[int, ...] | None = None) -> tuple[list[Finding], CompileError | None]:
    """The refusals found lowering ``fun`` past each refused statement of its own body, and
    the refusal that ended the lowering (None where it went to the end)."""
    src = parse_function(fun)
    notes = _Notes(src.node)
    token = _NOTES.set(notes)
    try:
        lowerer = Diagnosing(src, Env(fun), set(RESERVED), trees)
        if wrt is not None and isinstance(src.node, ast.FunctionDef):
            params = src.node.args.args
            lowerer.wrt_users = frozenset(params[i].arg for i in wrt if i < len(params))
        lowerer.lower_function()
    except NeedsArgumentTypes:
        return notes.found, None
    except CompileError as exc:
        return notes.found, exc
    finally:
        _NOTES.reset(token)
    return notes.found, None


def helpers(fun: Any) -> list[Any]:
    """The user functions ``fun`` calls by a name or an attribute the compiler resolves
    (a global or closure function, a module's function, a method of an object known when
    compiling), in the order of the source; never a library's or srcgrad's."""
    try:
        node = parse_function(fun).node
    except CompileError:
        return []
    env, found = Env(fun), []
    for call in sorted((n for n in ast.walk(node) if isinstance(n, ast.Call)),
                       key=lambda n: (n.lineno, n.col_offset)):
        callee = _resolve(call.func, env)
        if callee is not None and _user_function(callee) and callee not in found \
                and not_plain(callee) is None:       # a generator: lowered where it is read
            found.append(callee)
    return found


def _resolve(expr: ast.expr, env: Env) -> Any:
    """What a call's name or dotted attribute stands for, read without running code (None
    when it is a local value or cannot be read so)."""
    if isinstance(expr, ast.Name):
        try:
            return env.resolve(expr.id)
        except (Unresolved, AttributeError):
            return None
    if not isinstance(expr, ast.Attribute):
        return None
    base = _resolve(expr.value, env)
    if base is None:
        return None
    if isinstance(base, types.ModuleType):
        return vars(base).get(expr.attr)
    found = inspect.getattr_static(base, expr.attr, None)
    if isinstance(found, types.FunctionType) and not isinstance(base, type):
        return types.MethodType(found, base)          # a method of an object known now
    if isinstance(found, (staticmethod, classmethod)):
        inner = found.__func__
        return types.MethodType(inner, base if isinstance(base, type) else type(base)) \
            if isinstance(found, classmethod) else inner
    return found if isinstance(found, types.FunctionType) else None


def _user_function(f: Any) -> bool:
    """A plain Python function (or a method of one) of the user's, not of a library."""
    inner = f.__func__ if isinstance(f, types.MethodType) else f
    if not isinstance(inner, types.FunctionType):
        return False
    module = getattr(inner, "__module__", "") or ""
    return not (module == "srcgrad" or module.startswith("srcgrad.")) and not is_library(f)
