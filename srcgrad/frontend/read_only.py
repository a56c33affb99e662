"""Writes into read-only views: ``sliding_window_view(x, 2)`` (unless ``writeable=True``) and
``np.broadcast_to(x, shape)`` hand back arrays NumPy will not write into.

The compiled code writes functionally (``index_put`` on a copy), so it would write where NumPy
raises.  A write into such an array, or into a view of one through modelled links (basic
indices, transposes), raises NumPy's ``ValueError`` where it stands in the code: on the path
the function takes, as NumPy does.  A write into what may share a read-only array's memory in
a way not modelled (a reshape of it: a view or a copy) is refused.
"""

from __future__ import annotations

import ast
from typing import Any, Protocol

from srcgrad.errors import CompileError
from srcgrad.ir import Stmt, Var

__all__ = ["guard_write", "refuse_block_write"]

READ_ONLY = frozenset({"sliding_window_view", "broadcast_to"})
"""The primitives whose result NumPy marks read-only (``sliding_window_view``: by default)."""

_EXACT = ("view", "int", "T")


class Links(Protocol):
    """The links the alias analysis keeps (the lowerer's ``aliases``)."""

    def links(self, name: str) -> list: ...


class Host(Protocol):
    """What the guard reads of, and asks of, the lowerer that holds it."""

    body: list[Stmt]
    aliases: Links

    def emit(self, stmt: Stmt) -> Var: ...

    def error(self, message: str, node: ast.AST) -> CompileError: ...


def guard_write(host: Host, base: Any, node: ast.AST,
                message: str = "assignment destination is read-only",
                exact: tuple[str, ...] = _EXACT) -> None:
    """Before a write into ``base``: NumPy's ``ValueError`` raised here when ``base`` is (a
    view of) a read-only array, through links of the ``exact`` kinds; refused when it may
    share one's memory otherwise (``v[0, 0]`` may be a view or a scalar: ``+=`` on it)."""
    if not isinstance(base, Var):
        return
    made = {st.target: st for st in host.body if st.kind == "prim" and
            st.target is not None and getattr(st.fn, "name", None) in READ_ONLY}
    if not made:
        return
    todo, seen = [(base.name, True)], set()
    while todo:
        name, sure = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        st = made.get(name)
        known = _read_only(st) if st is not None else False
        if known is not False:
            if not (sure and known):
                raise host.error(
                    f"this write goes into an array that may share the memory of the "
                    f"result of {st.fn.name} (line {st.line}), which NumPy may mark "
                    "read-only, in a way srcgrad does not follow; take a copy first", node)
            _raise_here(host, node, message)
            return
        todo += [(b, sure and kind in exact) for b, kind, _ in host.aliases.links(name)]


def refuse_block_write(host: Host, base: Any, node: ast.AST) -> None:
    """A branch or loop body that writes into ``base``: refused when ``base`` may share a
    read-only array's memory (inside the block that is not known; NumPy raises at the
    write, on the path that reaches it, which the eager engine follows)."""
    st = _reaches(host, base)
    if st is not None:
        raise host.error(
            f"this branch or loop body writes into an array that shares the memory of the "
            f"result of {st.fn.name} (line {st.line}), which NumPy marks read-only (a write "
            "into it raises ValueError); srcgrad compiles such a write outside a block only",
            node)


def _reaches(host: Host, base: Any) -> Stmt | None:
    """The statement making a possibly read-only array whose memory ``base`` may share."""
    if not isinstance(base, Var):
        return None
    made = {st.target: st for st in host.body if st.kind == "prim" and
            st.target is not None and getattr(st.fn, "name", None) in READ_ONLY}
    todo, seen = [base.name], set()
    while made and todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        st = made.get(name)
        if st is not None and _read_only(st) is not False:
            return st
        todo += [b for b, _, _ in host.aliases.links(name)]
    return None


def _read_only(st: Stmt) -> bool | None:
    """Whether the result of ``st`` is read-only; None when known only as the code runs
    (``writeable=flag``)."""
    writeable = st.params.get("writeable", False)
    if st.fn.name == "broadcast_to":
        return True
    if isinstance(writeable, (bool, int)):
        return not writeable
    return None


def _raise_here(host: Host, node: ast.AST, message: str) -> None:
    """``raise ValueError(message)`` at this point, as NumPy raises at the write."""
    raise_ = ast.Raise(ast.Call(ast.Name("ValueError", ast.Load()), [ast.Constant(message)],
                                []), None)
    for n in ast.walk(raise_):
        ast.copy_location(n, node)
    host.emit(Stmt(None, "effect", expr=raise_, uses=()))
