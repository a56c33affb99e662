"""The nodes of the backward graph (PyTorch's ``grad_fn`` objects).

A :class:`Node` knows the edges to the nodes of its inputs (``next_functions``) and turns the
gradient of its outputs into gradients of its inputs.  :class:`PrimNode` does so with the
primitive's rules from the rule table, :class:`AccumulateGrad` deposits into a leaf's ``.grad``.
The engine that runs a graph of them is :mod:`srcgrad.runtime.eager.engine`.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from srcgrad.runtime.eager import grad_mode
from srcgrad.runtime.eager.anomaly import STATE as ANOMALY
from srcgrad.runtime.eager.anomaly import forward_traceback
from srcgrad.runtime.rules.forward_rules import refuse_complex
from srcgrad.runtime.rules.primitives import Meta, sum_to, unbroadcast

__all__ = ["Node", "PrimNode", "AccumulateGrad", "TensorBase", "edge_of", "make_node", "node_class",
           "SECOND_BACKWARD", "next_seq"]

_seq = itertools.count()


def next_seq() -> int:
    """A number greater than every node's made so far, and smaller than any made later."""
    return next(_seq)

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
    from srcgrad.runtime.eager.dtypes import from_numpy_dtype
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
        if ANOMALY.enabled:
            self._metadata = {"traceback_": forward_traceback()}

    @property
    def metadata(self) -> dict:
        if self._metadata is None:
            self._metadata = {}
        return self._metadata

    def name(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        return f"<{self.name().rsplit('::', 1)[-1]} object at {id(self):#x}>"

    def __call__(self, *grads: Any) -> Any:
        out = self.apply(list(grads), create_graph=grad_mode.is_grad_enabled())
        return out[0] if len(out) == 1 else out

    def apply(self, grads: list, create_graph: bool) -> tuple:
        raise NotImplementedError

    def release(self) -> None:
        """Free saved values after a backward pass without ``retain_graph`` (``_has_saved``)."""

    def register_hook(self, fn: Any) -> Any:
        """``fn(grad_inputs, grad_outputs)`` runs after the node; it may return new grad_inputs."""
        from srcgrad.runtime.eager.hooks import RemovableHandle
        if self._hooks is None:
            self._hooks = {}
        return RemovableHandle.add(self._hooks, fn)

    def register_prehook(self, fn: Any) -> Any:
        """``fn(grad_outputs)`` runs before the node; it may return new grad_outputs."""
        from srcgrad.runtime.eager.hooks import RemovableHandle
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

    def _for_saving(self) -> TensorBase:
        """What a node keeps to read this Tensor's data: itself (an Array, an alias)."""
        return self


class PrimNode(Node):
    """A recorded primitive: calls the primitive's rules from the one rule table.

    It keeps, per input, only what the rules read (the Tensor when they read its data, a
    :class:`Meta` when only its shape, nothing otherwise), plus the shape and dtype of the
    inputs that want a gradient, to undo broadcasting and restore dtypes.
    """

    __slots__ = ("_name", "prim", "params", "inputs", "metas", "needs", "ans", "_ans_version",
                 "_ans_counter", "_saved_versions", "_released", "_has_saved", "ans_tangent")

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
                    a = a._for_saving()
                    inputs.append(a)
                    versions.append((a, a._version_counter[0]))
                else:
                    inputs.append(Meta(data.shape, data.dtype) if kind else None)
            else:
                # PyTorch gives a Python number an edge where it wraps it as a Tensor
                # (``x + 1``), none where the operation takes a Scalar (``x.clamp_min(0)``)
                # nor for arrays of indices or masks
                edge = name in SCALAR_EDGE and isinstance(a, (int, float))
                if edge:
                    nexts.append(_NO_EDGE)
                metas.append(None if edge else False)
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
        self.ans_tangent = None       # the output's tangent at an open dual level, if it had one
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
            return (None,) * len(self.next_functions)
        if self._has_saved:
            self._check_saved()
        if create_graph:
            from srcgrad.runtime.eager.tensor import Tensor
            xs = self.inputs
            ans = None if self.ans is None else Tensor._make(self.ans, self, True)
            if self.ans_tangent is not None:       # forward over this backward: d(ans) too
                TANGENTS["set"](ans, self.ans_tangent)
        else:
            xs = self.inputs
            if self._saved_versions:
                xs = [x._data if isinstance(x, TensorBase) else x for x in xs]
            ans = self.ans
        prim, params = self.prim, self.params
        if not prim.complex_vjp:
            refuse_complex(prim, [g, *(m[1] for m in self.metas if m), *xs])
        rules = prim.vjps if prim.argnum_vjp is None else None
        out = []
        for i, meta in enumerate(self.metas):
            if not meta:
                if meta is None:
                    out.append(None)
                continue
            rule = rules[i] if rules is not None else prim.vjp(i)
            gi = rule(g, ans, *xs, **params)
            if (create_graph or type(gi) is not np.ndarray or gi.shape != meta[0]
                    or gi.dtype != meta[1]):
                gi = _conform(gi, meta[0], meta[1], create_graph)
            if create_graph and self._name in FUSED:
                from srcgrad.runtime.eager.double_backward import fuse
                saved = ans
                if saved is None:      # PyTorch's node reads the output: rebuild it
                    saved = Tensor._make(prim.fn(xs[0]._data, **params), self, True)
                gi = fuse(self._name, gi, (g, saved))
            out.append(gi)
        return tuple(out)


_NO_EDGE = (None, 0)
TANGENTS: dict[str, Any] = {}
"""Forward mode's ``tangent_of`` and ``set_tangent``, put here by it when it is imported: a
backward run inside a dual level hands its saved output's tangent on (the engine's nodes do
not import forward mode)."""
SCALAR_EDGE = frozenset({"AddBackward0", "SubBackward0", "MulBackward0", "DivBackward0",
                         "WhereBackward0", "torch::autograd::CopySlices"})
FUSED = frozenset({"TanhBackward0", "SigmoidBackward0", "ReluBackward0", "SoftmaxBackward0",
                   "LogSoftmaxBackward0"})   # see srcgrad.runtime.eager.double_backward


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

    def name(self) -> str:
        return "torch::autograd::AccumulateGrad"

    def apply(self, grads: list, create_graph: bool) -> tuple:
        return ()
