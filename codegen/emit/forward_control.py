"""Forward mode of branches, loops and lists: the tangents travel with the values.

A block (a branch's arm, a loop's body or test) becomes a jvp function returning its outputs
and then their tangents, one flat tuple, which the caller unpacks into the names the rest of
the function reads: ``z, w, z_dot, w_dot = then_jvp(...)``.  A loop keeps each carried value
and its tangent in a variable of its own from trip to trip; no tape is needed, and the code is
plain code that the compiler can differentiate again.
"""

from __future__ import annotations

import ast
from typing import Any

from srcgrad.codegen.emit import lists
from srcgrad.codegen.emit.control import attempt, within
from srcgrad.codegen.emit.symbolic import assign
from srcgrad.codegen.emit.symbolic import name_expr as _name
from srcgrad.ir import Stmt, Var

__all__ = ["branch", "loop", "append", "flat_call"]


def _outputs(em: Any, st: Stmt, count: int) -> list[str]:
    """A name for each output of a block statement: the name the function unpacks it into
    (that unpack is then already done), else a fresh one."""
    unpacked = {u.params["index"]: u.target for u in em.fn.body
                if u.kind == "unpack" and u.args and u.args[0] == Var(st.target)}
    names = []
    for i in range(count):
        name = unpacked.get(i)
        if name is None or name in em.preassigned:
            name = em.fresh(f"{st.target}_{i}")
        else:
            em.preassigned.add(name)
        names.append(name)
    return names


def _whole(em: Any, st: Stmt, names: list[str], dots: list[str] | None) -> list[ast.stmt]:
    """The block statement's tuple itself, when something other than an unpack reads it."""
    readers = [s for s in em.fn.body if st.target in s.reads() and s.kind != "unpack"]
    if not readers and em.fn.result != Var(st.target):     # nor returned whole
        return []
    out = [assign(st.target, ast.Tuple([_name(n) for n in names], ast.Load()))]
    if dots is not None:
        out.append(em.bind_name(st.target, ast.Tuple([_name(d) for d in dots], ast.Load())))
    return out


def _dots(em: Any, names: list[str]) -> list[str]:
    dots = [em.fresh(f"{n}_dot") for n in names]
    for n, d in zip(names, dots):
        em.tan[n] = _name(d)
        em.tangent_names.add(d)
    return dots


def _targets(names: list[str]) -> ast.expr:
    return ast.Tuple([_name(n, True) for n in names], ast.Store())


def flat_call(em: Any, st: Stmt, call: ast.Call, count: int) -> list[ast.stmt]:
    """``a, b, a_dot, b_dot = helper_jvp(...)`` for a helper returning a tuple."""
    names = _outputs(em, st, count)
    dots = _dots(em, names)
    return [ast.Assign([_targets(names + dots)], call, lineno=0)] + _whole(
        em, st, names, dots)


def branch(em: Any, st: Stmt) -> list[ast.stmt]:
    """``if cond: z, z_dot = then_jvp(...) else: z, z_dot = else_jvp(...)``."""
    inputs = st.args[1:]
    positions = frozenset(i for i, a in enumerate(inputs) if em.tan_of(a) is not None)
    args = [em.operand(a) for a in inputs] + [em.tan_of(inputs[i]) for i in sorted(positions)]
    names = _outputs(em, st, st.params.get("outputs", len(st.fn[0].outputs())))
    dots = _dots(em, names) if positions else None
    targets = _targets(names + (dots or []))
    calls = [ast.Call(_name(em.jvp_name(ir, positions, None)), list(args), []) for ir in st.fn]
    if not names:                     # nothing assigned that is read after: run it alone
        arms = [[ast.Expr(c)] for c in calls]
    else:
        arms = [[ast.Assign([targets], c, lineno=0)] for c in calls]
    if st.params.get("catch"):                  # a try body's block
        index = st.params["catch"]["caught"]
        return attempt(em, st, arms[0], arms[1], (lambda error: assign(names[index], error))
                       if names else None) + _whole(em, st, names, dots)
    return within(st, [ast.If(em.operand(st.args[0]), arms[0], arms[1])]) + _whole(
        em, st, names, dots)


def loop(em: Any, st: Stmt) -> list[ast.stmt]:
    """The loop with each carried value (and its tangent) in a variable of its own."""
    body_ir, test_ir = st.fn
    n = st.params["carried"]
    stops = bool(st.params.get("stops"))
    consts = st.args[n:]
    live = [em.tan_of(a) for a in consts]
    active = any(em.tan_of(a) is not None for a in st.args)
    positions = frozenset(([1 + i for i in range(n)] if active else []) +
                          [1 + n + j for j, t in enumerate(live) if t is not None])
    names = _outputs(em, st, n + stops)
    out: list[ast.stmt] = [ast.Assign([_targets(names)], ast.Tuple(
        [em.operand(a) for a in st.args[:n]] + ([ast.Constant(False)] if stops else []),
        ast.Load()), lineno=0)]
    dots = None
    if active:
        dots = _dots(em, names)
        starts = [em.tan_of(a) or em.zero(a) for a in st.args[:n]]
        out.append(ast.Assign([_targets(dots[:n])], ast.Tuple(starts, ast.Load()), lineno=0))
        if stops:
            out.append(assign(dots[n], ast.Constant(0.0)))
    counter = em.fresh(st.params["counter"])
    args = [_name(counter), *[_name(c) for c in names[:n]], *[em.operand(a) for a in consts]]
    tangents = [_name(d) for d in dots[:n]] if dots else []
    tangents += [t for t in live if t is not None]
    body: list[ast.stmt] = [ast.Assign([_targets(names + (dots or []))], ast.Call(
        _name(em.jvp_name(body_ir, positions, None)), args + tangents, []), lineno=0)]
    if stops:
        body.append(ast.If(_name(names[n]), [ast.Break()], []))
    if test_ir is None:
        out.append(ast.For(_name(counter, True), ast.Call(
            _name("range"), [em.operand(st.params["trip"])], []), body, [], lineno=0))
    else:
        test = ast.Call(_name(em.jvp_name(test_ir, frozenset(), None)), list(args), [])
        body.append(ast.AugAssign(_name(counter, True), ast.Add(), ast.Constant(1)))
        out += [assign(counter, ast.Constant(0)),
                ast.While(ast.Subscript(test, ast.Constant(0), ast.Load()), body, [])]
    return out + _whole(em, st, names, dots)


def append(em: Any, st: Stmt) -> list[ast.stmt]:
    """``xs.append(v)`` and ``xs_dot.append(v_dot)`` (a list of zeros first, when the list
    had no tangent until now)."""
    lst, value = st.args
    t_list, t_value = em.tan_of(lst), em.tan_of(value)
    if t_list is None and t_value is None:
        return lists.primal_append(em, st)
    out: list[ast.stmt] = []
    if t_list is None:
        name = em.fresh(f"{lists.root(em, lst.name)}_dot")
        out.append(em.assign_tangent(name, em.zero(lst)))
        t_list = _name(name)
    out += lists.primal_append(em, st)
    out.append(ast.Expr(ast.Call(ast.Attribute(t_list, "append", ast.Load()),
                                 [t_value if t_value is not None else em.zero(value)], [])))
    em.tan[st.target] = t_list
    return out
