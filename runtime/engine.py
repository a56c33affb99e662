"""The backward graph and the engine that runs it.

A :class:`Node` is PyTorch's ``grad_fn``: it knows the edges to the nodes of its inputs
(``next_functions``) and turns the gradient of its outputs into gradients of its inputs.
:class:`PrimNode` does so with the primitive's rules from the rule table, :class:`AccumulateGrad`
deposits into a leaf's ``.grad``.  :func:`run_backward` executes a graph iteratively (no
recursion, so a chain of 100,000 operations is fine), in PyTorch's order: a node runs when every
node that feeds it has run, newest first.

Gradients flow as plain arrays; with ``create_graph=True`` they flow as Tensors, the rules run
on Tensors, and the backward pass is itself recorded.
"""

from __future__ import annotations

import heapq
import itertools
from typing import Any

import numpy as np

from srcgrad.runtime import grad_mode
from srcgrad.runtime.primitives import Meta, sum_to, unbroadcast

__all__ = ["Node", "PrimNode", "AccumulateGrad", "TensorBase", "edge_of", "make_node", "node_class",
           "run_backward"]

_seq = itertools.count()

SECOND_BACKWARD = (
    "Trying to backward through the graph a second time (or directly access saved tensors "
    "after they have already been freed). Saved intermediate values of the graph are freed "
    "when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to "
    "backward through the graph a second time or if you need to access saved tensors after "
    "calling backward.")


def _short(name: str) -> str:
    """``ExpBackward0`` → ``Exp``, as PyTorch names a node inside error messages."""
    stem = name.rstrip("0123456789")
    return stem[:-len("Backward")] if stem.endswith("Backward") else stem


def _modified_error(data: Any, grad_fn: Node | None, version: int, expected: int) -> RuntimeError:
    from srcgrad.runtime.dtypes import from_numpy_dtype
    kind = from_numpy_dtype(data.dtype).legacy
    what = f"[srcgrad.{kind} [{', '.join(map(str, data.shape))}]]"
    if grad_fn is not None:
        what += f", which is output 0 of {_short(grad_fn.name())},"
    return RuntimeError(
        "one of the variables needed for gradient computation has been modified by an inplace "
        f"operation: {what} is at version {version}; expected version {expected} instead. "
        "Hint: enable anomaly detection to find the operation that failed to compute its "
        "gradient, with srcgrad.autograd.set_detect_anomaly(True, check_nan=False).")


class Node:
    """A function of the backward graph (``tensor.grad_fn``)."""

    __slots__ = ("next_functions", "_seq", "_hooks", "_pre_hooks", "_tensor_hooks",
                 "_retain", "_metadata", "__weakref__")
    num_outputs = 1
    _has_saved = True

    def __init__(self, next_functions: tuple = ()) -> None:
        self.next_functions = next_functions
        self._seq = next(_seq)
        self._hooks: dict | None = None
        self._pre_hooks: dict | None = None
        self._tensor_hooks: dict | None = None     # output_nr -> {handle_id: hook}
        self._retain: dict | None = None           # output_nr -> weakref to a retaining tensor
        self._metadata: dict | None = None

    @property
    def metadata(self) -> dict:
        if self._metadata is None:
            self._metadata = {}
        return self._metadata

    def name(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        return f"<{self.name()} object at {id(self):#x}>"

    def __call__(self, *grads: Any) -> Any:
        out = self.apply(list(grads), create_graph=grad_mode.is_grad_enabled())
        return out[0] if len(out) == 1 else out

    def apply(self, grads: list, create_graph: bool) -> tuple:
        raise NotImplementedError

    def release(self) -> None:
        """Free saved values after a backward pass without ``retain_graph`` (``_has_saved``)."""

    def register_hook(self, fn: Any) -> Any:
        """``fn(grad_inputs, grad_outputs)`` runs after the node; it may return new grad_inputs."""
        from srcgrad.runtime.hooks import RemovableHandle
        if self._hooks is None:
            self._hooks = {}
        return RemovableHandle.add(self._hooks, fn)

    def register_prehook(self, fn: Any) -> Any:
        """``fn(grad_outputs)`` runs before the node; it may return new grad_outputs."""
        from srcgrad.runtime.hooks import RemovableHandle
        if self._pre_hooks is None:
            self._pre_hooks = {}
        return RemovableHandle.add(self._pre_hooks, fn)


def edge_of(t: Any) -> tuple[Node | None, int]:
    """The edge a new node uses to reach tensor ``t``'s gradient."""
    fn = t._grad_fn
    if fn is not None:
        return fn, t._output_nr
    if t._requires_grad:
        return t._accumulator(), 0
    return None, 0


_NODE_CLASSES: dict[str, type] = {}


def make_node(name: str, prim: Any, params: dict, args: tuple, needs: tuple, ans: Any = None
              ) -> PrimNode:
    """A PrimNode whose class is named after PyTorch's node (``MulBackward0``)."""
    return node_class(name)(name, prim, params, args, needs, ans)


def node_class(name: str) -> type:
    """The PrimNode subclass named as PyTorch's node (``type(y.grad_fn).__name__``)."""
    cls = _NODE_CLASSES.get(name)
    if cls is None:
        cls = _NODE_CLASSES[name] = type(name.rsplit("::", 1)[-1], (PrimNode,), {"__slots__": ()})
    return cls


class TensorBase:
    """The base of ``Tensor``, so that the engine can tell Tensors without importing them."""

    __slots__ = ()


class PrimNode(Node):
    """A recorded primitive: calls the primitive's rules from the one rule table.

    It keeps, per input, only what the rules read (the Tensor when they read its data, a
    :class:`Meta` when only its shape, nothing otherwise), plus the shape and dtype of the
    inputs that want a gradient, to undo broadcasting and restore dtypes.
    """

    __slots__ = ("_name", "prim", "params", "inputs", "metas", "needs", "ans", "_ans_version",
                 "_ans_counter", "_saved_versions", "_released", "_has_saved")

    def __init__(self, name: str, prim: Any, params: dict, args: tuple, needs: tuple,
                 ans: Any) -> None:
        ans_kind, kinds = prim.saves(needs)
        inputs: list = []
        metas: list = []
        versions: list = []
        nexts: list = []
        for i, a in enumerate(args):
            kind = kinds[i]
            if isinstance(a, TensorBase):
                data = a._data
                if a._requires_grad:
                    fn = a._grad_fn
                    nexts.append((fn, a._output_nr) if fn is not None else (a._accumulator(), 0))
                else:
                    nexts.append(_NO_EDGE)
                metas.append((data.shape, data.dtype) if needs[i] else None)
                if kind == "data":
                    inputs.append(a)
                    versions.append((a, a._version_counter[0]))
                else:
                    inputs.append(Meta(data.shape, data.dtype) if kind else None)
            else:
                nexts.append(_NO_EDGE)
                metas.append(None)
                inputs.append(a if kind else None)
        Node.__init__(self, tuple(nexts))
        self._name = name
        self.prim = prim
        self.params = params
        self.needs = needs
        self.inputs = inputs
        self.metas = metas
        self._saved_versions = versions
        self.ans = ans if ans_kind else None
        self._ans_counter = None
        self._ans_version = 0
        self._released = False
        self._has_saved = ans_kind == "data" or "data" in kinds

    def name(self) -> str:
        return self._name

    def release(self) -> None:
        if self._has_saved:
            self._released = True
            self.inputs = [None if isinstance(x, TensorBase) else x for x in self.inputs]
            self.ans = None

    def _check_saved(self) -> None:
        if self._released:
            raise RuntimeError(SECOND_BACKWARD)
        for t, version in self._saved_versions:
            now = t._version_counter[0]
            if now != version:
                raise _modified_error(t._data, t._grad_fn, now, version)
        if self._ans_counter is not None and self._ans_counter[0] != self._ans_version:
            raise _modified_error(self.ans, self, self._ans_counter[0], self._ans_version)

    def apply(self, grads: list, create_graph: bool) -> tuple:
        g = grads[0]
        if g is None:
            return (None,) * len(self.needs)
        if self._has_saved:
            self._check_saved()
        if create_graph:
            from srcgrad.runtime.tensor import Tensor
            xs = self.inputs
            ans = None if self.ans is None else Tensor._make(self.ans, self, True)
        else:
            xs = self.inputs
            if self._saved_versions:
                xs = [x._data if isinstance(x, TensorBase) else x for x in xs]
            ans = self.ans
        prim, params = self.prim, self.params
        rules = prim.vjps if prim.argnum_vjp is None else None
        out = []
        for i, meta in enumerate(self.metas):
            if meta is None:
                out.append(None)
                continue
            rule = rules[i] if rules is not None else prim.vjp(i)
            gi = rule(g, ans, *xs, **params)
            if (create_graph or type(gi) is not np.ndarray or gi.shape != meta[0]
                    or gi.dtype != meta[1]):
                gi = _conform(gi, meta[0], meta[1], create_graph)
            out.append(gi)
        return tuple(out)


_NO_EDGE = (None, 0)


def _conform(g: Any, shape: tuple, dtype: Any, create_graph: bool) -> Any:
    """Undo broadcasting and restore the input's dtype: the one place both happen."""
    if g.shape != shape:
        g = sum_to(g, shape=shape) if create_graph else unbroadcast(g, shape)
    if not create_graph:
        if isinstance(g, np.generic):
            g = np.asarray(g)
        if dtype is not None and g.dtype != dtype:
            g = g.astype(dtype)
    elif dtype is not None and g._data.dtype != dtype:
        from srcgrad.runtime.rules import cast
        g = cast(g, dtype=dtype)
    return g


class AccumulateGrad(Node):
    """Deposits the gradient into a leaf tensor's ``.grad``."""

    __slots__ = ("variable",)

    def __init__(self, variable: Any) -> None:
        super().__init__(())
        self.variable = variable

    def apply(self, grads: list, create_graph: bool) -> tuple:
        return ()


# ---------------------------------------------------------------------------------------------
# The engine.

def _wrap(g: Any) -> Any:
    from srcgrad.runtime.tensor import Tensor
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
                 inputs: list | None = None, accumulate: bool = True) -> list | None:
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
    pop, push = heapq.heappop, heapq.heappush

    with grad_mode.set_grad_enabled(create_graph):
        while ready:
            fn = pop(ready)[1]
            grads = buffers.pop(fn)
            if fn._tensor_hooks or fn._retain or fn._pre_hooks or type(fn) is AccumulateGrad:
                grads = _run_tensor_hooks(fn, grads, create_graph)
            if targets:
                _capture(fn, grads, targets, captured, inputs, accumulate, create_graph)
            if type(fn) is AccumulateGrad:
                if accumulate and inputs is None and grads[0] is not None:
                    fn.variable._accumulate(grads[0], create_graph)
                continue
            out = fn.apply(grads, create_graph)
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
