"""Aliases and views: which names see one array's storage, so that a write in place is either
followed exactly through every name that sees it, or refused.

The compiled code is functional: ``y[i] = v`` makes a new array (``index_put``), and the
caller's arrays are never written.  In NumPy the write shows through every name bound to the
same array and through every view of it.  Each statement that may return storage shared with
its inputs records a *link* ``(base, kind, param)``:

``view``  a basic index (slices, ``None``, ``...``, some ints): a view both ways;
``int``   integers only: a view of a row, or a scalar copy when every axis is indexed (a write
          through it is a view's, a write into the base may or may not show through it);
``T``     a transpose (``param``: its axes);
``None``  may share storage in a way not modelled (reshape, a user function's result ...).

A write into an array rewrites, exactly, every live name that sees it through ``view``/``T``
links (``r = y[0:2]; r[0] = 0`` writes into ``y`` too); a live name that may see it in a way
not modelled is refused with a CompileError naming it.

The lowerer holds one :class:`Aliases`, which keeps the links; what it needs of the lowerer
is the :class:`Host` interface.
"""

from __future__ import annotations

import ast
from typing import Any, Protocol

import numpy as np

from srcgrad.errors import CompileError
from srcgrad.frontend.dict_values import holds_local, replaced
from srcgrad.frontend.primitives import Primitives
from srcgrad.frontend.scope_index import Scope, held_vars
from srcgrad.frontend.tables import constructs as T
from srcgrad.frontend.tables.views import (
    VIEW_FUNCTIONS,
    WRITING_FUNCTIONS,
    WRITING_METHODS,
    index_kind,
    static_links,
    writing_call,
)
from srcgrad.ir import Pack, Stmt, Tree, Var
from srcgrad.runtime.rules.core import inverse_permutation

__all__ = ["Aliases", "Host", "VIEW_FUNCTIONS", "WRITING_FUNCTIONS", "WRITING_METHODS", "held"]


class Host(Protocol):
    """What the alias analysis reads of, and asks of, the lowerer that holds it.  The names
    in scope, the line and what is read later change as lowering goes on (a helper lowered in
    place swaps them): they are read here when needed, never kept."""

    scope: dict[str, Any]
    line: int
    param_names: set[str]              # the SSA names of the function's parameters
    wrt_users: frozenset[str]          # the user's names of the differentiated parameters
    prims: Primitives

    def live_after(self) -> set[str]: ...

    def consume(self, old: Var, line: int, what: str) -> None: ...

    def error(self, message: str, node: ast.AST) -> CompileError: ...

    def node_of_line(self) -> ast.AST: ...


def held(st: Stmt) -> list:
    """What a statement puts into a list or tuple built at run time (a pack's items, the
    appended value)."""
    if st.kind == "pack":
        return st.args
    return st.args[1:] if st.kind == "append" else []


class Aliases:
    """The links of one function's variables and the run-time lists that hold them; the
    lowerer's ``aliases``.  ``body`` and ``source_names`` are the lowerer's own (written by
    it, read here)."""

    def __init__(self, host: Host, body: list[Stmt], source_names: dict[str, str]) -> None:
        self.host, self.body, self.source_names = host, body, source_names
        self.views: dict[str, list] = {}              # SSA name -> links to what it may share
        self.linked_from: dict[str, set[str]] = {}    # base -> names that may link to it
        self.item_links: dict[str, dict] = {}   # a call/branch/loop pack: each output's links
        self._roots: dict[str, frozenset[str]] = {}   # what ``roots`` found (see there)
        self._held_in: dict[str, list[tuple[int | None, Stmt]]] = {}   # see ``note_held``

    def _opaque_key(self, st: Stmt) -> bool:
        """``p['W']`` on a value that is not a differentiated pytree argument (whose leaves
        the pytree specialisation follows exactly): the item is the array the container
        holds, so a write through it must be seen through ``p`` too."""
        index = st.params.get("index")
        keys = index if isinstance(index, tuple) else (index,)
        if not any(isinstance(k, str) for k in keys) or not isinstance(st.args[0], Var):
            return False
        roots, params = self.roots(st.args[0].name), self.host.param_names
        return not all(self.source_names.get(r) in self.host.wrt_users for r in roots
                       if r in params) or not roots <= params

    # ------------------------------------------------------------------------- links
    def links(self, name: str) -> list:
        return self.views.get(name, [])

    def roots(self, name: str) -> frozenset[str]:
        """The storages ``name`` may share (names that are no view of anything).

        Remembered: a value carried through many loops is linked to each loop's input in
        turn, and walking that chain at every question made lowering quadratic.  A change of
        links forgets what it may change (``_forget_roots``)."""
        memo = self._roots
        found = memo.get(name)
        if found is not None:
            return found
        out, todo, seen = set(), [name], set()
        while todo:
            n = todo.pop()
            if n in seen:
                continue
            seen.add(n)
            known = memo.get(n)
            if known is not None:
                out |= known
                continue
            bases = [b for b, _, _ in self.links(n)]
            if not bases:
                out.add(n)
            todo += bases
        memo[name] = found = frozenset(out)
        return found

    def _forget_roots(self, name: str) -> None:
        """``name``'s links change: forget the roots of it and of every name linked to it.
        (A rename pops the old name's links itself: what is remembered for that name, which
        nothing reads again, keeps what it shared.)"""
        memo = self._roots
        if not memo:
            return
        todo, seen = [name], {name}
        while todo:
            n = todo.pop()
            memo.pop(n, None)
            for other in self.linked_from.get(n, ()):
                if other not in seen:
                    seen.add(other)
                    todo.append(other)

    def link(self, target: str, base: Any, kind: str | None = None, param: Any = None) -> None:
        if isinstance(base, Var) and base.name != target:
            self._forget_roots(target)
            self.views.setdefault(target, []).append((base.name, kind, param))
            self.linked_from.setdefault(base.name, set()).add(target)

    def set_links(self, target: str, links: list) -> None:
        """Replace ``target``'s links (indexed by base: ``linked_from`` may over-approximate)."""
        before = self.views.get(target)
        if before:
            self.rekey_held(target, before, links)
        self._forget_roots(target)
        self.views[target] = links
        for base, _, _ in links:
            self.linked_from.setdefault(base, set()).add(target)

    def rename(self, old: str, new: str) -> None:
        """``old`` is now ``new`` in the links and in the scope: only the names indexed as
        linking to ``old``, and holding it, are looked at (not every name: linear)."""
        if old in self.views:
            self.set_links(new, self.views.pop(old))
        for name in sorted(self.linked_from.get(old, ())):
            links = self.views.get(name)
            if links is not None and any(b == old for b, _, _ in links):
                self.set_links(name, [(new if b == old else b, k, p) for b, k, p in links])
        if old in self.item_links:
            self.item_links[new] = self.item_links.pop(old)
        scope = self.host.scope
        users = sorted(scope.holding(old)) if isinstance(scope, Scope) else list(scope)
        for user in users:                              # other names of a written array
            if user in scope and any(v.name == old for v in held_vars(scope[user])):
                self._rebind(user, Var(old), Var(new))

    def note_views(self, st: Stmt) -> None:
        """Record what a statement's result may share with its inputs (a call, a branch or a
        loop: what its block says, recorded by the lowerer's ``sharing``)."""
        target = st.target
        if st.kind in ("pack", "append"):
            self.note_held(st)
        if target is None:
            return
        if st.kind == "prim":
            name = st.fn.name
            if name == "getitem":
                kind = index_kind(st.params.get("index"))
                if self._opaque_key(st):
                    self.link(target, st.args[0], None, st.params.get("index"))
                elif kind != "copy":
                    self.link(target, st.args[0], kind, st.params.get("index"))
            elif name == "transpose":
                self.link(target, st.args[0], "T", st.params.get("axes"))
            elif name in VIEW_FUNCTIONS:
                for a in st.args:
                    self.link(target, a)
        elif st.kind == "static":
            for base, kind, param in static_links(st):
                self.link(target, base, kind, param)
        elif st.kind in ("pack", "append", "listget"):
            for a in st.args:                     # a container holds, an item is held
                self.link(target, a)
        elif st.kind == "unpack":
            shared = self.item_links.get(st.args[0].name)
            if shared is None:
                self.link(target, st.args[0])
            else:
                for base in shared.get(st.params["index"], ()):
                    self.link(target, base)

    # ------------------------------------------------------------- what lists hold
    # The statements that put a variable into a run-time list or tuple, indexed by the
    # variable's name as ``(position in the body, statement)``, so that the lowerer's
    # ``consume`` looks them up instead of scanning the body at every in-place write
    # (quadratic for code that alternates writes and reads).  An entry is checked before it
    # counts: the statement must still stand at its position (``del body[mark:]`` drops
    # statements) and still hold the variable; a rename re-keys the entries (``set_links``).
    def note_held(self, st: Stmt) -> None:
        """Index a statement that puts values into a list or tuple built at run time."""
        body = self.body
        at = len(body) - 1 if body and body[-1] is st else None    # None: look it up
        for a in held(st):
            if isinstance(a, Var):
                self._held_in.setdefault(a.name, []).append((at, st))

    def rekey_held(self, target: str, before: list, after: list) -> None:
        """``target``'s links changed from ``before`` to ``after`` (a rename of what the
        statement making ``target`` holds): its index entries follow the new names."""
        index = self._held_in
        gone = {b for b, _, _ in before} - {b for b, _, _ in after}
        entries = [e for b in gone for e in index.get(b, ()) if e[1].target == target]
        if entries:
            for b in {b for b, _, _ in after} - {b for b, _, _ in before}:
                index.setdefault(b, []).extend(entries)

    def first_holder(self, name: str) -> Stmt | None:
        """The first statement of the body that holds ``name`` in a list or tuple, if any."""
        body, found = self.body, None
        for at, st in self._held_in.get(name, ()):
            if at is None:
                at = next((k for k, s in enumerate(body) if s is st), None)
            elif at >= len(body) or body[at] is not st:
                continue                                # dropped from the body
            if at is not None and any(isinstance(a, Var) and a.name == name for a in held(st)) \
                    and (found is None or at < found[0]):
                found = (at, st)
        return found[1] if found is not None else None

    # ------------------------------------------------------------------------ writes
    def holders(self, skip: str | None = None) -> list[tuple[str, Var]]:
        """``(user name, variable)`` for every array a name in scope holds."""
        return [(n, v) for n, value in self.host.scope.items() if n != skip
                for v in held_vars(value)]

    def holders_of(self, roots: set[str], skip: str | None = None) -> list[tuple[str, Any]]:
        """``(user name, value)``, in scope order, for every name (other than ``skip``) that
        may hold an array sharing one of the storages ``roots``: a superset (check each).

        A variable sees a root only through a chain of links, each indexed in
        ``linked_from``: the names holding one of the roots' descendants are the candidates,
        so that a write costs what it touches, not the size of the scope."""
        scope = self.host.scope
        if not isinstance(scope, Scope):               # a helper lowered in place
            return [(n, value) for n, value in scope.items() if n != skip]
        reach, todo = set(roots), list(roots)
        while todo:
            for name in self.linked_from.get(todo.pop(), ()):
                if name not in reach:
                    reach.add(name)
                    todo.append(name)
        return [(n, scope[n]) for n in scope.holding_any(reach) if n != skip]

    def sharers(self, var: Var, skip: str | None = None) -> list[tuple[str, Var]]:
        """Live names (other than ``skip``) that may see ``var``'s storage."""
        mine = self.roots(var.name)
        live = self.host.live_after()
        return [(n, v) for n, value in self.holders_of(mine, skip) if n in live
                for v in held_vars(value) if self.roots(v.name) & mine]

    def refuse_shared(self, what: str, name: str, var: Var, node: ast.AST) -> None:
        """Refuse an in-place change of ``var`` that another live name would see."""
        others = self.sharers(var, skip=name)
        if others:
            other = others[0][0]
            raise self.host.error(
                f"{what} changes in place the array that {other!r} also names (a view or "
                f"another name of it); srcgrad does not follow that change: write "
                f"{name} = {name} + … or {name} = {name}.copy() first", node)

    def write_through(self, name: str, old: Var, new: Var, node: ast.AST) -> None:
        """``old`` (bound to ``name``) now holds ``new``'s values: rebind, exactly, every
        name that sees that storage through modelled views; refuse a live one that may see
        it otherwise."""
        host = self.host
        host.consume(old, host.line, "an array")
        shown = repr(name) if name else ast.unparse(getattr(node, "value", node))
        updates = {old.name: new}
        cur, cur_new = old.name, new
        while self.links(cur):
            links = self.links(cur)
            base, kind, param = links[0]
            if len(links) != 1 or kind not in ("view", "int", "T"):
                break
            base_new = self._put_back(Var(base), cur_new, kind, param, node)
            self._forget_roots(base_new.name)
            self.views.pop(base_new.name, None)          # the base again, not a view
            self.set_links(cur_new.name, [(base_new.name, kind, param)])  # still its view
            updates[base] = base_new
            cur, cur_new = base, base_new
        unknown = self.roots(cur) if self.links(cur) else set()
        if self.links(cur):                              # still shares what it shared
            self.set_links(cur_new.name, list(self.links(cur)))
        touched = self.roots(cur)
        live = host.live_after()
        for n, value in self.holders_of(touched, skip=name):   # what updates holds too
            for v in held_vars(value):
                if v.name in updates:
                    self._rebind(n, v, updates[v.name])
                elif self.roots(v.name) & touched:
                    fresh = self._recompute(v, updates, node)
                    if fresh is not None:
                        self._rebind(n, v, fresh)
                    elif n in live:
                        raise host.error(
                            f"writing into {shown} changes {n!r} too (it may share that array, "
                            f"as a view or another name, in a way srcgrad does not follow); "
                            f"take a copy first: {n} = {n}.copy()", node)
        for var in updates:
            host.consume(Var(var), host.line, "an array")
        for var in unknown - set(updates):
            host.consume(Var(var), host.line, "an array")

    def _put_back(self, base: Var, part: Var, kind: str, param: Any, node: ast.AST) -> Var:
        """The base array after its view ``part`` was written."""
        hint = self.source_names.get(base.name, base.name)
        if kind == "T":
            params = {} if param is None else {"axes": inverse_permutation(param)}
            return self.host.prims.prim(np.transpose, [part], params, f"{hint}_set", node)
        return self.host.prims.prim(T.lookup("index_put"), [base, part], {"index": param},
                              f"{hint}_set", node)

    def _recompute(self, var: Var, updates: dict, node: ast.AST) -> Var | None:
        """A view ``var`` read again from its written base (None: not modelled)."""
        if var.name in updates:
            return updates[var.name]
        links = self.links(var.name)
        if len(links) != 1 or links[0][1] not in ("view", "T"):
            return None
        base, kind, param = links[0]
        fresh = self._recompute(Var(base), updates, node)
        if fresh is None:
            return None
        hint = self.source_names.get(var.name, var.name)
        if kind == "T":
            new = self.host.prims.prim(np.transpose, [fresh],
                                 {} if param is None else {"axes": param}, hint, node)
        else:
            new = self.host.prims.prim(T.lookup("getitem"), [fresh], {"index": param}, hint, node)
        updates[var.name] = new
        return new

    def _rebind(self, user: str, old: Var, new: Var) -> None:
        scope = self.host.scope
        value = scope[user]
        if holds_local(value):        # a dict built here: every name of it sees the change
            replaced(value, old, new)
        elif isinstance(value, Var):
            scope[user] = new
        elif isinstance(value, Pack):
            _replace_in_pack(value, old, new)
        elif isinstance(value, Tree):          # a copy: the parameter's tree names its leaves
            scope[user] = value.replaced(old, new)

    def refuse_writing_code(self, stmt: Stmt) -> None:
        """Refuse code printed verbatim that would write into an array (``writing_call``)."""
        func = writing_call(stmt)
        if func is not None:
            raise self.host.error(f"srcgrad cannot compile {ast.unparse(func)}(...) here: it "
                                  "writes into an array in place", self.host.node_of_line())


def _replace_in_pack(pack: Pack, old: Var, new: Var) -> None:
    for i, item in enumerate(pack.items):
        if isinstance(item, Var) and item.name == old.name:
            pack.items[i] = new
        elif isinstance(item, Pack):
            _replace_in_pack(item, old, new)
        elif isinstance(item, Tree):
            pack.items[i] = item.replaced(old, new)
