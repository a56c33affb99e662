"""Primal and adjoint of the control-flow statements (``branch`` and ``loop``).

A branch calls the vjp of the block that runs and keeps its backward closure; its adjoint
calls that closure.  A loop keeps one closure per iteration in a list (the tape) and its
adjoint calls them in reverse, passing the carried cotangents from one to the next; each
closure adds the gradients of what the body only reads into running totals it is handed
(and hands them on to the branches and loops inside it).  Which inputs of a block get
gradients, and which totals it is handed, the analysis (``em.analysis``) says.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Callable
from typing import Any

from srcgrad.codegen.common import support
from srcgrad.codegen.emit import lists
from srcgrad.codegen.emit.symbolic import assign
from srcgrad.codegen.emit.symbolic import name_expr as _name
from srcgrad.ir import Stmt

__all__ = ["primal_branch", "primal_loop", "adjoint_loop", "accumulators", "within",
           "attempt"]


def primal_branch(em: Any, st: Stmt) -> list[ast.stmt]:
    """``if cond: out, back = then_vjp(...) else: out, back = else_vjp(...)``."""
    then_ir, else_ir = st.fn
    args = [em.operand(a) for a in st.args[1:]]
    back = em.fresh(f"{st.target}_backward") if st.target in em.active else "_"
    if back != "_":
        em.backward_of[st.target] = back
    calls = [assign([st.target, back], ast.Call(_name(em.vjp_name(ir)), args, []))
             for ir in (then_ir, else_ir)]
    if st.params.get("catch"):
        index = st.params["catch"]["caught"]
        pack = _name(st.target)

        def bind(error: ast.expr) -> ast.stmt:          # the pack with the error at index
            value: ast.expr = ast.Tuple([error], ast.Load())
            if index:
                value = ast.BinOp(ast.Subscript(pack, ast.Slice(None, ast.Constant(index)),
                                                ast.Load()), ast.Add(), value)
            if index + 1 < st.params["outputs"]:
                rest = ast.Subscript(pack, ast.Slice(ast.Constant(index + 1)), ast.Load())
                value = ast.BinOp(value, ast.Add(), rest)
            return assign(st.target, value)
        return attempt(em, st, [calls[0]], [calls[1]], bind)
    return within(st, [ast.If(em.operand(st.args[0]), [calls[0]], [calls[1]])])


def within(st: Stmt, stmts: list[ast.stmt]) -> list[ast.stmt]:
    """``stmts`` under the context manager a block runs in (``with np.errstate(...)``, its
    ``context``), or as they are."""
    context = st.params.get("context")
    if context is None:
        return stmts
    return [ast.With([ast.withitem(copy.deepcopy(context))], stmts, lineno=0)]


def attempt(em: Any, st: Stmt, first: list[ast.stmt], other: list[ast.stmt],
            bind: Callable[[ast.expr], ast.stmt] | None) -> list[ast.stmt]:
    """A try body's block (a branch marked ``catch``): ``try: <first arm> except <the
    handlers' classes> as error: <other arm>``, then ``bind(error)`` hands out the exception
    where the block hands out the one it caught (``None`` on the first arm)."""
    error = em.fresh("error")
    kinds = [k for group in st.params["catch"]["kinds"]
             for k in (group.elts if isinstance(group, ast.Tuple) else [group])]
    body = copy.deepcopy(other) + ([bind(_name(error))] if bind is not None else [])
    handler = ast.ExceptHandler(ast.Tuple(copy.deepcopy(kinds), ast.Load()), error, body)
    return [ast.Try(first, [handler], [], [])]


def primal_loop(em: Any, st: Stmt) -> list[ast.stmt]:
    """The loop, keeping each iteration's backward closure when the loop is active."""
    body_ir, test_ir = st.fn
    n = st.params["carried"]
    active = st.target in em.active
    counter = em.fresh(st.params["counter"])
    carried = [em.operand(a) for a in st.args[:n]]
    consts = [em.operand(a) for a in st.args[n:]]
    state = st.target
    start = carried + ([ast.Constant(False)] if st.params.get("stops") else [])
    out: list[ast.stmt] = [assign(state, ast.Tuple(start, ast.Load()))]  # (…, broke)
    backs = em.fresh(f"{state}_backs") if active else None
    back = em.fresh(f"{state}_back") if active else "_"
    if active:
        em.backward_of[st.target] = backs
        out.append(assign(backs, ast.List([], ast.Load())))
    stops = st.params.get("stops")
    carried_now: ast.expr = _name(state)
    if stops:                                  # the state ends with the body's break flag
        carried_now = ast.Subscript(_name(state), ast.Slice(None, ast.Constant(n), None),
                                    ast.Load())
    call_args = [_name(counter), ast.Starred(carried_now, ast.Load()), *consts]
    body: list[ast.stmt] = [assign([state, back], ast.Call(_name(em.vjp_name(body_ir)),
                                                            call_args, []))]
    if active:
        body.append(ast.Expr(ast.Call(ast.Attribute(_name(backs), "append", ast.Load()),
                                      [_name(back)], [])))
    if stops:
        body.append(ast.If(ast.Subscript(_name(state), ast.Constant(-1), ast.Load()),
                           [ast.Break()], []))
    if test_ir is None:
        loop: ast.stmt = ast.For(_name(counter, True), ast.Call(
            _name("range"), [em.operand(st.params["trip"])], []), body, [], lineno=0)
        out.append(loop)
    else:
        value = ast.Subscript(ast.Call(_name(em.vjp_name(test_ir)), call_args, []),
                              ast.Constant(0), ast.Load())      # (result, backward)[0]
        test = ast.Subscript(value, ast.Constant(0), ast.Load())  # the test's one value
        body.append(ast.AugAssign(_name(counter, True), ast.Add(), ast.Constant(1)))
        out += [assign(counter, ast.Constant(0)), ast.While(test, body, [])]
    return out


def adjoint_loop(em: Any, st: Stmt, g: Any) -> list[ast.stmt]:
    """Call the iterations' closures in reverse, passing the carried cotangents from one to
    the next.  The gradients of what the body only reads are accumulated in place: each
    closure is handed the running totals after the cotangents and adds its part into them
    (``d_x[i] += g`` for a read ``x[i]``, not a full array per iteration)."""
    n = st.params["carried"]
    backs = em.backward_of[st.target]
    emitted: list[ast.stmt] = []
    d_state = em.fresh(f"d_{st.target}")
    emitted.append(assign(d_state, g))
    body_ir = st.fn[0]
    consts = [(i, a) for i, a in enumerate(st.args[n:], start=n)
              if em.analysis.flows(body_ir, body_ir.params[1 + i], a)]
    ours = {i: em.running_total(a.name) for i, a in consts}   # a total of an outer loop
    ours = {i: d.id for i, d in ours.items() if d is not None}
    totals = {i: ours.get(i) or em.fresh(f"d_{a.name}_sum") for i, a in consts}
    zero = em.tracer.use_helper("zero_gradient", support.zero_gradient)
    for i, name in totals.items():                  # zeros shaped as the value (no trips)
        value = st.args[i]
        if i in ours:
            continue
        emitted.append(assign(name, lists.zero_list(em, value.name) if value.name in em.fn.lists
                              else ast.Call(zero, [em.operand(value)], [])))
    back = em.fresh(f"{st.target}_back")
    parts = ["_"] + [em.fresh(f"d_{st.target}_{k}") for k in range(n)] + [
        totals.get(i, "_") for i in range(n, len(st.args))]
    extra: list[ast.expr] = [ast.Constant(None)] if st.params.get("stops") else []  # the flag
    extra += [_name(totals[i]) for i, _ in consts]
    seed: ast.expr = _name(d_state)
    if extra:
        seed = ast.BinOp(seed, ast.Add(), ast.Tuple(extra, ast.Load()))
    body: list[ast.stmt] = [assign(parts, ast.Call(_name(back), [seed], [])),
                            assign(d_state, ast.Tuple([_name(p) for p in parts[1:n + 1]],
                                                       ast.Load()))]
    emitted.append(ast.For(_name(back, True), ast.Call(_name("reversed"), [_name(backs)], []),
                           body, [], lineno=0))
    for i, a in enumerate(st.args[:n]):       # (None for an int: ``none``)
        if em.wants(a):
            part = ast.Subscript(_name(d_state), ast.Constant(i), ast.Load())
            emitted += em.sums.accumulate(a.name, part, none=True)
    for i, a in consts:
        if i not in ours:
            emitted += em.sums.accumulate(a.name, _name(totals[i]), none=True)
    return emitted


def accumulators(em: Any, ir: Any, seed: str) -> list[ast.stmt]:
    """In a loop body's backward: the running totals of what the body only reads, handed in
    after the cotangents of its outputs; the adjoint adds into them in place."""
    out = []
    offset = len(ir.outputs())
    for j, param in enumerate(em.analysis.accumulates):
        name = em.fresh(f"d_{param}")
        out.append(assign(name, ast.Subscript(_name(seed), ast.Constant(offset + j),
                                              ast.Load())))
        em.adj[param] = _name(name)
        em.sums.owned.add(name)
        em.sums.handed_back(param)                # an int's total is None
    return out
