"""Primal and adjoint of run-time lists (``append``, ``listget``, list literals).

A list's adjoint is a Python list with one gradient per element (``None`` for a zero one).
The adjoint of ``xs.append(v)`` pops ``v``'s gradient off it; the adjoint of ``xs[i]`` adds
into entry ``i``.  Appending changes the list in place, so the versions ``xs``, ``xs_1`` …
of the IR are one object: the generated code calls them all ``xs``.  An adjoint made of zeros
for a version that a later append changes is sized by that version's length, recorded in
the primal where the version is made (``xs_len = len(xs)``).
"""

from __future__ import annotations

import ast
from typing import Any

from srcgrad.codegen.common import support
from srcgrad.codegen.emit.symbolic import assign, index_expr, operand_expr, to_expr
from srcgrad.codegen.emit.symbolic import name_expr as _name
from srcgrad.ir import Stmt, Var

__all__ = ["primal_append", "primal_listget", "adjoint_append", "adjoint_listget",
           "item_gradient", "add_lists", "zero_list", "finish"]


def _call(em: Any, helper: str, args: list[ast.expr]) -> ast.Call:
    return ast.Call(em.tracer.use_helper(helper, getattr(support, helper)), args, [])


def root(em: Any, name: str) -> str:
    """The first version of a list: the name the generated code uses for all of them."""
    while name in em.same_list:
        name = em.same_list[name]
    return name


# --------------------------------------------------------------------------------- primal
def primal_append(em: Any, st: Stmt) -> list[ast.stmt]:
    lst, value = st.args
    em.same_list[st.target] = lst.name
    call = ast.Call(ast.Attribute(_name(lst.name), "append", ast.Load()),
                    [em.operand(value)], [])
    return [ast.Expr(call), assign(st.target, _name(lst.name))]   # the alias goes in finish


def primal_listget(st: Stmt) -> ast.stmt:
    return assign(st.target, ast.Subscript(operand_expr(st.args[0]),
                                           index_expr(st.params["index"]), ast.Load()))


# -------------------------------------------------------------------------------- adjoint
def adjoint_append(em: Any, st: Stmt, g: ast.expr) -> list[ast.stmt]:
    lst, value = st.args
    emitted: list[ast.stmt] = []
    if em.wants(value):
        emitted += em.sums.accumulate(value.name, _call(em, "pop_gradient",
                                                        [g, em.operand(value)]))
    elif em.wants(lst):
        emitted.append(ast.Expr(ast.Call(ast.Attribute(g, "pop", ast.Load()), [], [])))
    if em.wants(lst):
        emitted += em.sums.accumulate(lst.name, g)
    return emitted


def adjoint_listget(em: Any, st: Stmt, g: Any) -> list[ast.stmt]:
    lst = st.args[0]
    if not em.wants(lst):
        return []
    emitted: list[ast.stmt] = []
    if isinstance(g, float) or st.target in em.sums.virtual:
        emitted += em.sums.materialize(st.target)        # an element gets its own full array
        g = em.adj[st.target]
    d_list = em.adj.get(lst.name)
    if d_list is None:
        d_list = _name(em.fresh(f"d_{root(em, lst.name)}"))
        emitted.append(assign(d_list.id, zero_list(em, lst.name)))
        em.adj[lst.name] = d_list
    index = st.params["index"]
    index = _name(index.name) if isinstance(index, Var) else to_expr(index)
    emitted.append(ast.Expr(_call(em, "add_at", [d_list, index, g])))
    return emitted


def item_gradient(em: Any, g: ast.expr, i: int, item: Var) -> ast.expr:
    """The gradient of element ``i`` of a list literal, from the list's gradient ``g``."""
    return _call(em, "item_gradient", [g, ast.Constant(i), em.operand(item)])


def add_lists(em: Any, a: ast.expr, b: ast.expr) -> ast.expr:
    return _call(em, "add_lists", [a, b])


def zero_list(em: Any, name: str | None, value: ast.expr | None = None) -> ast.expr:
    """A list adjoint of zeros for the version ``name`` of a list (or for ``value``, a list
    nothing changes later): ``[None] * len(xs)``, or the length recorded in the primal."""
    if name is None or name not in em.changed_later:
        length: ast.expr = ast.Call(_name("len"), [value or _name(name)], [])
    else:
        if name not in em.lengths:
            em.lengths[name] = em.fresh(f"{root(em, name)}_len")
        length = _name(em.lengths[name])
    return ast.BinOp(ast.List([ast.Constant(None)], ast.Load()), ast.Mult(), length)


def is_list_output(st: Stmt, i: int) -> bool:
    """Whether output ``i`` of a loop or branch statement is a list."""
    blocks = st.fn if st.kind == "branch" else st.fn[:1] if st.kind == "loop" else ()
    return any(ir.returned(i) in ir.lists for ir in blocks)


def changed_later(fn: Any) -> set[str]:
    """List versions that a later statement may change in place (append, loop, branch),
    and a block's list parameters (the caller may append to the list after the block)."""
    out = {p for p in fn.params if p in fn.lists}
    for st in fn.body:
        if st.kind == "append":
            out.add(st.args[0].name)
        elif st.kind in ("loop", "branch"):
            blocks, params = ((st.fn[0],), st.fn[0].params[1:]) if st.kind == "loop" else (
                st.fn, st.fn[0].params)
            args = st.args if st.kind == "loop" else st.args[1:]
            out |= {a.name for a, p in zip(args, params) if isinstance(a, Var)
                    and a.name in fn.lists and any(p in ir.mutates for ir in blocks)}
    return out


# ----------------------------------------------------------------------- the function
def finish(em: Any, fn: ast.FunctionDef) -> None:
    """Record the lengths the adjoint needs, and give every version of a list one name."""
    for name, length in em.lengths.items():
        record = assign(length, ast.Call(_name("len"), [_name(name)], []))
        at = _defined_at(fn.body, name)
        fn.body.insert(at, record)
    if not em.same_list:
        return
    rename = {v: root(em, v) for v in em.same_list}

    class Rename(ast.NodeTransformer):
        def visit_Name(self, node: ast.Name) -> ast.AST:
            if node.id in rename:
                node.id = rename[node.id]
            return node

    Rename().visit(fn)
    for body in _bodies(fn):
        body[:] = [s for s in body if not (
            isinstance(s, ast.Assign) and len(s.targets) == 1
            and isinstance(s.targets[0], ast.Name) and isinstance(s.value, ast.Name)
            and s.targets[0].id == s.value.id)]


def _defined_at(body: list[ast.stmt], name: str) -> int:
    """The position just after the statement of ``body`` that assigns ``name`` (0: a param)."""
    for k, st in enumerate(body):
        for node in ast.walk(st) if isinstance(st, ast.Assign) else ():
            if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx,
                                                                            ast.Store):
                return k + 1
    return 0


def _bodies(fn: ast.AST):
    for node in ast.walk(fn):
        for field in ("body", "orelse"):
            block = getattr(node, field, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                yield block
