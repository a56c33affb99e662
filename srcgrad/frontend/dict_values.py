"""A dict built by the function, as the compiler holds it while lowering: a tree whose
values may be constants and literals as well as names, changed in place (every name bound to
the dict sees a change, as in Python)."""

from __future__ import annotations

import ast
from typing import Any

from srcgrad.ir import Pack, Tree, Var, const_expr

__all__ = ["Local", "ordered_keys", "replaced", "holds", "holds_local"]


class Local(Tree):
    """A dict (or a list or tuple inside one) built by the function; its values may be
    constants and literals as well as names (``leaves`` lists the names only)."""

    def leaves(self, path: tuple = ()) -> list[tuple[tuple, Any]]:
        out = []
        for key, child in self.children.items():
            out += _leaves(child, path + (key,))
        return out

    def with_leaves(self, values: dict) -> Tree:
        return _rebuilt(self, (), values)

    def literal(self) -> ast.expr:
        items = [_literal(c) for c in self.children.values()]
        if self.kind == "dict":
            return ast.Dict([ast.Constant(k) for k in self.children], items)
        return ast.List(items, ast.Load()) if self.kind is list else ast.Tuple(items, ast.Load())


def _leaves(value: Any, path: tuple) -> list:
    if isinstance(value, Tree):
        return value.leaves(path)
    if isinstance(value, Pack):
        return [leaf for i, v in enumerate(value.items) for leaf in _leaves(v, path + (i,))]
    return [(path, value)] if isinstance(value, Var) else []


def _rebuilt(value: Any, path: tuple, values: dict) -> Any:
    if isinstance(value, Local):
        return Local(value.kind, {k: _rebuilt(c, path + (k,), values)
                                  for k, c in value.children.items()})
    if isinstance(value, Tree):
        tree = Tree(value.kind, {k: _rebuilt(c, path + (k,), values)
                                 for k, c in value.children.items()})
        if getattr(value, "order", None) is not None:
            tree.order = value.order
        return tree
    if isinstance(value, Pack):
        return Pack([_rebuilt(v, path + (i,), values) for i, v in enumerate(value.items)],
                    value.is_list)
    return values[path] if isinstance(value, Var) else value


def _literal(value: Any) -> ast.expr:
    if isinstance(value, Tree):
        return value.literal()
    if isinstance(value, Pack):
        kind = ast.List if value.is_list else ast.Tuple
        return kind([_literal(v) for v in value.items], ast.Load())
    if isinstance(value, Var):
        return ast.Name(value.name, ast.Load())
    return const_expr(value)


def replaced(value: Any, old: Var, new: Var) -> Any:
    """``value`` with ``old`` replaced by ``new``: in place in dicts and literals (every name
    of them sees it), a copy of a pytree argument's tree."""
    if isinstance(value, Var):
        return new if value.name == old.name else value
    if isinstance(value, Local):
        for k, c in list(value.children.items()):
            value.children[k] = replaced(c, old, new)
    elif isinstance(value, Pack):
        value.items[:] = [replaced(v, old, new) for v in value.items]
    elif isinstance(value, Tree):
        return value.replaced(old, new)
    return value


def holds(value: Any, tree: Tree) -> bool:
    """Whether ``value`` is ``tree`` or holds it."""
    if value is tree:
        return True
    items = value.children.values() if isinstance(value, Tree) else value.items \
        if isinstance(value, Pack) else ()
    return any(holds(v, tree) for v in items)


def holds_local(value: Any) -> bool:
    if isinstance(value, Local):
        return True
    return isinstance(value, Pack) and any(holds_local(v) for v in value.items)


def ordered_keys(tree: Tree) -> list:
    """A dict's keys in insertion order (a dict argument's tree records the caller's)."""
    order = getattr(tree, "order", None)
    return list(order) if order is not None else list(tree.children)
