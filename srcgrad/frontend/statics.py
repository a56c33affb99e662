"""Static values: shapes, counts, indices and the like, which carry no gradient and are
computed by the generated code as plain Python (a ``static`` statement prints the user's own
expression, its names replaced by their SSA names and its globals bound in the module).  Also
the compile-time value of a name, read without emitting anything.
"""

from __future__ import annotations

import ast
import builtins
import copy
import math
from typing import Any, Protocol

import numpy as np

from srcgrad.errors import CompileError
from srcgrad.frontend.local_objects import refuse_value
from srcgrad.frontend.parse import Env, Source
from srcgrad.frontend.tables import constructs as T
from srcgrad.ir import Closure, Const, Pack, Stmt, Tree, Var, bind_values

__all__ = ["Statics", "call_form"]


class KnownKeys(Protocol):
    """The keys of dicts known when compiling (the lowerer's ``dicts``)."""

    def note_known(self, target: str, node: ast.expr) -> None: ...


class Host(Protocol):
    """What the lowering of static values reads of, and asks of, the lowerer that holds it.
    The names in scope (and the source and globals, for a helper lowered in place) change as
    lowering goes on: they are read here when needed, never kept."""

    src: Source
    env: Env
    scope: dict[str, Any]
    reserved: set[str]                 # names the generated module needs for itself
    used: set[str]                     # names taken in the generated code
    static: set[str]                   # SSA names of values with no gradient
    inline: set[str]                   # SSA names printed in place
    free: dict[str, Any]               # the module's globals, bound when it loads
    global_aliases: dict[str, str]     # a user global -> its name in the module
    dicts: KnownKeys

    def expr(self, node: ast.expr) -> Any: ...

    def emit(self, stmt: Stmt) -> Var: ...

    def fresh(self, base: str) -> str: ...

    def fresh_internal(self, base: str) -> str: ...

    def error(self, message: str, node: ast.AST) -> CompileError: ...


class Statics:
    """The lowering of static values and of globals' names; the lowerer's ``statics``."""

    def __init__(self, host: Host) -> None:
        self.host = host

    def is_static(self, value: Any) -> bool:
        if isinstance(value, Const):
            return not isinstance(value.value, np.ndarray)
        if isinstance(value, Pack):
            return all(self.is_static(v) for v in value.items)
        return isinstance(value, Var) and value.name in self.host.static

    def static_expr(self, node: ast.expr, hint: str = "value") -> Var:
        host = self.host
        drawn = getattr(host, "randomness", None)   # its draws that always run: drawn first,
        if drawn is not None:                       # through the helper that notes them
            drawn.lower_within(node)
        expr, uses = self.rename(node)
        target = host.fresh(hint)
        host.static.add(target)
        host.dicts.note_known(target, node)
        return host.emit(Stmt(target, "static", expr=expr, uses=uses))

    def index_param(self, node: ast.expr) -> Any:
        """An index as a static parameter: a Python value, or a Var of a runtime index."""
        written = call_form(node)
        if all(n.id == "slice" for n in ast.walk(written) if isinstance(n, ast.Name)):
            try:
                tree = ast.fix_missing_locations(ast.Expression(written))
                return eval(compile(tree, "<index>", "eval"),
                            {"slice": slice, "__builtins__": {}})
            except Exception:  # noqa: BLE001 - not a literal after all
                pass
        index = self.static_expr(written, hint="index")
        self.host.inline.add(index.name)
        return index

    def peek(self, node: ast.expr) -> Any:
        """The compile-time value of a name, or of constant subscripts of a structure,
        without emitting anything (None when it is not one of those)."""
        if isinstance(node, ast.Name):
            return self.host.scope.get(node.id)
        if isinstance(node, ast.Subscript) and _literal(node.slice):
            base = self.peek(node.value)
            if isinstance(base, (Tree, Pack)):
                return self.host.expr(node)
        return None

    def global_name(self, name: str, value: Any, node: ast.AST | None = None) -> str:
        """The generated module's name for the user's global ``name`` (holding ``value``),
        bound when the module loads.  It is ``name`` itself unless the generated code needs
        that name for something of its own (a helper, ``np``, a builtin it calls, the shape
        guard's ``dispatch``): then a fresh one, so that no user name can shadow the code's."""
        host = self.host
        if name == "np" and value is np or getattr(builtins, name, _MISSING) is value:
            return name                       # what the module has under that name already
        alias = host.global_aliases.get(name)
        if alias is None:
            keep = name not in host.reserved or name == "math" and value is math
            alias = host.global_aliases[name] = name if keep else host.fresh_internal(name)
            host.used.add(alias)              # no later name of the generated code takes it
        bind_values(host.free, {alias: value}, host.src.where(node or host.src.node))
        return alias

    def note_global(self, name: str) -> str:
        """A user global read by code printed verbatim: its name in the generated module,
        bound when the module loads (``name`` itself for what is not a global: a local of
        the generated code, or ``slice``)."""
        try:
            value = self.host.env.resolve(name)
        except Exception:  # noqa: BLE001 - a local of the generated code, or slice
            return name
        return self.global_name(name, value)

    def rename(self, node: ast.AST) -> tuple[ast.AST, tuple[str, ...]]:
        """``node`` with the user's names replaced by their SSA names (and values)."""
        uses: list[str] = []
        statics, host = self, self.host

        class Renamer(ast.NodeTransformer):
            def visit_Name(self, n: ast.Name) -> ast.AST:
                if getattr(n, "srcgrad_drawn", False):     # a draw lowered already
                    uses.append(n.id)
                    return n
                value = host.scope.get(n.id)
                if isinstance(value, Var):
                    uses.append(value.name)
                    return ast.copy_location(ast.Name(value.name, n.ctx), n)
                if isinstance(value, Const):
                    return ast.copy_location(T.const_expr(value), n)
                if isinstance(value, Pack):
                    return ast.copy_location(self.pack(value), n)
                if isinstance(value, Closure):
                    raise host.error(f"the lambda {n.id!r} is compiled only where it is "
                                     "called", n)
                if isinstance(value, Tree):       # len(xs) of a pytree argument
                    if value.root is None:
                        uses.extend(v.name for _, v in value.leaves())
                        return ast.copy_location(value.literal(), n)
                    uses.append(value.root.name)
                    return ast.copy_location(ast.Name(value.root.name, n.ctx), n)
                refuse_value(host, value, n)          # an object made in the function
                return ast.copy_location(ast.Name(statics.note_global(n.id), n.ctx), n)

            def pack(self, value: Pack) -> ast.expr:
                items = []
                for v in value.items:
                    if isinstance(v, Pack):
                        items.append(self.pack(v))
                    elif isinstance(v, Const):
                        items.append(T.const_expr(v))
                    elif isinstance(v, Var):
                        uses.append(v.name)
                        items.append(ast.Name(v.name, ast.Load()))
                    else:
                        raise host.error("srcgrad cannot use a pytree inside a list here", node)
                kind = ast.List if value.is_list else ast.Tuple
                return kind(items, ast.Load())
        drawn = getattr(host, "randomness", None)      # its draws: their results, not again
        memo = drawn.results_in(node) if drawn is not None else {}
        new = Renamer().visit(copy.deepcopy(node, memo))
        return new, tuple(dict.fromkeys(uses))


_MISSING = object()


def _literal(node: ast.expr) -> bool:
    """An index made of constants only (``0``, ``-1``, ``1:``, ``'w'``)."""
    return all(isinstance(n, (ast.Constant, ast.Slice, ast.UnaryOp, ast.USub, ast.Tuple,
                              ast.Load)) for n in ast.walk(node))


def call_form(node: ast.expr) -> ast.expr:
    """An index with its slices written as ``slice(...)`` calls: a plain expression."""
    class Slices(ast.NodeTransformer):
        def visit_Slice(self, s: ast.Slice) -> ast.AST:
            parts = [s.lower, s.upper, s.step]
            return ast.Call(ast.Name("slice", ast.Load()),
                            [self.visit(p) if p is not None else ast.Constant(None)
                             for p in parts], [])
    return Slices().visit(copy.deepcopy(node))
