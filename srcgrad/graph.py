"""The static dataflow graph of a lowered function (``.graph``), and its activity analysis.

Nodes are the function's parameters and statements (attributes ``op``, ``line``, ``kind``,
``active``, ``saved``); an edge carries a value from its definition to a use, marked
``differentiable`` when a gradient can flow along it.  A value is *active* when it depends
differentiably on a ``wrt`` parameter and the result depends differentiably on it: only
active values get an adjoint.  A value is *saved* when an adjoint rule reads its data.
"""

from __future__ import annotations

import networkx as nx

from srcgrad.errors import CompileError, Location
from srcgrad.ir import Function, Var

__all__ = ["build_graph", "active_names"]


def _op(st) -> str:
    if st.kind == "prim":
        return st.fn.name
    if st.kind == "call":
        return f"call {getattr(st.fn, '__name__', '?')}"
    if st.kind in ("branch", "loop"):
        return st.kind
    return st.kind


def build_graph(fn: Function, wrt: list[str], check: bool = True) -> nx.DiGraph:
    """The def-use graph of ``fn`` with ``active`` and ``saved`` set for ``wrt``; ``check``
    refuses values of ``wrt`` flowing into static parameters (a dropped gradient)."""
    g = nx.DiGraph(name=fn.name, filename=fn.filename)
    for p in fn.params:
        g.add_node(p, op="param", line=fn.firstline, kind="param", active=False, saved=False)
    for k, st in enumerate(fn.body):
        node = st.target or f"<{st.kind} {k}>"
        g.add_node(node, op=_op(st), line=st.line, kind=st.kind, active=False, saved=False)
        through = _block_inputs(st)
        for i, a in enumerate(st.args):
            if isinstance(a, Var):
                diff = st.kind in ("call", "pack", "unpack", "leaf", "append", "listget") or (
                    st.kind in ("loop", "branch") and i in through) or (
                    st.kind == "prim" and st.fn.vjp(i) is not None)
                if g.has_edge(a.name, node):     # one value passed twice: (v0, y) with v0 = y
                    diff = diff or g.edges[a.name, node]["differentiable"]
                g.add_edge(a.name, node, role="input", argnum=i, differentiable=diff)
        for u in st.uses:
            if not g.has_edge(u, node):
                g.add_edge(u, node, role="param", differentiable=False)
    diff_graph = nx.subgraph_view(g, filter_edge=lambda u, v: g.edges[u, v]["differentiable"])
    varied = set(wrt)
    for p in wrt:
        varied |= nx.descendants(diff_graph, p)
    result = fn.result.name if isinstance(fn.result, Var) else None
    useful = (nx.ancestors(diff_graph, result) | {result}) if result in g else set()
    for name in (varied & useful) - fn.flags:
        g.nodes[name]["active"] = True
    if check:
        _check_params(fn, g, varied, useful)
    _mark_saved(fn, g)
    return g


def _block_inputs(st) -> set[int]:
    """The arguments of a loop or branch that a gradient can flow back into: those whose
    parameter reaches the block's result differentiably (an index or a count does not)."""
    if st.kind == "loop":            # a carried value passes through a loop that never runs
        body = st.fn[0]
        return set(range(st.params["carried"])) | {
            i for i, p in enumerate(body.params[1:]) if p in _differentiable_params(body)}
    if st.kind == "branch":
        return {i + 1 for ir in st.fn for i, p in enumerate(ir.params)
                if p in _differentiable_params(ir)}
    return set()


def _differentiable_params(ir: Function) -> set[str]:
    """A block's parameters with a differentiable path to its result (kept on the block as
    ``ir.differentiable``, which the emitter reads too)."""
    if ir.differentiable is None:
        g = build_graph(ir, [p for p in ir.params if p not in ir.nondiff], check=False)
        ir.differentiable = {p for p in ir.params if g.nodes[p]["active"]}
    return ir.differentiable


def active_names(g: nx.DiGraph) -> set[str]:
    return {n for n, active in g.nodes(data="active") if active}


def _check_params(fn: Function, g: nx.DiGraph, varied: set, useful: set) -> None:
    """A gradient must never be dropped silently: a value that depends on ``wrt`` may not
    reach the result through a static parameter (a shape, an index, a clip bound)."""
    for st in fn.body:
        if st.kind != "prim":
            continue
        for u in st.uses:
            if u in varied and st.target in useful:
                raise CompileError(
                    f"the gradient through the parameter {u!r} of {st.fn.name} is not "
                    "supported (it is used as a shape, index or bound)",
                    Location(fn.filename, st.line, 0, 0, st.text, fn.name))


def _mark_saved(fn: Function, g: nx.DiGraph) -> None:
    for st in fn.body:
        if st.kind != "prim" or not g.nodes[st.target]["active"]:
            continue
        needs = tuple(isinstance(a, Var) and g.nodes[a.name]["active"] and
                      st.fn.vjp(i) is not None for i, a in enumerate(st.args))
        if not any(needs):
            continue
        ans_kind, kinds = st.fn.saves(needs)
        if ans_kind == "data":
            g.nodes[st.target]["saved"] = True
        for a, kind in zip(st.args, kinds):
            if kind == "data" and isinstance(a, Var):
                g.nodes[a.name]["saved"] = True
