"""Nodes that a ``create_graph`` backward records where PyTorch records one fused node.

PyTorch differentiates ``tanh`` with one kernel, ``tanh_backward(grad, result)``, so the
gradient made with ``create_graph=True`` has ``grad_fn`` ``TanhBackwardBackward0``.  srcgrad
runs the same rule as several recorded primitives; :func:`fuse` hides that subgraph behind one
:class:`FusedBackward` node with PyTorch's name and inputs, which backpropagates by running
the subgraph (so any order of derivative stays exact).
"""

from __future__ import annotations

from typing import Any

from srcgrad.runtime.eager.node import TANGENTS, Node, edge_of

__all__ = ["FUSED", "FusedBackward", "fuse", "record_as", "Underivable", "underivable"]

FUSED = {
    "TanhBackward0": "TanhBackwardBackward0",
    "SigmoidBackward0": "SigmoidBackwardBackward0",
    "ReluBackward0": "ThresholdBackwardBackward0",
    "SoftmaxBackward0": "SoftmaxBackwardDataBackward0",
    "LogSoftmaxBackward0": "LogSoftmaxBackwardDataBackward0",
}
"""Node name → the name PyTorch gives the node of its recorded backward."""

_CLASSES: dict[tuple, type] = {}


class FusedBackward(Node):
    """One node standing for the recorded subgraph from ``inputs`` to ``output``."""

    __slots__ = ("_name", "output", "inputs")

    def __init__(self, name: str, output: Any, inputs: tuple) -> None:
        super().__init__(tuple(edge_of(t) for t in inputs))
        self._name = name
        self.output = output
        self.inputs = inputs

    def name(self) -> str:
        return self._name

    def apply(self, grads: list, create_graph: bool) -> tuple:
        from srcgrad.runtime.eager.engine import run_backward
        g = grads[0]
        wanted = list({id(t): t for t in self.inputs if t._requires_grad}.values())
        if g is None or self.output._grad_fn is None or not wanted:
            return (None,) * len(self.inputs)
        found = run_backward([(self.output._grad_fn, self.output._output_nr)], [g],
                             retain_graph=True, create_graph=create_graph, inputs=wanted,
                             accumulate=False, cut=True)
        by_id = {id(t): f for t, f in zip(wanted, found)}
        # an input given twice gets its whole gradient once (the engine adds along edges)
        return tuple(by_id.pop(id(t), None) for t in self.inputs)


def fuse(node_name: str, result: Any, inputs: tuple) -> Any:
    """``result`` (a Tensor computed from ``inputs`` by a rule) behind PyTorch's fused node."""
    return record_as(FUSED[node_name], result, inputs)


def record_as(name: str, result: Any, inputs: tuple) -> Any:
    """``result``, computed from the Tensors ``inputs`` by several recorded operations, shown
    as the one node ``name`` that PyTorch records for the same call (``AddBackward0`` for
    ``x.add(y, alpha=2)``)."""
    if not any(t._requires_grad for t in inputs):
        return result
    cls = _CLASSES.get((FusedBackward, name))
    if cls is None:
        cls = _CLASSES[FusedBackward, name] = type(name, (FusedBackward,), {"__slots__": ()})
    from srcgrad.runtime.eager.tensor import Tensor
    fused = Tensor._make(result._data, cls(name, result, inputs), True)
    tangent = TANGENTS["of"](result) if TANGENTS else None
    if tangent is not None:                  # forward over this backward: it keeps its tangent
        TANGENTS["set"](fused, tangent)
    return fused


class Underivable(Node):
    """A node whose backward raises, as PyTorch's for operations without a derivative."""

    __slots__ = ("_name", "error")

    def __init__(self, name: str, error: Exception, inputs: tuple) -> None:
        super().__init__(tuple(edge_of(t) for t in inputs))
        self._name = name
        self.error = error

    def name(self) -> str:
        return self._name

    def apply(self, grads: list, create_graph: bool) -> tuple:
        raise type(self.error)(*self.error.args)


def underivable(name: str, error: Exception, data: Any, inputs: tuple) -> Any:
    """A Tensor holding ``data`` whose backward raises ``error`` (``floor_divide``)."""
    from srcgrad.runtime.eager import grad_mode
    from srcgrad.runtime.eager.tensor import Tensor
    if not grad_mode.is_grad_enabled() or not any(t._requires_grad for t in inputs):
        return Tensor._make(data)
    cls = _CLASSES.get((Underivable, name))
    if cls is None:
        cls = _CLASSES[Underivable, name] = type(name.rsplit("::", 1)[-1], (Underivable,),
                                                 {"__slots__": ()})
    return Tensor._make(data, cls(name, error, inputs), True)
