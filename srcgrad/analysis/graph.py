"""The static dataflow graph of a lowered function (``.graph``), and its activity analysis.

Nodes are the function's parameters and statements (attributes ``op``, ``line``, ``kind``,
``active``, ``saved``); an edge carries a value from its definition to a use, marked
``differentiable`` when a gradient can flow along it.  A value is *active* when it depends
differentiably on a ``wrt`` parameter and the result depends differentiably on it: only
active values get an adjoint.  A value is *saved* when an adjoint rule reads its data.

:func:`analyse` turns a function's graph into the frozen :class:`Analysis` that the emitters
read (nothing is written back into the IR), including how each block of its branches and
loops and each function it calls is to be differentiated.  A value whose adjoint is exactly
zero (:mod:`srcgrad.analysis.shift`: the ``max`` of a logsumexp or a softmax) gets none.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import networkx as nx

from srcgrad.analysis.draws import check_draws
from srcgrad.analysis.shift import invariant_values
from srcgrad.errors import CompileError, Location
from srcgrad.ir import Function, Var

__all__ = ["build_graph", "active_names", "analyse", "Analysis", "BlockUse"]

Reaches = dict[Function, frozenset[str]]
"""Each block's parameters with a differentiable path to its result (a cache for one build)."""


def _op(st) -> str:
    if st.kind == "prim":
        return st.fn.name
    if st.kind == "call":
        return f"call {getattr(st.fn, '__name__', '?')}"
    if st.kind in ("branch", "loop"):
        return st.kind
    return st.kind


def build_graph(fn: Function, wrt: list[str], check: bool = True,
                reaches: Reaches | None = None) -> nx.DiGraph:
    """The def-use graph of ``fn`` with ``active`` and ``saved`` set for ``wrt``; ``check``
    refuses values of ``wrt`` flowing into static parameters (a dropped gradient);
    ``reaches`` caches what is found of blocks, across the graphs of one build."""
    reaches = {} if reaches is None else reaches
    g = nx.DiGraph(name=fn.name, filename=fn.filename)
    for p in fn.params:
        g.add_node(p, op="param", line=fn.firstline, kind="param", active=False, saved=False)
    for k, st in enumerate(fn.body):
        node = st.target or f"<{st.kind} {k}>"
        g.add_node(node, op=_op(st), line=st.line, kind=st.kind, active=False, saved=False)
        through = _block_inputs(st, reaches)
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
        check_draws(fn, varied)
    _mark_saved(fn, g)
    return g


def _block_inputs(st, reaches: Reaches) -> set[int]:
    """The arguments of a loop or branch that a gradient can flow back into: those whose
    parameter reaches the block's result differentiably (an index or a count does not)."""
    if st.kind == "loop":            # a carried value passes through a loop that never runs
        body = st.fn[0]
        return set(range(st.params["carried"])) | {
            i for i, p in enumerate(body.params[1:]) if p in _reaching(body, reaches)}
    if st.kind == "branch":
        return {i + 1 for ir in st.fn for i, p in enumerate(ir.params)
                if p in _reaching(ir, reaches)}
    return set()


def _reaching(ir: Function, reaches: Reaches) -> frozenset[str]:
    """A block's parameters with a differentiable path to its result (computed once a
    build: ``reaches`` remembers it)."""
    if ir not in reaches:
        g = build_graph(ir, [p for p in ir.params if p not in ir.nondiff], check=False,
                        reaches=reaches)
        reaches[ir] = frozenset(p for p in ir.params if g.nodes[p]["active"])
    return reaches[ir]


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


# ---------------------------------------------------------------------------------------------
# The analysis the emitters read.

@dataclass(frozen=True)
class BlockUse:
    """How a block (of a branch, or a loop's body or test) is differentiated where it is
    used: ``nondiff``, its parameters that get no gradient there (besides its own);
    ``accumulates``, the parameters whose running totals the caller hands in after the
    cotangents of its outputs, for the block to add into in place."""

    nondiff: frozenset[str] = frozenset()
    accumulates: tuple[str, ...] = ()


@dataclass(frozen=True)
class Analysis:
    """What the emitters need to know of one function (or block), computed before it is
    emitted; nothing of it is written into the IR.

    ``active``: the values that get an adjoint; ``saved``: those an adjoint rule reads;
    ``nondiff``: the parameters that get no gradient (None in a vjp's result);
    ``accumulates``: as in :class:`BlockUse`; ``handed``: for each active branch, the running
    totals of this function that it hands the branch's blocks; ``reaches``: for each block,
    its parameters with a differentiable path to its result; ``blocks``: how each block is
    differentiated here; ``inactive``: for each function an active call calls, the positions
    of its parameters that no call of it here differentiates."""

    active: frozenset[str]
    saved: frozenset[str]
    nondiff: frozenset[str]
    accumulates: tuple[str, ...] = ()
    handed: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    reaches: Mapping[Function, frozenset[str]] = field(default_factory=dict)
    blocks: Mapping[Function, BlockUse] = field(default_factory=dict)
    inactive: Mapping[Any, frozenset[int]] = field(default_factory=dict)

    def wants(self, a: Any) -> bool:
        """Whether operand ``a`` has an adjoint."""
        return _wants(self.active, a)

    def flows(self, block: Function, param: str, arg: Any) -> bool:
        """Whether a gradient flows back through a block input: the argument has an adjoint
        and the parameter reaches the block's result."""
        return _flows(self.active, self.reaches.get(block), param, arg)


def _wants(active: frozenset[str], a: Any) -> bool:
    return isinstance(a, Var) and a.name in active


def _flows(active: frozenset[str], reach: frozenset[str] | None, param: str, arg: Any) -> bool:
    return _wants(active, arg) and (reach is None or param in reach)


def analyse(fn: Function, graph: nx.DiGraph, nondiff: frozenset[str] = frozenset(),
            accumulates: tuple[str, ...] = (), reaches: Reaches | None = None) -> Analysis:
    """The analysis of ``fn`` from its graph, used as ``nondiff`` and ``accumulates`` say
    (:class:`BlockUse`); ``reaches``: the cache of the build."""
    reaches = {} if reaches is None else reaches
    active = _without_invariant(fn, graph, frozenset(active_names(graph)))
    handed: dict[str, tuple[str, ...]] = {}
    reach: dict[Function, frozenset[str]] = {}
    blocks: dict[Function, BlockUse] = {}
    inactive: dict[Any, frozenset[int]] = {}
    for st in fn.body:
        if st.kind == "branch":
            args = st.args[1:]
            totals = tuple(a.name for a in args if _wants(active, a)
                           and a.name in accumulates and a.name not in fn.lists)
            if totals and st.target in active:
                handed[st.target] = totals      # running totals its blocks add into
            for ir in st.fn:
                by_arg = {a.name: p for p, a in zip(ir.params, args) if isinstance(a, Var)}
                reach[ir] = _reaching(ir, reaches)
                blocks[ir] = BlockUse(      # inputs without adjoints: no gradients
                    frozenset(p for p, a in zip(ir.params, args) if not _wants(active, a)),
                    tuple(by_arg[v] for v in handed.get(st.target, ())))
        elif st.kind == "loop":
            body, test = st.fn
            n, looping = st.params["carried"], st.target in active
            reach[body] = _reaching(body, reaches)
            blocks[body] = BlockUse(
                frozenset(p for k, (p, a) in enumerate(zip(body.params[1:], st.args))
                          if not (k < n and looping) and not _flows(active, reach[body], p, a)),
                tuple(p for p, a in zip(body.params[1 + n:], st.args[n:])
                      if _flows(active, reach[body], p, a)))
            if test is not None:
                blocks[test] = BlockUse()
        elif st.kind == "call" and st.target in active and not isinstance(st.fn, Function) \
                and st.fn not in inactive:
            inactive[st.fn] = _inactive(fn, active, st.fn)
    saved = frozenset(n for n, s in graph.nodes(data="saved") if s)
    return Analysis(active, saved, frozenset(fn.nondiff) | nondiff, tuple(accumulates),
                    MappingProxyType(handed), MappingProxyType(reach),
                    MappingProxyType(blocks), MappingProxyType(inactive))


def _without_invariant(fn: Function, graph: nx.DiGraph, active: frozenset[str]
                       ) -> frozenset[str]:
    """``active`` less the values whose adjoint is exactly zero (:mod:`srcgrad.analysis.shift`: the
    max of a logsumexp), and less what gets a gradient only through them: the gradient that
    reaches the parameters along paths through such a value adds up to zero."""
    zero = invariant_values(fn, active)
    if not zero:
        return active
    diff = nx.subgraph_view(graph, filter_node=lambda n: n not in zero,
                            filter_edge=lambda u, v: graph.edges[u, v]["differentiable"])
    varied = {p for p in fn.params if p in active}
    for p in list(varied):
        varied |= nx.descendants(diff, p)
    result = fn.result.name        # active, so a value
    useful = nx.ancestors(diff, result) | {result}
    kept = {result, *fn.params}    # what the callers of the emitted code count on
    return frozenset(n for n in active if n in varied and n in useful or n in kept)


def _inactive(fn: Function, active: frozenset[str], callee: Any) -> frozenset[int]:
    """Positions of ``callee``'s parameters (a user function's) whose argument has no
    gradient at every call of it in ``fn``: its vjp needs no gradient for them."""
    out: set[int] | None = None
    for st in fn.body:
        if st.kind != "call" or st.fn is not callee:
            continue
        try:
            skip = len(inspect.signature(callee).parameters) - len(st.args)
        except (TypeError, ValueError):
            return frozenset()
        here = {skip + i for i, a in enumerate(st.args)
                if not (isinstance(a, Var) and a.name in active)}
        out = here if out is None else out & here
    return frozenset(out or ())
