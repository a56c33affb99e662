"""What a user function returns, read off its lowered IR: one value, a tuple, or a list.

A caller lowers a call of a helper by what comes back.  A tuple's items are unpacked (indexing
it as an array would be wrong), a run-time list's items are list reads, and a tuple holding a
tuple or a list is lowered in place, so that the caller sees its structure.  The ``return``
statement alone cannot tell (``return pair``, ``return other_helper(x)``, a list built by
``append``); the IR can: a ``pack`` statement, a ``call`` of a helper returning a tuple, an
``append``.  What the IR cannot follow (a tuple that a branch assigns, an item of a list of
tuples) is refused with a message rather than guessed.
"""

from __future__ import annotations

from typing import Any

from srcgrad.ir import Const, Function, Stmt, Var

__all__ = ["LIST", "NESTED", "Kind", "Unfollowed", "result_kind"]

LIST = "list"          # a Python list built at run time
NESTED = "nested"      # a tuple (or list literal) holding a tuple or a run-time list

Kind = int | str | None     # None: one value; n: a tuple of n plain items; LIST; NESTED


class Unfollowed(Exception):
    """The function returns a value whose structure the compiler does not follow."""


def result_kind(ir: Function) -> Kind:
    """What ``ir`` returns: None for one value (an array, a number), ``n`` for a tuple (or a
    list literal) of ``n`` plain items, :data:`LIST` for a list built at run time,
    :data:`NESTED` for a tuple holding tuples or lists.  Raises :class:`Unfollowed` (its
    message says why) for a tuple the compiler cannot follow."""
    reader = _Reader()
    kind = reader.kind(ir, ir.result)
    if kind == LIST:
        reader.plain_items(ir)
    return kind


class _Reader:
    """Follows a value back through the statements that made it."""

    def __init__(self) -> None:
        self.makers: dict[int, tuple[Function, dict[str, Stmt]]] = {}
        self.parents: dict[int, tuple[Function, Stmt]] = {}     # block -> where it runs

    def enter(self, ir: Function, st: Stmt) -> list[Function]:
        """The blocks of a branch or loop statement of ``ir`` (whose parameters are the
        statement's inputs)."""
        blocks = [b for b in st.fn if isinstance(b, Function)]
        for block in blocks:
            self.parents[id(block)] = (ir, st)
        return blocks

    def handed_in(self, block: Function, name: str) -> tuple[Function, Any] | None:
        """The value outside a block that its parameter ``name`` is (None: not known)."""
        entry = self.parents.get(id(block))
        if entry is None or name not in block.params:
            return None
        ir, st = entry
        inputs = list(st.args[1:]) if st.kind == "branch" else [None, *st.args]
        k = block.params.index(name)
        return (ir, inputs[k]) if k < len(inputs) and inputs[k] is not None else None

    def maker(self, ir: Function, name: str) -> Stmt | None:
        entry = self.makers.get(id(ir))
        if entry is None or entry[0] is not ir:
            entry = self.makers[id(ir)] = (ir, {st.target: st for st in ir.body if st.target})
        return entry[1].get(name)

    def kind(self, ir: Function, value: Any) -> Kind:
        if isinstance(value, Const):
            return len(value.value) if isinstance(value.value, tuple) else None
        if not isinstance(value, Var):
            return None
        made = self.maker(ir, value.name)
        if made is None:            # a parameter: an array, or a block's list
            outer = self.handed_in(ir, value.name)
            if outer is not None:
                return self.kind(*outer)
            return LIST if value.name in ir.lists else None
        if made.kind == "pack":
            items = [self.kind(ir, a) for a in made.args]
            return NESTED if any(k is not None for k in items) else len(made.args)
        if made.kind == "call":
            count = made.params.get("returns")
            if count is not None:
                return count        # a helper holding tuples or lists is lowered in place
            return LIST if made.target in ir.lists else None
        if made.kind == "unpack":
            return self.item_kind(ir, made)
        if made.kind == "listget":
            if made.target in ir.lists:             # a slice of a list
                return LIST
            self.plain_items(ir)
            return None
        if made.kind == "append" or value.name in ir.lists:
            return LIST
        return None                 # a primitive's array, a static value, a pytree leaf

    def item_kind(self, ir: Function, made: Stmt) -> Kind:
        """The kind of ``made`` = item ``index`` of a pack, a call, a branch or a loop."""
        index = made.params["index"]
        source = self.maker(ir, made.args[0].name) if isinstance(made.args[0], Var) else None
        if source is None:
            return LIST if made.target in ir.lists else None
        if source.kind == "pack":
            return self.kind(ir, source.args[index])
        if source.kind in ("branch", "loop"):
            if made.target in ir.lists:           # list literals of the blocks: a list
                return LIST
            kinds = self.block_kinds(ir, source, index)
            if any(isinstance(k, int) or k == NESTED for k in kinds):
                what = "assigned in a branch" if source.kind == "branch" else \
                    "carried through a loop"
                raise Unfollowed(f"returns a tuple {what}, which srcgrad does not compile "
                                 "yet (return the items as a tuple literal: return a, b)")
            return LIST if LIST in kinds else None
        return LIST if made.target in ir.lists else None

    def block_kinds(self, ir: Function, st: Stmt, index: int) -> set[Kind]:
        """The kinds of output ``index`` of a branch or loop, as each block returns it."""
        blocks = self.enter(ir, st)
        if st.kind == "loop":                       # the body (a while loop's test after it)
            blocks = [st.fn[0]] if isinstance(st.fn[0], Function) else []
        return {self.kind(block, Var(name)) if (name := block.returned(index)) is not None
                else None for block in blocks}

    def plain_items(self, ir: Function) -> None:
        """Refuses a list (or an item of one) when some list of ``ir`` may hold tuples or
        lists: what its items are is known only at run time."""
        for block, st in self.statements(ir):
            if st.kind == "append" or st.kind == "pack" and st.params.get("list"):
                held = st.args[1:] if st.kind == "append" else st.args
                if any(self.kind(block, a) is not None for a in held):
                    raise Unfollowed("returns a list that holds tuples or lists, or an "
                                     "item of one, which srcgrad does not follow (return "
                                     "the arrays, or np.stack of the list)")

    def statements(self, ir: Function) -> Any:
        """``(function, statement)`` for every statement of ``ir`` and of its blocks."""
        for st in ir.body:
            yield ir, st
            if st.kind in ("branch", "loop"):
                for block in self.enter(ir, st):
                    yield from self.statements(block)
