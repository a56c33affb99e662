"""The user's names in scope while lowering, indexed by the variables they hold.

An in-place write must rebind every name that sees the written array
(:mod:`srcgrad.frontend.aliases`).
Scanning the whole scope at each write made lowering quadratic for code that alternates
writes and reads; :class:`Scope` keeps the index that lets a write look only at the names
that may hold what it touches.
"""

from __future__ import annotations

from typing import Any

from srcgrad.ir import Pack, Tree, Var

__all__ = ["Scope", "held_vars", "literal_items"]


def held_vars(value: Any) -> list[Var]:
    """The array variables a scope value holds (itself, a literal's items, a tree's leaves)."""
    if isinstance(value, Var):
        return [value]
    if isinstance(value, Pack):
        return [v for item in value.items for v in held_vars(item)]
    if isinstance(value, Tree):
        return [v for _, v in value.leaves()]
    return []


def literal_items(pack: Any) -> list:
    """The items of a list or tuple literal, nested ones flattened (none of a tree's, nor of
    another value's)."""
    return [] if not isinstance(pack, Pack) else [v for item in pack.items
            for v in (literal_items(item) if isinstance(item, Pack) else [item])]


class Scope(dict):
    """The user's names and their values, indexed by the variables they hold, so that a
    rename does not scan every name (which made lowering quadratic).  A name bound to a
    ``Var`` is indexed by it; a list or tree may change in place: always a candidate.
    Entries left stale (``popitem``, ``clear``) only add candidates."""

    def __init__(self) -> None:
        super().__init__()
        self._by_var: dict[str, set[str]] = {}
        self._containers: set[str] = set()
        self._order: dict[str, int] = {}      # a name's place in the dict's own order
        self._count = 0

    def _drop(self, key: str) -> None:
        old = dict.get(self, key)
        if isinstance(old, Var):
            self._by_var[old.name].discard(key)
        self._containers.discard(key)

    def __setitem__(self, key: str, value: Any) -> None:
        self._drop(key)
        if not dict.__contains__(self, key):    # a new key goes last, as in a dict
            self._order[key] = self._count
            self._count += 1
        dict.__setitem__(self, key, value)
        if isinstance(value, Var):
            self._by_var.setdefault(value.name, set()).add(key)
        elif isinstance(value, (Pack, Tree)):
            self._containers.add(key)

    def __delitem__(self, key: str) -> None:
        self._drop(key)
        dict.__delitem__(self, key)

    def pop(self, key: str, *default: Any) -> Any:
        if key in self:
            self._drop(key)
        return dict.pop(self, key, *default)

    def setdefault(self, key: str, default: Any = None) -> Any:
        if key not in self:
            self[key] = default
        return self[key]

    def update(self, *args: Any, **kwargs: Any) -> None:
        for key, value in dict(*args, **kwargs).items():
            self[key] = value

    def __ior__(self, other: Any) -> Scope:
        self.update(other)
        return self

    def __reduce_ex__(self, protocol: Any) -> tuple:
        return dict, (dict(self),)       # a copy is a plain dict (its holders are scanned)

    def holding(self, name: str) -> set[str]:
        """The names that may hold the variable ``name`` (a superset; check each)."""
        return self._by_var.get(name, set()) | self._containers

    def holding_any(self, names: set[str]) -> list[str]:
        """The names that may hold one of the variables ``names`` (a superset; check each),
        in the order the dict iterates them."""
        found = set(self._containers)
        for name in names:
            found |= self._by_var.get(name, frozenset())
        return sorted((k for k in found if dict.__contains__(self, k)),
                      key=self._order.__getitem__)
