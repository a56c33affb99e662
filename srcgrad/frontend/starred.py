"""``f(*xs, **d)`` spelled out when compiling: a call's starred arguments become the items
they stand for (``f(xs[0], xs[1], k=d['k'])``) when the length of ``xs`` and the keys of ``d``
are known when compiling: a tuple or list literal, a tuple or list argument whose structure the
build is specialised for, ``*args`` of a helper lowered in place, a dict literal or a dict
argument.  What Python would unpack only when the code runs (a list built in a loop, an
array's rows) is refused, naming the construct.

A starred value that is not a name or a constant subscript of one is lowered once and bound to
a name of the compiler's own for the call (:func:`spelled_out` unbinds it after).
"""

from __future__ import annotations

import ast
import contextlib
import copy
from collections.abc import Iterator
from typing import Any, Protocol

from srcgrad.errors import CompileError
from srcgrad.frontend.objects import NeedsArgumentTypes
from srcgrad.frontend.parse import Source
from srcgrad.ir import Pack, Tree, Var

__all__ = ["has_starred", "spelled_out", "expand", "display_items"]


class RunTime(Protocol):
    def raise_at_run_time(self, node: ast.AST, message: str) -> None: ...


class Tuples(Protocol):
    def tuple_items(self, value: Any) -> int | None: ...


class Unpacking(Protocol):
    def unpack(self, value: Any, n: int, node: ast.AST) -> list: ...


class Host(Protocol):
    """What spelling a call out reads of, and asks of, the lowerer."""

    user_calls: Tuples                 # a helper's tuple: how many items
    assignments: Unpacking

    scope: dict[str, Any]
    treeless: bool                     # compiled before the arguments' structure is known
    param_names: set[str]
    source_names: dict[str, str]
    wrt_users: frozenset[str]          # the differentiated parameters (empty: a helper's)
    src: Source
    iteration: RunTime

    def expr(self, node: ast.expr) -> Any: ...

    def fresh_internal(self, base: str) -> str: ...

    def error(self, message: str, node: ast.AST) -> CompileError: ...


def has_starred(node: ast.Call) -> bool:
    """Whether the call has ``*xs`` or ``**d`` among its arguments."""
    return any(isinstance(a, ast.Starred) for a in node.args) or any(
        k.arg is None for k in node.keywords)


@contextlib.contextmanager
def spelled_out(host: Host, node: ast.Call) -> Iterator[ast.Call | None]:
    """``node`` with its starred arguments spelled out (names bound for it while inside).
    Before the arguments are seen, a parameter spelled out waits for them (the code is built
    at the call, for its structure) where it is differentiated or a helper's; another one
    gives None, and code that raises if it runs."""
    temps: list[str] = []
    try:
        unknown = _unknown_structure(host, node)
        if unknown is not None:
            message = ("srcgrad spells out *xs and **d of a list, tuple or dict argument "
                       "differentiated (in wrt), of known length and keys; here it is given "
                       "an array or a value known only when the code runs")
            if unknown in host.wrt_users or not host.wrt_users:    # or of a helper's
                raise NeedsArgumentTypes(message, host.src.where(node))    # built at the call
            host.iteration.raise_at_run_time(node, message)
            yield None
            return
        yield expand(host, node, temps)
    finally:
        for name in temps:
            host.scope.pop(name, None)


def expand(host: Host, node: ast.Call, temps: list[str] | None) -> ast.Call | None:
    """A copy of ``node`` with ``*xs`` and ``**d`` spelled out; ``temps`` collects the names
    bound for values that are not names (None: such values give None instead).  Where one
    is bound so, every argument is, in Python's order (a draw or a print keeps its place)."""
    if temps is not None and any(_needs_name(a.value) for a in node.args
                                 if isinstance(a, ast.Starred)):
        node = _in_order(host, node, temps)
    args: list[ast.expr] = []
    for a in node.args:
        if not isinstance(a, ast.Starred):
            args.append(a)
            continue
        items = _positional(host, a.value, temps, a)
        if items is None:
            return None
        args.extend(items)
    keywords: list[ast.keyword] = []
    for k in node.keywords:
        if k.arg is not None:
            keywords.append(k)
            continue
        items = _keywords(host, k.value, temps, k)
        if items is None:
            return None
        keywords.extend(items)
    names = [k.arg for k in keywords]
    repeated = next((n for n in names if names.count(n) > 1), None)
    if repeated is not None:
        raise host.error(f"{ast.unparse(node.func)}() got multiple values for keyword "
                         f"argument {repeated!r}", node)
    plain = ast.copy_location(ast.Call(node.func, args, keywords), node)
    plain.spelled_from = getattr(node, "spelled_from", node)     # where the user wrote it
    return plain


def _needs_name(value: ast.expr) -> bool:
    return not _path(value) and not (isinstance(value, (ast.Tuple, ast.List)) and not any(
        isinstance(e, ast.Starred) for e in value.elts))


def _in_order(host: Host, node: ast.Call, temps: list[str]) -> ast.Call:
    """``node`` with each argument that is not a name or a constant lowered now, in order,
    and read from a name of the compiler's own."""
    def named(value: ast.expr) -> ast.expr:
        if isinstance(value, ast.Constant) or _path(value):
            return value
        name = host.fresh_internal("argument")
        host.scope[name] = host.expr(value)
        temps.append(name)
        return ast.copy_location(ast.Name(name, ast.Load()), value)

    args = [ast.copy_location(ast.Starred(named(a.value), ast.Load()), a)
            if isinstance(a, ast.Starred) else named(a) for a in node.args]
    keywords = [ast.copy_location(ast.keyword(k.arg, named(k.value)), k) for k in node.keywords]
    out = ast.copy_location(ast.Call(node.func, args, keywords), node)
    out.spelled_from = getattr(node, "spelled_from", node)
    return out


def display_items(host: Host, elts: list[ast.expr]) -> list:
    """The items of a list or tuple display, ``*xs`` among them spelled out (``[*xs, y]``)
    where the length of ``xs`` is known when compiling."""
    out = []
    for e in elts:
        if not isinstance(e, ast.Starred):
            out.append(host.expr(e))
            continue
        root = e.value
        while isinstance(root, ast.Subscript) and isinstance(root.slice, ast.Constant):
            root = root.value
        value = host.scope.get(root.id) if isinstance(root, ast.Name) else None
        if host.treeless and isinstance(value, Var) and value.name in host.param_names:
            raise NeedsArgumentTypes(f"srcgrad spells out *{ast.unparse(e.value)} of a list or "
                                     "tuple argument when it is differentiated (in wrt)",
                                     host.src.where(e))             # built at the call
        value = host.expr(e.value)
        if isinstance(value, Pack):
            out.extend(value.items)
        elif isinstance(value, Tree) and value.kind != "dict":
            out.extend(value.children.values())
        else:
            raise host.error(f"srcgrad compiles *{ast.unparse(e.value)} in a list or tuple "
                             "when it is a tuple or list of known length (a literal, a tuple "
                             "or list argument, *args)", e)
    return out


def _unknown_structure(host: Host, node: ast.Call) -> str | None:
    """The parameter spelled out, in the code built before the arguments are seen."""
    if not host.treeless:
        return None
    for a in [*node.args, *node.keywords]:
        if isinstance(a, ast.Starred) or isinstance(a, ast.keyword) and a.arg is None:
            root = a.value
            while isinstance(root, ast.Subscript) and isinstance(root.slice, ast.Constant):
                root = root.value
            value = host.scope.get(root.id) if isinstance(root, ast.Name) else None
            if isinstance(value, Var) and value.name in host.param_names:
                return host.source_names.get(value.name)
    return None


def _positional(host: Host, value: ast.expr, temps: list[str] | None, at: ast.AST
                ) -> list[ast.expr] | None:
    if isinstance(value, (ast.Tuple, ast.List)) and not any(
            isinstance(e, ast.Starred) for e in value.elts):
        return list(value.elts)                            # f(*[a, b]), f(*(a, b))
    base, lowered = _named(host, value, temps)
    if base is None:
        return None
    count = host.user_calls.tuple_items(lowered)
    if count is not None:                         # a helper's tuple: its items
        if temps is None:
            return None
        name = host.fresh_internal("items")
        host.scope[name] = lowered = Pack(host.assignments.unpack(lowered, count, at))
        temps.append(name)
        base = ast.copy_location(ast.Name(name, ast.Load()), value)
    if isinstance(lowered, Tree) and lowered.kind != "dict":
        count = len(lowered.children)
    elif isinstance(lowered, Pack):
        count = len(lowered.items)
    else:
        what = "a dict" if isinstance(lowered, Tree) else (
            "a value whose length is known only when the code runs (a list built in a loop, "
            "an array's rows)")
        raise host.error(f"srcgrad compiles *{ast.unparse(value)} in a call when it is a tuple "
                         "or list of known length (a literal, a tuple or list argument, *args); "
                         f"here it is {what}", at)
    return [_item(base, i, value) for i in range(count)]


def _keywords(host: Host, value: ast.expr, temps: list[str] | None, at: ast.AST
              ) -> list[ast.keyword] | None:
    base, lowered = _named(host, value, temps)
    if base is None:
        return None
    keys = list(lowered.children) if isinstance(lowered, Tree) and lowered.kind == "dict" \
        else None
    if keys is None or not all(isinstance(k, str) for k in keys):
        raise host.error(f"srcgrad compiles **{ast.unparse(value)} in a call when it is a dict "
                         "with string keys known when compiling (a dict literal or a dict "
                         "argument)", at)
    return [ast.copy_location(ast.keyword(k, _item(base, k, value)), value) for k in keys]


def _named(host: Host, value: ast.expr, temps: list[str] | None) -> tuple[ast.expr | None, Any]:
    """An expression reading ``value`` again without lowering anything twice, and its value:
    a name or constant subscripts of one as they are, anything else bound to a name of the
    compiler's own (None where ``temps`` is None)."""
    if _path(value):
        return value, host.expr(value)
    if temps is None:
        return None, None
    name = host.fresh_internal("starred")
    host.scope[name] = host.expr(value)
    temps.append(name)
    return ast.copy_location(ast.Name(name, ast.Load()), value), host.scope[name]


def _path(node: ast.expr) -> bool:
    """A name, or constant subscripts of one (``p['ln_1']``, ``pairs[0]``)."""
    while isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        node = node.value
    return isinstance(node, ast.Name)


def _item(base: ast.expr, key: Any, at: ast.AST) -> ast.expr:
    item = ast.Subscript(copy.deepcopy(base), ast.Constant(key), ast.Load())
    for n in ast.walk(item):
        ast.copy_location(n, at)
    return item
