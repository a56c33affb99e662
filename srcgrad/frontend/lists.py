"""Lists lowered: literals, ``append``, element reads, comprehensions, ``sum``, joins, and
lists given where NumPy expects an array.

A list literal stays a compile-time :class:`~srcgrad.ir.Pack` while its length is known (it
then costs nothing at run time).  A list that a loop or a branch builds becomes a run-time
Python list: ``append`` is a statement of its own (``target`` is the list after the append,
the same object), ``xs[i]`` a ``listget``, and ``np.stack``/``np.concatenate``/``sum`` of it
the list primitives of the rule table.  Comprehensions and generator expressions are the loop
they stand for.

Writes in place (an append, ``y[i] = v``) make a new SSA version of the list or array.  The
names that see an array (second names, views, pytree leaves) are moved to the new version by
:mod:`srcgrad.frontend.aliases`; the old version is *consumed*: any read of it left over (a list
that holds it, a value the compiler could not follow) is refused instead of silently diverging.
A list given where NumPy expects an array is stacked as ``np.asarray`` would
(:mod:`srcgrad.frontend.list_operands`).
"""

from __future__ import annotations

import ast
import copy
from contextlib import AbstractContextManager
from typing import Any, Protocol

import numpy as np

from srcgrad.errors import CompileError
from srcgrad.frontend.list_operands import array_inputs
from srcgrad.frontend.local_objects import Record
from srcgrad.frontend.primitives import Primitives
from srcgrad.frontend.statics import Statics
from srcgrad.ir import Const, Pack, Stmt, Tree, Var
from srcgrad.runtime.rules.lists import concatenate_list, stack_list, sum_list

__all__ = ["Lists", "is_append"]


def is_append(node: ast.AST) -> bool:
    """``xs.append(v)`` (a call of the method ``append`` on a name)."""
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr == "append" and isinstance(node.func.value, ast.Name))


class Host(Protocol):
    """What the lowering of lists reads of, and asks of, the lowerer that holds it.  The names
    in scope change as lowering goes on (a helper lowered in place swaps them): they are read
    here when needed, never kept."""

    scope: dict[str, Any]
    source_names: dict[str, str]
    runtime_lists: set[str]            # the SSA names of lists built at run time
    line: int
    prims: Primitives
    statics: Statics

    def expr(self, node: ast.expr) -> Any: ...

    def statement(self, s: ast.stmt) -> None: ...

    def materialize(self, value: Any, hint: str) -> Any: ...

    def emit(self, stmt: Stmt) -> Var: ...

    def fresh(self, base: str) -> str: ...

    def fresh_internal(self, base: str) -> str: ...

    def error(self, message: str, node: ast.AST) -> CompileError: ...

    def consume(self, old: Var, line: int, what: str) -> None: ...

    def live_after(self) -> set[str]: ...

    def live_as(self, names: set[str]) -> AbstractContextManager: ...


class Lists:
    """The lowering of lists; the lowerer's ``lists``."""

    def __init__(self, host: Host) -> None:
        self.host = host

    def is_list(self, value: Any) -> bool:
        """A list: a list literal, or one built at run time."""
        if isinstance(value, Pack):
            return value.is_list
        return self.is_runtime_list(value)

    def is_runtime_list(self, value: Any) -> bool:
        return isinstance(value, Var) and value.name in self.host.runtime_lists

    # ------------------------------------------------------------------------- append
    def append(self, call: ast.Call) -> None:
        """``xs.append(v)``: on a literal, at compile time; on a run-time list, a statement."""
        host = self.host
        if len(call.args) != 1 or call.keywords:
            raise host.error("list.append takes one argument", call)
        name = call.func.value.id
        lst = host.expr(call.func.value)
        value = host.expr(call.args[0])
        if not (isinstance(lst, Pack) and isinstance(value, Record)):   # an object made here
            value = host.materialize(value, "item")                  # stays one, in a literal
        if not self.is_list(lst):
            raise host.error(f"srcgrad compiles .append on lists; {name!r} is not one here",
                             call)
        if isinstance(lst, Pack):
            lst.items.append(value)                  # every name of this literal sees it
            return
        target = host.fresh(name)
        host.source_names[target] = name
        host.emit(Stmt(target, "append", args=[lst, value]))
        host.runtime_lists.add(target)
        host.consume(lst, host.line, "a list")
        host.scope[name] = Var(target)

    # ----------------------------------------------------------------------- reading
    def item(self, base: Any, node: ast.Subscript) -> Any:
        """``xs[i]`` (an element) or ``xs[a:b]`` (a list) of a run-time list."""
        host = self.host
        if isinstance(base, Pack):
            if host.statics.is_static(base):
                return host.statics.static_expr(node)
            base = host.materialize(Pack(base.items, is_list=True), "items")
        index = host.statics.index_param(node.slice)
        hint = f"{base.name}_item" if not isinstance(index, slice) else f"{base.name}_part"
        target = host.emit(Stmt(host.fresh(hint), "listget", args=[base],
                                params={"index": index},
                                uses=(index.name,) if isinstance(index, Var) else ()))
        if isinstance(index, slice):
            host.runtime_lists.add(target.name)
        return target

    # --------------------------------------------------------------- comprehensions
    def comprehension(self, node: ast.ListComp | ast.GeneratorExp | ast.DictComp) -> Any:
        """``[e for x in xs if c]``: ``items = []``, then the loop that appends ``e``
        (``{k: v for …}``: ``items = {}``, then the loop that stores ``items[k] = v``)."""
        host = self.host
        as_dict = isinstance(node, ast.DictComp)
        name = host.fresh_internal("table" if as_dict else "items")
        gens = copy.deepcopy(node.generators)
        elt = ast.Tuple([copy.deepcopy(node.key), copy.deepcopy(node.value)], ast.Load()) \
            if as_dict else copy.deepcopy(node.elt)
        renames = {}
        for gen in gens:
            if gen.is_async:
                raise host.error("srcgrad cannot compile async comprehensions", node)
            for n in ast.walk(gen.target):
                if isinstance(n, ast.Name) and (n.id in host.scope or n.id in renames):
                    renames[n.id] = host.fresh_internal(n.id)   # comprehension names are local
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
        with host.live_as(host.live_after() | {name}):
            host.statement(start)
            host.statement(body[0])
        return host.scope.pop(name)

    # ------------------------------------------------------------------------- sums
    def builtin_sum(self, node: ast.Call) -> Any:
        """Python's ``sum``: of a list, of a literal, or of an array's rows."""
        host = self.host
        if not node.args or len(node.args) > 2 or node.keywords:
            raise host.error("sum() is compiled with one iterable and an optional start", node)
        items = host.expr(node.args[0])
        start = host.expr(node.args[1]) if len(node.args) > 1 else Const(0)
        if host.statics.is_static(items) and host.statics.is_static(start):
            return host.statics.static_expr(node, hint="total")
        if isinstance(items, Pack):
            total: Any = start
            for item in items.items:
                total = item if _is_zero(total) else host.prims.prim(
                    np.add, [total, item], {}, "total", node)
            return total
        if self.is_runtime_list(items):
            total = host.prims.prim(sum_list, [items], {}, "total", node)
        else:                                      # an array: Python adds its rows
            total = host.prims.prim(np.sum, [items], {"axis": 0}, "total", node)
        return total if _is_zero(start) else host.prims.prim(np.add, [start, total], {}, "total",
                                                              node)

    def join(self, prim_name: str, items: Var, axis: Any, node: ast.AST) -> Var:
        """``np.stack(xs)`` or ``np.concatenate(xs)`` of a list built at run time."""
        host = self.host
        prim = {"stack": stack_list, "concatenate": concatenate_list}[prim_name]
        if axis is None:
            raise host.error(f"np.{prim_name} of a run-time list needs an integer axis", node)
        return host.prims.prim(prim, [items], {"axis": axis}, prim_name, node)

    # ------------------------------------------------------------- as array operands
    def operands(self, f: Any, args: list, node: ast.AST) -> list:
        """The arguments of a NumPy call ``f``, its array operands given as lists stacked as
        NumPy would."""
        count = array_inputs(f)
        if not count:
            return args
        return [self.as_array(a, node) if i < count else a for i, a in enumerate(args)]

    def as_array(self, value: Any, node: ast.AST) -> Any:
        """``value`` as the array ``np.asarray(value)`` builds, when it is a list or tuple
        that carries a gradient (a literal, a list built at run time, a pytree argument)."""
        host = self.host
        if isinstance(value, Tree) and value.kind in (list, tuple, "list", "tuple"):
            value = Pack(list(value.children.values()), is_list=True)
        if self.is_runtime_list(value):
            return self.join("stack", value, 0, node)
        if not isinstance(value, Pack) or not host.prims.carries(value):
            return value
        items = [self.as_array(v, node) for v in value.items]
        if any(isinstance(v, Tree) for v in items):
            raise host.error("srcgrad cannot use a dict inside a list given to a NumPy "
                             "function", node)
        return host.prims.prim(np.stack, items, {"axis": 0}, "array", node)


def _is_zero(value: Any) -> bool:
    return isinstance(value, Const) and type(value.value) in (int, float) and value.value == 0

