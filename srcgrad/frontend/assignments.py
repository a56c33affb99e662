"""Assignments: to names, tuples and subscripts, augmented (``x += v``, ``y[i] *= v``,
``L[k] += v``) and starred unpacking (``*hidden, last = layers``).

On an array ``+=`` writes in place: every name that sees the array sees the change.  On a
number it rebinds the name only.  The compiled code is functional (a new value each time),
which agrees with both as long as no other live name sees the array: that is checked, and
the old value is consumed (a later read of it under another name is refused).
"""

from __future__ import annotations

import ast
import copy
from typing import Any, Protocol

import numpy as np

from srcgrad.errors import CompileError, describe
from srcgrad.frontend.aliases import Aliases
from srcgrad.frontend.dicts import Dicts
from srcgrad.frontend.functional import bind_name
from srcgrad.frontend.lists import Lists
from srcgrad.frontend.local_objects import write as write_record
from srcgrad.frontend.object_writes import refuse_statement, refuse_write
from srcgrad.frontend.operators import Operators
from srcgrad.frontend.primitives import Primitives
from srcgrad.frontend.read_only import guard_write
from srcgrad.frontend.scope_index import held_vars
from srcgrad.frontend.statics import Statics
from srcgrad.frontend.tables import constructs as T
from srcgrad.ir import Const, Pack, Stmt, Tree, Var

__all__ = ["Assignments"]

_SYMBOLS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.MatMult: "@",
            ast.Pow: "**", ast.Mod: "%", ast.FloorDiv: "//"}


class Unknown(Protocol):
    """Code that raises when it runs, for a structure not known when compiling."""

    def structure_unknown_assign(self, target: ast.Tuple | ast.List, value: Var) -> None: ...


class Host(Protocol):
    """What assignments read of, and ask of, the lowerer that holds them.  The names in scope
    and the line change as lowering goes on (a helper lowered in place swaps them): they are
    read here when needed, never kept."""

    scope: dict[str, Any]
    body: list[Stmt]
    source_names: dict[str, str]
    static: set[str]
    line: int
    treeless: bool                     # compiled before the structure of the arguments
    param_names: set[str]
    aliases: Aliases
    operators: Operators
    dicts: Dicts
    iteration: Unknown                 # starred unpacking of an argument not known
    prims: Primitives
    statics: Statics
    lists: Lists

    def expr(self, node: ast.expr) -> Any: ...

    def materialize(self, value: Any, hint: str) -> Any: ...

    def emit(self, stmt: Stmt) -> Var: ...

    def fresh(self, base: str) -> str: ...

    def error(self, message: str, node: ast.AST) -> CompileError: ...

    def consume(self, old: Var, line: int, what: str) -> None: ...

    def rename_var(self, var: Var, user_name: str) -> Var: ...

    def live_after(self) -> set[str]: ...



class Assignments:
    """The lowering of assignments; the lowerer's ``assignments``.  It binds names in the
    lowerer's scope and emits through it."""

    def __init__(self, host: Host) -> None:
        self.host = host

    def assign(self, target: ast.expr, value: Any) -> None:
        host = self.host
        if isinstance(target, ast.Subscript):          # o.d["k"] = v: the caller's object
            refuse_write(host, target.value, target, "this assignment")
        if host.dicts.store(target, value):             # d['k'] = v, d['a']['b'] = v
            return
        if isinstance(target, ast.Name):
            if isinstance(value, Var) and value.name not in host.source_names and \
                    any(st.target == value.name for st in reversed(host.body)):
                value = host.rename_var(value, target.id)
            host.scope[target.id] = value
            bind_name(host, target.id, value, target)     # a closure's, a map object
        elif isinstance(target, (ast.Tuple, ast.List)):
            if any(isinstance(e, ast.Starred) for e in target.elts):
                return self.starred_assign(target, value)
            items = list(self.unpack(value, len(target.elts), target))
            for k, t in enumerate(target.elts):
                item = items[k]
                self.assign(t, item)
                now = host.scope.get(t.id) if isinstance(t, ast.Name) else None
                if isinstance(item, Var) and isinstance(now, Var) and now.name != item.name:
                    # renamed for the user's name (``y, y = y, y``): so are the other items
                    items = [now if isinstance(v, Var) and v.name == item.name else v
                             for v in items]
        elif isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
            base = host.expr(target.value)
            if isinstance(base, Pack) and base.is_list:
                key = host.expr(target.slice)
                if isinstance(key, Const) and isinstance(key.value, int) and \
                        -len(base.items) <= key.value < len(base.items):
                    base.items[key.value] = value if isinstance(value, Pack) and not \
                        value.is_list else host.materialize(value, "item")   # a tuple stays one
                    return
            if host.lists.is_list(base) or not host.statics.is_static(value) and \
                    _repeated_list(host, base):        # ys = [None] * n; ys[t] = h
                raise host.error("srcgrad cannot compile assigning to an element of a list "
                                 "built at run time; build it with append", target)
            self.assign(target.value, self.subscript_write(target, value))
        elif isinstance(target, ast.Subscript):          # y[0][1] = v, p["a"][0] = v
            base = host.expr(target.value)
            if not isinstance(base, Var) or host.lists.is_list(base):
                raise host.error("srcgrad compiles subscript writes into arrays", target)
            index = host.statics.index_param(target.slice)
            guard_write(host, base, target)              # NumPy's error for a read-only view
            new = host.prims.prim(T.lookup("index_put"), [base, host.materialize(value, "t")],
                                  {"index": index}, f"{base.name}_set", target)
            host.aliases.write_through("", base, new, target)   # every name of it sees the write
        elif not (isinstance(target, ast.Attribute) and write_record(host, target, value)):
            raise host.error(f"srcgrad cannot compile an assignment to "
                             f"{describe(target).lower()}", target)

    def subscript_write(self, target: ast.Subscript, value: Any) -> Var:
        """``y[i] = v`` as ``y = index_put(y, v, index=i)``: a new array, so that no array
        the caller passed is ever changed (and the adjoint can see the old one)."""
        host = self.host
        base = host.expr(target.value)
        if not isinstance(base, Var):
            raise host.error("srcgrad compiles subscript writes into arrays", target)
        index = host.statics.index_param(target.slice)
        value = host.materialize(value, "t")
        guard_write(host, base, target)                  # NumPy's error for a read-only view
        new = host.prims.prim(T.lookup("index_put"), [base, value], {"index": index},
                              f"{base.name}_set", target)
        host.aliases.write_through(target.value.id, base, new, target)
        return new

    def unpack(self, value: Any, n: int, node: ast.AST) -> list:
        """The ``n`` items ``a, b = value`` binds (an array's rows, a helper's tuple …)."""
        host = self.host
        if isinstance(value, Tree) and value.kind != "dict":
            value = Pack(list(value.children.values()))
        if isinstance(value, Pack):
            if len(value.items) != n:
                raise host.error(f"cannot unpack {len(value.items)} values into {n}", node)
            return value.items
        if isinstance(value, Const):
            return [Const(v) for v in value.value]
        if host.lists.is_runtime_list(value):
            return [host.emit(Stmt(host.fresh(f"{value.name}_item"), "listget", args=[value],
                                   params={"index": i})) for i in range(n)]
        static = value.name in host.static
        made_by = next((st for st in reversed(host.body) if st.target == value.name), None)
        items = made_by.params.get("returns") if made_by is not None and \
            made_by.kind == "call" else None
        if items is not None and items != n:
            raise host.error(f"cannot unpack {items} values into {n}", node)
        if made_by is not None and made_by.kind == "call" and items is None:
            made_by = None                         # a helper returning an array: its rows
        if not static and (made_by is None or made_by.kind not in ("call", "pack")):
            # an array: unpacking takes its rows, as NumPy does
            return [host.prims.prim(T.lookup("getitem"), [value], {"index": i}, f"{value.name}_{i}",
                                    node) for i in range(n)]
        out = []
        for i in range(n):
            name = host.fresh(f"{value.name}_{i}")
            if static:
                host.static.add(name)
            out.append(host.emit(Stmt(name, "unpack", args=[value], params={"index": i})))
        return out

    def aug_assign(self, s: ast.AugAssign) -> None:
        host = self.host
        refuse_statement(host, s)                    # W = o.W; W *= 2: the caller's array
        target = s.target
        symbol = _SYMBOLS.get(type(s.op), "op")
        if not isinstance(target, (ast.Name, ast.Subscript)):
            raise host.error(f"srcgrad cannot compile an augmented assignment to "
                             f"{describe(target).lower()}", target)
        if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
            base = host.scope.get(target.value.id)
            if isinstance(base, Pack) and base.is_list:
                return self._item_aug_assign(s, target.value.id, base, symbol)
            if isinstance(base, Pack):
                raise host.error(f"{target.value.id!r} is a tuple: Python raises TypeError "
                                 f"after {symbol}= has changed its item", target)
            if isinstance(base, Tree):
                raise host.error("srcgrad cannot compile an in-place operator on an item of "
                                 "a pytree argument (it would change the caller's array); "
                                 "write a new value: y = p[k] + v", target)
        if isinstance(target, ast.Name) and isinstance(host.scope.get(target.id), Var):
            name = target.id
            host.aliases.refuse_shared(f"{name} {symbol}=", name, host.scope[name], s)
        value = host.operators.binop(s.op, _as_load(target), s.value, s)
        old = host.scope.get(target.id) if isinstance(target, ast.Name) else None
        guard_write(host, old, s, "output array is read-only", ("view", "T"))   # v += 1
        if isinstance(old, Var):                # an array's old contents are gone (a caller's
            for root in host.aliases.roots(old.name) | {old.name}:       # too, for a parameter)
                host.consume(Var(root), host.line, "an array")
        self.assign(target, value)

    def _item_aug_assign(self, s: ast.AugAssign, name: str, items: Pack, symbol: str
                         ) -> None:
        """``L[k] += v`` on a list literal: ``L[k] = L[k].__iadd__(v)``, the item's array
        changed in place, which nothing else may see."""
        host = self.host
        target = s.target
        key = host.expr(target.slice)
        if not (isinstance(key, Const) and type(key.value) is int and
                -len(items.items) <= key.value < len(items.items)):
            raise host.error(f"srcgrad compiles {symbol}= on an item of a list with a "
                             "constant index in range", target.slice)
        k = key.value % len(items.items)
        item = items.items[k]
        shown = f"{name}[{key.value}] {symbol}="
        if isinstance(item, (Pack, Tree)) or isinstance(item, Const) and isinstance(
                item.value, np.ndarray):
            raise host.error(f"srcgrad cannot compile {shown} on this item (a list, tuple or "
                             "constant array)", target)
        if isinstance(item, Var):
            self._refuse_item_shared(shown, name, items, k, item, s)
        value = host.operators.binop(s.op, _as_load(target), s.value, s)
        if isinstance(item, Var):
            for root in host.aliases.roots(item.name) | {item.name}:
                host.consume(Var(root), host.line, "an array")
        items.items[k] = host.materialize(value, "item")

    def starred_assign(self, target: ast.Tuple | ast.List, value: Any) -> None:
        """``first, *rest = xs`` of a literal or a pytree argument (its length is known):
        the starred name gets a new list of the items in between."""
        host = self.host
        stars = [i for i, e in enumerate(target.elts) if isinstance(e, ast.Starred)]
        if isinstance(value, Tree) and value.kind != "dict":
            value = Pack(list(value.children.values()))
        if len(stars) == 1 and host.treeless and isinstance(value, Var) and \
                value.name in host.param_names:
            return host.iteration.structure_unknown_assign(target, value)
        if len(stars) != 1 or not isinstance(value, Pack):
            raise host.error("srcgrad compiles starred unpacking of a list or tuple literal "
                             "or of a list or tuple argument", target)
        star, items = stars[0], list(value.items)
        after = len(target.elts) - star - 1
        if len(items) < len(target.elts) - 1:
            raise host.error(f"not enough values to unpack (expected at least "
                             f"{len(target.elts) - 1}, got {len(items)})", target)
        middle = Pack(items[star:len(items) - after], is_list=True)
        parts = items[:star] + [middle] + items[len(items) - after:]
        for k, t in enumerate(target.elts):
            item = parts[k]
            self.assign(t.value if isinstance(t, ast.Starred) else t, item)
            now = host.scope.get(t.id) if isinstance(t, ast.Name) else None
            if isinstance(item, Var) and isinstance(now, Var) and now.name != item.name:
                # renamed for the user's name: so is that array among the other items
                parts = [now if isinstance(v, Var) and v.name == item.name else v
                         for v in parts]
                middle.items = [now if isinstance(v, Var) and v.name == item.name else v
                                for v in middle.items]

    def _refuse_item_shared(self, shown: str, name: str, items: Pack, k: int, item: Var,
                            node: ast.AST) -> None:
        """Another live name, or another item of the list, may see the item's array."""
        host = self.host
        others = [n for n, _ in host.aliases.sharers(item, skip=name)]
        if name in host.live_after():
            mine = host.aliases.roots(item.name)
            others += [f"{name}[{j}]" for j, v in enumerate(items.items) if j != k
                       for held in held_vars(v) if host.aliases.roots(held.name) & mine]
        if others:
            raise host.error(f"{shown} (an in-place operator on an item of a list) changes "
                             f"in place the array that {others[0]} also names; srcgrad "
                             "does not follow that change: write "
                             f"{name}[{k}] = {name}[{k}] + …", node)


def _as_load(node: ast.expr) -> ast.expr:
    """A copy of an assignment target, read."""
    load = copy.deepcopy(node)
    for n in ast.walk(load):
        if hasattr(n, "ctx"):
            n.ctx = ast.Load()
    return ast.copy_location(load, node)


def _repeated_list(host: Any, base: Any) -> bool:
    """Whether ``base`` is a list made at run time by repeating a list literal (``[None] *
    n`` of an ``n`` known only then): an array stored into it is refused, a constant is not
    (``shape = [1] * x.ndim; shape[axis] = -1``)."""
    if not isinstance(base, Var) or base.name not in host.static:
        return False
    made = next((st for st in reversed(host.body) if st.target == base.name), None)
    expr = made.expr if made is not None and made.kind == "static" else None
    return isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Mult) and any(
        isinstance(side, ast.List) for side in (expr.left, expr.right))
