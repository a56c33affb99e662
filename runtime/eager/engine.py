"""The engine that runs the backward graph (nodes: :mod:`srcgrad.runtime.eager.node`).

:func:`run_backward` executes a graph iteratively (no recursion, so a chain of 100,000
operations is fine), in PyTorch's order: a node runs when every node that feeds it has run,
newest first.  Gradients flow as plain arrays; with ``create_graph=True`` they flow as Tensors,
the rules run on Tensors, and the backward pass is itself recorded.
"""

from __future__ import annotations

import heapq
from typing import Any

import numpy as np

from srcgrad.runtime.eager import grad_mode
from srcgrad.runtime.eager.anomaly import STATE as ANOMALY
from srcgrad.runtime.eager.anomaly import checked_apply
from srcgrad.runtime.eager.node import (  # noqa: F401  (the engine's names, as before the split)
    SECOND_BACKWARD,
    AccumulateGrad,
    Node,
    PrimNode,
    TensorBase,
    _modified_error,
    edge_of,
    make_node,
    node_class,
)

__all__ = ["Node", "PrimNode", "AccumulateGrad", "TensorBase", "edge_of", "make_node", "node_class",
           "run_backward"]
# ---------------------------------------------------------------------------------------------
# The engine.

def _wrap(g: Any) -> Any:
    from srcgrad.runtime.eager.tensor import Tensor
    return g if g is None or isinstance(g, Tensor) else Tensor._make(g)


def _unwrap(g: Any, create_graph: bool) -> Any:
    if g is None or create_graph:
        return g
    return g._data if isinstance(g, TensorBase) else g


def _add(a: Any, b: Any) -> Any:
    if a is None:
        return b
    if b is None:
        return a
    return a + b


def _run_tensor_hooks(node: Node, grads: list, create_graph: bool) -> list:
    """Tensor hooks registered on the node's outputs, then ``retain_grad``, then pre-hooks."""
    tensor_hooks = node._tensor_hooks
    if isinstance(node, AccumulateGrad) and node.variable._hooks:
        tensor_hooks = {0: node.variable._hooks}
    if tensor_hooks:
        for nr, hooks in tensor_hooks.items():
            for hook in list(hooks.values()):
                if grads[nr] is None:
                    continue
                new = hook(_wrap(grads[nr]))
                if new is not None:
                    grads[nr] = _unwrap(new, create_graph)
    if node._retain:
        for nr, ref in node._retain.items():
            t = ref()
            if t is not None and grads[nr] is not None:
                t._retain_grad(grads[nr], create_graph)
    if node._pre_hooks:
        for hook in list(node._pre_hooks.values()):
            new = hook(tuple(_wrap(g) for g in grads))
            if new is not None:
                grads = [_unwrap(g, create_graph) for g in new]
    return grads


def run_backward(roots: list, grad_roots: list, *, retain_graph: bool, create_graph: bool,
                 inputs: list | None = None, accumulate: bool = True,
                 cut: bool = False) -> list | None:
    """Run the graph from ``roots`` (edges) seeded with ``grad_roots``.

    ``accumulate=True`` (``Tensor.backward``) deposits into ``.grad`` of the leaves, or only of
    the Tensors in ``inputs`` when given; ``accumulate=False`` (``autograd.grad``) returns the
    gradients of ``inputs`` instead.  With ``inputs``, only the part of the graph that leads to
    them runs.
    """
    # 1. discover the graph and count, for each node, the edges that feed it
    deps: dict[Node, int] = {}
    stack = []
    for fn, _ in roots:
        if fn is not None and fn not in deps:
            deps[fn] = 0
            stack.append(fn)
    while stack:
        for child, _ in stack.pop().next_functions:
            if child is None:
                continue
            if child in deps:
                deps[child] += 1
            else:
                deps[child] = 1
                stack.append(child)

    targets: dict[tuple, int] = {}
    needed: set | None = None
    if inputs is not None:
        for k, t in enumerate(inputs):
            targets.setdefault(edge_of(t), k)
        needed = _needed(deps, {fn for fn, _ in targets})
        deps = dict.fromkeys(needed, 0)
        for fn in needed:
            for child, _ in fn.next_functions:
                if child in needed:
                    deps[child] += 1

    # 2. seed, then run each node once all that feed it have run, newest first
    buffers: dict[Node, list] = {}
    for (fn, nr), g in zip(roots, grad_roots):
        if fn is None or fn not in deps:
            continue
        buf = buffers.setdefault(fn, [None] * fn.num_outputs)
        buf[nr] = _add(buf[nr], g)
    ready = [(-fn._seq, fn) for fn in buffers if deps[fn] == 0]
    heapq.heapify(ready)
    captured: list = [None] * (len(inputs) if inputs is not None else 0)
    cut_at = {fn for fn, _ in targets} if cut else ()
    anomaly = ANOMALY.enabled
    pop, push = heapq.heappop, heapq.heappush

    with grad_mode.set_grad_enabled(create_graph), np.errstate(all="ignore"):
        while ready:
            fn = pop(ready)[1]
            grads = buffers.pop(fn)
            if fn._tensor_hooks or fn._retain or fn._pre_hooks or type(fn) is AccumulateGrad:
                grads = _run_tensor_hooks(fn, grads, create_graph)
            if targets:
                _capture(fn, grads, targets, captured, inputs, accumulate, create_graph)
                if cut and fn in cut_at:
                    _skip(fn, deps, buffers, ready, needed)
                    continue
            if type(fn) is AccumulateGrad:
                if accumulate and inputs is None and grads[0] is not None:
                    fn.variable._accumulate(grads[0], create_graph)
                continue
            out = checked_apply(fn, grads, create_graph) if anomaly else fn.apply(
                grads, create_graph)
            if fn._hooks:
                out = _run_post_hooks(fn, out, grads, create_graph)
            if not retain_graph and fn._has_saved:
                fn.release()
            for (child, nr), g in zip(fn.next_functions, out):
                if child is None or (needed is not None and child not in needed):
                    continue
                if g is not None:
                    buf = buffers.get(child)
                    if buf is None:
                        buf = buffers[child] = [None] * child.num_outputs
                        buf[nr] = g
                    else:
                        buf[nr] = _add(buf[nr], g)
                left = deps[child] - 1
                deps[child] = left
                if left == 0:
                    if child in buffers:
                        push(ready, (-child._seq, child))
                    else:
                        _skip(child, deps, buffers, ready, needed)
    return captured if inputs is not None else None


def _capture(fn: Node, grads: list, targets: dict, captured: list, inputs: list,
             accumulate: bool, create_graph: bool) -> None:
    """Keep the gradients that flow into the requested ``inputs``."""
    for nr, g in enumerate(grads):
        k = targets.get((fn, nr))
        if k is None:
            continue
        captured[k] = g
        if accumulate and g is not None:
            inputs[k]._accumulate(g, create_graph)


def _run_post_hooks(fn: Node, out: tuple, grads: list, create_graph: bool) -> tuple:
    for hook in list(fn._hooks.values()):
        new = hook(tuple(_wrap(g) for g in out), tuple(_wrap(g) for g in grads))
        if new is not None:
            out = tuple(_unwrap(g, create_graph) for g in new)
    return out


def _skip(fn: Node, deps: dict, buffers: dict, ready: list, needed: set | None) -> None:
    """A node that received no gradient at all: release its children's dependency on it."""
    stack = [fn]
    while stack:
        for child, _ in stack.pop().next_functions:
            if child is None or (needed is not None and child not in needed):
                continue
            deps[child] -= 1
            if deps[child] == 0:
                if child in buffers:
                    heapq.heappush(ready, (-child._seq, child))
                else:
                    stack.append(child)


def _needed(nodes: dict, targets: set) -> set:
    """Nodes from which some target can be reached (the part of the graph worth running)."""
    parents: dict[Node, list] = {}
    for fn in nodes:
        for child, _ in fn.next_functions:
            if child is not None:
                parents.setdefault(child, []).append(fn)
    needed: set = set()
    stack = [t for t in targets if t in nodes]
    while stack:
        fn = stack.pop()
        if fn in needed:
            continue
        needed.add(fn)
        stack.extend(parents.get(fn, ()))
    return needed
