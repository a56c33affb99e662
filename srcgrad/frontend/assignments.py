"""Assignments beyond the plain one: augmented (``x += v``, ``y[i] *= v``, ``L[k] += v``)
and starred unpacking (``*hidden, last = layers``).

On an array ``+=`` writes in place: every name that sees the array sees the change.  On a
number it rebinds the name only.  The compiled code is functional (a new value each time),
which agrees with both as long as no other live name sees the array: that is checked, and
the old value is consumed (a later read of it under another name is refused).
"""

from __future__ import annotations

import ast
import copy
from typing import Any

import numpy as np

from srcgrad.errors import describe
from srcgrad.frontend.expressions import Pack, Tree
from srcgrad.frontend.scope_index import held_vars
from srcgrad.ir import Const, Var

__all__ = ["Assignments"]

_SYMBOLS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.MatMult: "@",
            ast.Pow: "**", ast.Mod: "%", ast.FloorDiv: "//"}


class Assignments:
    """The lowering of augmented and starred assignments (mixed into the Lowerer)."""

    def aug_assign(self, s: ast.AugAssign) -> None:
        target = s.target
        symbol = _SYMBOLS.get(type(s.op), "op")
        if not isinstance(target, (ast.Name, ast.Subscript)):
            raise self.error(f"srcgrad cannot compile an augmented assignment to "
                             f"{describe(target).lower()}", target)
        if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
            base = self.scope.get(target.value.id)
            if isinstance(base, Pack) and base.is_list:
                return self._item_aug_assign(s, target.value.id, base, symbol)
            if isinstance(base, Pack):
                raise self.error(f"{target.value.id!r} is a tuple: Python raises TypeError "
                                 f"after {symbol}= has changed its item", target)
            if isinstance(base, Tree):
                raise self.error("srcgrad cannot compile an in-place operator on an item of "
                                 "a pytree argument (it would change the caller's array); "
                                 "write a new value: y = p[k] + v", target)
        if isinstance(target, ast.Name) and isinstance(self.scope.get(target.id), Var):
            name = target.id
            self.aliases.refuse_shared(f"{name} {symbol}=", name, self.scope[name], s)
        value = self.binop(s.op, _as_load(target), s.value, s)
        old = self.scope.get(target.id) if isinstance(target, ast.Name) else None
        if isinstance(old, Var):                # an array's old contents are gone (a caller's
            for root in self.aliases.roots(old.name) | {old.name}:       # too, for a parameter)
                self.consume(Var(root), self.line, "an array")
        self.assign(target, value)

    def _item_aug_assign(self, s: ast.AugAssign, name: str, items: Pack, symbol: str
                         ) -> None:
        """``L[k] += v`` on a list literal: ``L[k] = L[k].__iadd__(v)``, the item's array
        changed in place, which nothing else may see."""
        target = s.target
        key = self.expr(target.slice)
        if not (isinstance(key, Const) and type(key.value) is int and
                -len(items.items) <= key.value < len(items.items)):
            raise self.error(f"srcgrad compiles {symbol}= on an item of a list with a "
                             "constant index in range", target.slice)
        k = key.value % len(items.items)
        item = items.items[k]
        shown = f"{name}[{key.value}] {symbol}="
        if isinstance(item, (Pack, Tree)) or isinstance(item, Const) and isinstance(
                item.value, np.ndarray):
            raise self.error(f"srcgrad cannot compile {shown} on this item (a list, tuple or "
                             "constant array)", target)
        if isinstance(item, Var):
            self._refuse_item_shared(shown, name, items, k, item, s)
        value = self.binop(s.op, _as_load(target), s.value, s)
        if isinstance(item, Var):
            for root in self.aliases.roots(item.name) | {item.name}:
                self.consume(Var(root), self.line, "an array")
        items.items[k] = self.materialize(value, "item")

    def starred_assign(self, target: ast.Tuple | ast.List, value: Any) -> None:
        """``first, *rest = xs`` of a literal or a pytree argument (its length is known):
        the starred name gets a new list of the items in between."""
        stars = [i for i, e in enumerate(target.elts) if isinstance(e, ast.Starred)]
        if isinstance(value, Tree) and value.kind != "dict":
            value = Pack(list(value.children.values()))
        if len(stars) == 1 and self.treeless and isinstance(value, Var) and \
                value.name in self.param_names:
            return self._structure_unknown_assign(target, value)
        if len(stars) != 1 or not isinstance(value, Pack):
            raise self.error("srcgrad compiles starred unpacking of a list or tuple literal "
                             "or of a list or tuple argument", target)
        star, items = stars[0], list(value.items)
        after = len(target.elts) - star - 1
        if len(items) < len(target.elts) - 1:
            raise self.error(f"not enough values to unpack (expected at least "
                             f"{len(target.elts) - 1}, got {len(items)})", target)
        middle = Pack(items[star:len(items) - after], is_list=True)
        parts = items[:star] + [middle] + items[len(items) - after:]
        for t, item in zip(target.elts, parts):
            self.assign(t.value if isinstance(t, ast.Starred) else t, item)

    def _refuse_item_shared(self, shown: str, name: str, items: Pack, k: int, item: Var,
                            node: ast.AST) -> None:
        """Another live name, or another item of the list, may see the item's array."""
        others = [n for n, _ in self.aliases.sharers(item, skip=name)]
        if name in self.live_after():
            mine = self.aliases.roots(item.name)
            others += [f"{name}[{j}]" for j, v in enumerate(items.items) if j != k
                       for held in held_vars(v) if self.aliases.roots(held.name) & mine]
        if others:
            raise self.error(f"{shown} (an in-place operator on an item of a list) changes "
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
