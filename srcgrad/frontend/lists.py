"""Lists lowered: literals, ``append``, element reads, comprehensions, ``sum`` and joins.

A list literal stays a compile-time :class:`~srcgrad.frontend.expressions.Pack` while its length is
known (it
then costs nothing at run time).  A list that a loop or a branch builds becomes a run-time
Python list: ``append`` is a statement of its own (``target`` is the list after the append,
the same object), ``xs[i]`` a ``listget``, and ``np.stack``/``np.concatenate``/``sum`` of it
the list primitives of the rule table.  Comprehensions and generator expressions are the loop
they stand for.

Writes in place (an append, ``y[i] = v``) make a new SSA version of the list or array.  The
names that see an array (second names, views, pytree leaves) are moved to the new version by
:mod:`srcgrad.frontend.aliases`; the old version is *consumed*: any read of it left over (a list
that
holds it, a value the compiler could not follow) is refused instead of silently diverging.
"""

from __future__ import annotations

import ast
import copy
from typing import Any

import numpy as np

from srcgrad.frontend.expressions import Pack
from srcgrad.ir import Const, Stmt, Var
from srcgrad.runtime.rules.lists import concatenate_list, stack_list, sum_list

__all__ = ["Lists", "is_append"]


def is_append(node: ast.AST) -> bool:
    """``xs.append(v)`` (a call of the method ``append`` on a name)."""
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr == "append" and isinstance(node.func.value, ast.Name))


class Lists:
    """The lowering of lists (mixed into the Lowerer)."""

    def is_list(self, value: Any) -> bool:
        if isinstance(value, Pack):
            return value.is_list
        return isinstance(value, Var) and value.name in self.lists

    def is_runtime_list(self, value: Any) -> bool:
        return isinstance(value, Var) and value.name in self.lists

    # ------------------------------------------------------------------ in-place writes
    def consume(self, old: Var, line: int, what: str) -> None:
        """``old`` was changed in place: later reads of it would diverge from Python, and so
        would a list or tuple built at run time that holds it."""
        st = self.aliases.first_holder(old.name)
        if st is not None:
            user = self.source_names.get(old.name, old.name)
            raise self.error(
                f"{user!r} is changed in place after it was put in a list or tuple (line "
                f"{st.line}); in NumPy the change shows through the list too, which "
                "srcgrad does not follow: put a copy in the list", self.node_of_line())
        self.consumed[old.name] = (line, what)

    def check_fresh(self, stmt: Stmt) -> None:
        for name in stmt.reads():
            if name in self.consumed:
                line, what = self.consumed[name]
                user = self.source_names.get(name, name)
                raise self.error(
                    f"{user!r} names {what} that was changed in place at line {line} under "
                    f"another name; srcgrad does not follow two names for one mutable value "
                    f"(make a copy, or use one name)", self.node_of_line())

    def node_of_line(self) -> ast.AST:
        node = ast.Pass()
        node.lineno, node.col_offset = self.line, 0
        node.end_lineno, node.end_col_offset = self.line, 0
        return node

    # ------------------------------------------------------------------------- append
    def append(self, call: ast.Call) -> None:
        """``xs.append(v)``: on a literal, at compile time; on a run-time list, a statement."""
        if len(call.args) != 1 or call.keywords:
            raise self.error("list.append takes one argument", call)
        name = call.func.value.id
        lst = self.expr(call.func.value)
        value = self.materialize(self.expr(call.args[0]), "item")
        if not self.is_list(lst):
            raise self.error(f"srcgrad compiles .append on lists; {name!r} is not one here",
                             call)
        if isinstance(lst, Pack):
            lst.items.append(value)                  # every name of this literal sees it
            return
        target = self.fresh(name)
        self.source_names[target] = name
        self.emit(Stmt(target, "append", args=[lst, value]))
        self.lists.add(target)
        self.consume(lst, self.line, "a list")
        self.scope[name] = Var(target)

    # ----------------------------------------------------------------------- reading
    def list_item(self, base: Any, node: ast.Subscript) -> Any:
        """``xs[i]`` (an element) or ``xs[a:b]`` (a list) of a run-time list."""
        if isinstance(base, Pack):
            if self.is_static(base):
                return self.static_expr(node)
            base = self.materialize(Pack(base.items, is_list=True), "items")
        index = self.index_param(node.slice)
        hint = f"{base.name}_item" if not isinstance(index, slice) else f"{base.name}_part"
        target = self.emit(Stmt(self.fresh(hint), "listget", args=[base],
                                params={"index": index},
                                uses=(index.name,) if isinstance(index, Var) else ()))
        if isinstance(index, slice):
            self.lists.add(target.name)
        return target

    # --------------------------------------------------------------- comprehensions
    def comprehension(self, node: ast.ListComp | ast.GeneratorExp | ast.DictComp) -> Any:
        """``[e for x in xs if c]``: ``items = []``, then the loop that appends ``e``
        (``{k: v for …}``: ``items = {}``, then the loop that stores ``items[k] = v``)."""
        as_dict = isinstance(node, ast.DictComp)
        name = self.fresh_internal("table" if as_dict else "items")
        gens = copy.deepcopy(node.generators)
        elt = ast.Tuple([copy.deepcopy(node.key), copy.deepcopy(node.value)], ast.Load()) \
            if as_dict else copy.deepcopy(node.elt)
        renames = {}
        for gen in gens:
            if gen.is_async:
                raise self.error("srcgrad cannot compile async comprehensions", node)
            for n in ast.walk(gen.target):
                if isinstance(n, ast.Name) and (n.id in self.scope or n.id in renames):
                    renames[n.id] = self.fresh_internal(n.id)   # comprehension names are local
        if renames:
            for part in [elt, *gens]:
                for n in ast.walk(part):
                    if isinstance(n, ast.Name) and n.id in renames:
                        n.id = renames[n.id]
            gens[0].iter = copy.deepcopy(node.generators[0].iter)  # read in the outer scope
        body: list[ast.stmt] = [ast.Expr(ast.Call(ast.Attribute(
            ast.Name(name, ast.Load()), "append", ast.Load()), [elt], []))]
        if as_dict:                                 # items[key] = value
            body = [ast.Assign([ast.Subscript(ast.Name(name, ast.Load()), elt.elts[0],
                                              ast.Store())], elt.elts[1])]
        for gen in reversed(gens):
            for cond in reversed(gen.ifs):
                body = [ast.If(cond, body, [])]
            body = [ast.For(gen.target, gen.iter, body, [])]
        start = ast.Assign([ast.Name(name, ast.Store())],
                           ast.Dict([], []) if as_dict else ast.List([], ast.Load()))
        for st in [start, *body]:
            for n in ast.walk(st):
                ast.copy_location(n, node)
        self._live.append(self.live_after() | {name})
        try:
            self.statement(start)
            self.statement(body[0])
        finally:
            self._live.pop()
        return self.scope.pop(name)

    # ------------------------------------------------------------------------- sums
    def builtin_sum(self, node: ast.Call) -> Any:
        """Python's ``sum``: of a list, of a literal, or of an array's rows."""
        if not node.args or len(node.args) > 2 or node.keywords:
            raise self.error("sum() is compiled with one iterable and an optional start", node)
        items = self.expr(node.args[0])
        start = self.expr(node.args[1]) if len(node.args) > 1 else Const(0)
        if self.is_static(items) and self.is_static(start):
            return self.static_expr(node, hint="total")
        if isinstance(items, Pack):
            total: Any = start
            for item in items.items:
                total = item if _is_zero(total) else self.prim(
                    np.add, [total, item], {}, "total", node)
            return total
        if self.is_runtime_list(items):
            total = self.prim(sum_list, [items], {}, "total", node)
        else:                                      # an array: Python adds its rows
            total = self.prim(np.sum, [items], {"axis": 0}, "total", node)
        return total if _is_zero(start) else self.prim(np.add, [start, total], {}, "total",
                                                        node)

    def join_list(self, prim_name: str, items: Var, axis: Any, node: ast.AST) -> Var:
        """``np.stack(xs)`` or ``np.concatenate(xs)`` of a list built at run time."""
        prim = {"stack": stack_list, "concatenate": concatenate_list}[prim_name]
        if axis is None:
            raise self.error(f"np.{prim_name} of a run-time list needs an integer axis", node)
        return self.prim(prim, [items], {"axis": axis}, prim_name, node)


def _is_zero(value: Any) -> bool:
    return isinstance(value, Const) and type(value.value) in (int, float) and value.value == 0

