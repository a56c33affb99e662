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
"""

from __future__ import annotations

import ast
from typing import Any

import numpy as np

from srcgrad.frontend.expressions import Pack, Tree
from srcgrad.frontend.scope_index import Scope, held_vars
from srcgrad.frontend.tables import constructs as T
from srcgrad.ir import Stmt, Var
from srcgrad.runtime.rules.core import inverse_permutation

__all__ = ["Aliases", "Scope", "VIEW_FUNCTIONS", "WRITING_FUNCTIONS", "WRITING_METHODS",
           "held_vars"]

# Primitives and NumPy functions (by name) whose result may share memory with an argument;
# tests/test_views_declared.py checks every primitive of the rule table against NumPy.
VIEW_FUNCTIONS = frozenset({
    "split_piece", "linalg_diagonal", "linalg_matrix_transpose", "to_scalar", "unreduce",
    "reshape", "ravel", "transpose", "swapaxes", "moveaxis", "rollaxis", "squeeze",
    "expand_dims", "diagonal", "diag", "broadcast_to", "broadcast_arrays", "atleast_1d",
    "atleast_2d", "atleast_3d", "flip", "fliplr", "flipud", "rot90", "real", "imag", "split",
    "array_split", "hsplit", "vsplit", "dsplit", "unstack", "asarray", "asanyarray",
    "ascontiguousarray", "asfortranarray", "require", "view", "stop_gradient", "to_device",
    "matrix_transpose", "permute_dims", "sliding_window_view", "as_strided",
    "nan_to_num", "T", "mT", "getitem", "flatten_view", "match_tangent", "as_columns",
    "from_columns", "weights_along",
})
# NumPy functions that write into an argument.
WRITING_FUNCTIONS = frozenset({
    "copyto", "put", "place", "putmask", "fill_diagonal", "put_along_axis", "shuffle",
})
# Array methods that change the array they are called on.
WRITING_METHODS = frozenset({
    "fill", "sort", "partition", "resize", "itemset", "setflags", "put", "setfield",
    "byteswap", "shuffle", "__setitem__", "__iadd__", "__isub__", "__imul__", "__itruediv__",
})


def _index_kind(index: Any) -> str | None:
    """How ``x[index]`` relates to ``x``: ``view``, ``int``, ``copy`` or None (not known)."""
    keys = index if isinstance(index, tuple) else (index,)
    if any(isinstance(k, Var) for k in keys):
        return None
    if all(isinstance(k, (int, np.integer)) and not isinstance(k, bool) for k in keys):
        return "int"
    for k in keys:
        if isinstance(k, slice):
            if not all(p is None or isinstance(p, (int, np.integer)) and not isinstance(p, bool)
                       for p in (k.start, k.stop, k.step)):
                return None
        elif isinstance(k, (list, np.ndarray, bool, str)):
            return "copy"     # lists, arrays, masks: advanced, a copy (a str: a pytree's key,
            #                   whose leaves the pytree specialisation follows exactly)
        elif not (k is None or k is Ellipsis or isinstance(k, (int, np.integer))):
            return None                         # a dict's key, say: what it holds
    return "view"


class Aliases:
    """Alias and view bookkeeping (mixed into the Lowerer)."""

    wrt_users: frozenset[str] = frozenset()    # the user's names of differentiated parameters

    def _opaque_key(self, st: Stmt) -> bool:
        """``p['W']`` on a value that is not a differentiated pytree argument (whose leaves
        the pytree specialisation follows exactly): the item is the array the container
        holds, so a write through it must be seen through ``p`` too."""
        index = st.params.get("index")
        keys = index if isinstance(index, tuple) else (index,)
        if not any(isinstance(k, str) for k in keys) or not isinstance(st.args[0], Var):
            return False
        roots = self.roots(st.args[0].name)
        return not all(self.source_names.get(r) in self.wrt_users for r in roots
                       if r in self.param_names) or not roots <= self.param_names

    # ------------------------------------------------------------------------- links
    def links(self, name: str) -> list:
        return self.views.get(name, [])

    def roots(self, name: str) -> frozenset[str]:
        """The storages ``name`` may share (names that are no view of anything).

        Remembered: a value carried through many loops is linked to each loop's input in
        turn, and walking that chain at every question made lowering quadratic.  A change of
        links forgets what it may change (``_forget_roots``)."""
        memo = self.__dict__.setdefault("_roots_memo", {})
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
        (A rename, ``_rename_links``, pops the old name's links itself: what is remembered
        for that name, which nothing reads again, keeps what it shared.)"""
        memo = self.__dict__.get("_roots_memo")
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

    def note_views(self, st: Stmt) -> None:
        """Record what a statement's result may share with its inputs."""
        target = st.target
        if st.kind in ("pack", "append"):
            self.note_held(st)
        if target is None:
            return
        if st.kind == "prim":
            name = st.fn.name
            if name == "getitem":
                kind = _index_kind(st.params.get("index"))
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
            for base, kind, param in self._static_links(st):
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
        elif st.kind in ("call", "branch", "loop"):
            self.block_links(st)

    def _static_links(self, st: Stmt) -> list:
        expr = st.expr
        names = {u: Var(u) for u in st.uses}
        if isinstance(expr, ast.Subscript) and isinstance(expr.value, ast.Name) and \
                expr.value.id in names:
            try:
                kind = _index_kind(ast.literal_eval(expr.slice))
            except (ValueError, SyntaxError, TypeError):
                kind = None
            return [] if kind == "copy" else [(names[expr.value.id], kind, None)]
        if isinstance(expr, ast.Attribute) and expr.attr in VIEW_FUNCTIONS:
            return [(names[u], None, None) for u in names]
        if isinstance(expr, (ast.IfExp, ast.Name)):
            return [(names[u], None, None) for u in names]
        if isinstance(expr, ast.Call):
            func = expr.func
            word = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            method = isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) \
                and func.value.id in names
            if word in VIEW_FUNCTIONS or method and word not in T.METHODS:
                return [(names[u], None, None) for u in names]
        return []

    # ------------------------------------------------------------------------ writes
    def holders(self, skip: str | None = None) -> list[tuple[str, Var]]:
        """``(user name, variable)`` for every array a name in scope holds."""
        return [(n, v) for n, value in self.scope.items() if n != skip
                for v in held_vars(value)]

    def holders_of(self, roots: set[str], skip: str | None = None) -> list[tuple[str, Any]]:
        """``(user name, value)``, in scope order, for every name (other than ``skip``) that
        may hold an array sharing one of the storages ``roots``: a superset (check each).

        A variable sees a root only through a chain of links, each indexed in
        ``linked_from``: the names holding one of the roots' descendants are the candidates,
        so that a write costs what it touches, not the size of the scope."""
        scope = self.scope
        if not isinstance(scope, Scope):               # a helper lowered in place
            return [(n, value) for n, value in scope.items() if n != skip]
        reach, todo = set(roots), list(roots)
        while todo:
            for name in self.linked_from.get(todo.pop(), ()):
                if name not in reach:
                    reach.add(name)
                    todo.append(name)
        return [(n, scope[n]) for n in scope.holding_any(reach) if n != skip]

    def sharing(self, var: Var, skip: str | None = None) -> list[tuple[str, Var]]:
        """Live names (other than ``skip``) that may see ``var``'s storage."""
        mine = self.roots(var.name)
        live = self.live_after()
        return [(n, v) for n, value in self.holders_of(mine, skip) if n in live
                for v in held_vars(value) if self.roots(v.name) & mine]

    def refuse_shared(self, what: str, name: str, var: Var, node: ast.AST) -> None:
        """Refuse an in-place change of ``var`` that another live name would see."""
        others = self.sharing(var, skip=name)
        if others:
            other = others[0][0]
            raise self.error(
                f"{what} changes in place the array that {other!r} also names (a view or "
                f"another name of it); srcgrad does not follow that change: write "
                f"{name} = {name} + … or {name} = {name}.copy() first", node)

    def write_through(self, name: str, old: Var, new: Var, node: ast.AST) -> None:
        """``old`` (bound to ``name``) now holds ``new``'s values: rebind, exactly, every
        name that sees that storage through modelled views; refuse a live one that may see
        it otherwise."""
        self.consume(old, self.line, "an array")
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
        live = self.live_after()
        for n, value in self.holders_of(touched, skip=name):   # what updates holds too
            for v in held_vars(value):
                if v.name in updates:
                    self._rebind(n, v, updates[v.name])
                elif self.roots(v.name) & touched:
                    fresh = self._recompute(v, updates, node)
                    if fresh is not None:
                        self._rebind(n, v, fresh)
                    elif n in live:
                        raise self.error(
                            f"writing into {shown} changes {n!r} too (it may share that array, "
                            f"as a view or another name, in a way srcgrad does not follow); "
                            f"take a copy first: {n} = {n}.copy()", node)
        for var in updates:
            self.consume(Var(var), self.line, "an array")
        for var in unknown - set(updates):
            self.consume(Var(var), self.line, "an array")

    def _put_back(self, base: Var, part: Var, kind: str, param: Any, node: ast.AST) -> Var:
        """The base array after its view ``part`` was written."""
        hint = self.source_names.get(base.name, base.name)
        if kind == "T":
            params = {} if param is None else {"axes": inverse_permutation(param)}
            return self.prim(np.transpose, [part], params, f"{hint}_set", node)
        return self.prim(T.lookup("index_put"), [base, part], {"index": param},
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
            new = self.prim(np.transpose, [fresh], {} if param is None else {"axes": param},
                            hint, node)
        else:
            new = self.prim(T.lookup("getitem"), [fresh], {"index": param}, hint, node)
        updates[var.name] = new
        return new

    def _rebind(self, user: str, old: Var, new: Var) -> None:
        value = self.scope[user]
        if isinstance(value, Var):
            self.scope[user] = new
        elif isinstance(value, Pack):
            _replace_in_pack(value, old, new)
        elif isinstance(value, Tree):          # a copy: the parameter's tree names its leaves
            self.scope[user] = value.replaced(old, new)

    def refuse_writing_code(self, stmt: Stmt) -> None:
        """Code printed verbatim (a static value, a print) that would write into an array:
        ``out=``, ``np.copyto``, ``rng.shuffle(x)``, ``z.sort()`` of a variable ``z``."""
        for n in ast.walk(stmt.expr) if stmt.expr is not None else ():
            if not isinstance(n, ast.Call):
                continue
            func = n.func
            word = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            method = isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and \
                func.value.id in stmt.uses
            if any(k.arg == "out" for k in n.keywords) or word in WRITING_FUNCTIONS or \
                    method and word in WRITING_METHODS or \
                    word in ("at", "reduceat") and isinstance(func, ast.Attribute):
                raise self.error(f"srcgrad cannot compile {ast.unparse(func)}(...) here: it "
                                 "writes into an array in place", self._node_of_line())


def _replace_in_pack(pack: Pack, old: Var, new: Var) -> None:
    for i, item in enumerate(pack.items):
        if isinstance(item, Var) and item.name == old.name:
            pack.items[i] = new
        elif isinstance(item, Pack):
            _replace_in_pack(item, old, new)
        elif isinstance(item, Tree):
            pack.items[i] = item.replaced(old, new)
