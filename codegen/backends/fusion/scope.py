"""Where each name of a generated function's top-level body is read and written: what the
fusion pass (:mod:`srcgrad.codegen.backends.fusion.partition`) needs to know of the statements it
leaves alone,
found in one walk of the function.

A nested function (the backward closure) or a lambda reads its free names when it is called,
which may be after anything: such a read counts as a read after every statement.  So does
every read where the function calls ``locals()``, ``vars()``, ``eval`` or ``exec``.
"""

from __future__ import annotations

import ast
import sys

from srcgrad.codegen.common.markers import COMMENT

__all__ = ["Scope", "comment_text"]

_DYNAMIC = frozenset({"locals", "vars", "eval", "exec", "dir"})
_LATER = sys.maxsize


def comment_text(st: ast.stmt) -> str | None:
    """The text of a comment marker statement (see
    :func:`srcgrad.codegen.common.markers.comment`), else None."""
    if (isinstance(st, ast.Expr) and isinstance(st.value, ast.Call)
            and isinstance(st.value.func, ast.Name) and st.value.func.id == COMMENT
            and len(st.value.args) == 1 and isinstance(st.value.args[0], ast.Constant)):
        return str(st.value.args[0].value)
    return None


class Scope:
    """The reads and writes of ``fn``'s top-level statements, by index.

    ``loads[i]``/``stores[i]``: the names statement ``i`` reads (nested functions' free reads
    included) and binds; ``last_store``: the last statement binding each name; ``volatile``:
    names a nested function may rebind (``nonlocal``, ``global``); ``names``: every name the
    function mentions, and ``stores_anywhere`` those it binds (parameters included)."""

    def __init__(self, fn: ast.FunctionDef) -> None:
        self.loads: list[set[str]] = []
        self.stores: list[set[str]] = []
        self.last_store: dict[str, int] = {}
        self._last_load: dict[str, int] = {}
        self.volatile: set[str] = set()
        params = {a.arg for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs}
        params |= {a.arg for a in (fn.args.vararg, fn.args.kwarg) if a is not None}
        self.names: set[str] = set(params) | {fn.name}
        self.stores_anywhere: set[str] = set(params)
        dynamic = False
        for i, st in enumerate(fn.body):
            walk = _Names()
            walk.visit(st)
            self.loads.append(walk.loads | walk.inner)
            self.stores.append(walk.stores)
            for name in walk.stores:
                self.last_store[name] = i
            for name in walk.loads:
                self._last_load[name] = i
            for name in walk.inner:
                self._last_load[name] = _LATER
            self.volatile |= walk.rebound
            self.names |= walk.loads | walk.inner | walk.stores | walk.other
            self.stores_anywhere |= walk.stores
            dynamic = dynamic or bool((walk.loads | walk.inner) & _DYNAMIC)
        self._dynamic = dynamic

    def read_after(self, name: str, index: int) -> bool:
        """Whether ``name`` may be read by statement ``index`` or a later one (or by a nested
        function, at any time)."""
        return self._dynamic or self._last_load.get(name, -1) >= index


class _Names(ast.NodeVisitor):
    """The names one top-level statement reads and binds in the function's own scope
    (``loads``, ``stores``), and those its nested functions read (``inner``)."""

    def __init__(self) -> None:
        self.loads: set[str] = set()
        self.stores: set[str] = set()
        self.inner: set[str] = set()
        self.other: set[str] = set()             # a nested function's own names
        self.rebound: set[str] = set()
        self.depth = 0

    def visit_Name(self, node: ast.Name) -> None:
        if self.depth:
            (self.inner if isinstance(node.ctx, ast.Load) else self.other).add(node.id)
        elif isinstance(node.ctx, ast.Load):
            self.loads.add(node.id)
        else:                                    # Store, Del
            self.stores.add(node.id)
            if isinstance(node.ctx, ast.Del):
                self.loads.add(node.id)

    def _nested(self, node: ast.AST, name: str | None) -> None:
        if name is not None:
            (self.other if self.depth else self.stores).add(name)
        args = getattr(node, "args", None)
        outer = list(getattr(node, "decorator_list", [])) + list(getattr(node, "bases", []))
        if isinstance(args, ast.arguments):
            outer += [d for d in args.defaults + args.kw_defaults if d is not None]
            self.other |= {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}
        for sub in outer:
            self.visit(sub)
        self.depth += 1
        body = node.body if isinstance(node.body, list) else [node.body]
        for sub in body:
            self.visit(sub)
        self.depth -= 1

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._nested(node, node.name)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self._nested(node, node.name)

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self._nested(node, None)

    def visit_Nonlocal(self, node: ast.Nonlocal) -> None:
        self.rebound |= set(node.names)

    def visit_Global(self, node: ast.Global) -> None:
        self.rebound |= set(node.names)
