"""``srcgrad.autograd``: ``backward`` and ``grad``, the entry points into the engine."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from srcgrad.runtime.eager.engine import edge_of, run_backward
from srcgrad.runtime.eager.tensor import Tensor

__all__ = ["backward", "grad"]

CREATE_GRAPH_WARNING = (
    "Using backward() with create_graph=True will create a reference cycle between the "
    "parameter and its gradient which can cause a memory leak. We recommend using autograd.grad "
    "when creating the graph to avoid this. If you have to use this function, make sure to "
    "reset the .grad fields of your parameters to None after use to break the cycle and avoid "
    "the leak.")


def _as_tuple(x: Any) -> tuple:
    if x is None:
        return ()
    return (x,) if isinstance(x, Tensor) else tuple(x)


def _seed_grads(outputs: tuple, grad_outputs: Any, create_graph: bool,
                is_grads_batched: bool = False) -> list:
    """The gradient each output starts with: given, or 1 for a one-element output."""
    given = _as_tuple(grad_outputs) if grad_outputs is not None else (None,) * len(outputs)
    if len(given) != len(outputs):
        raise RuntimeError(f"got {len(given)} tensors and {len(outputs)} gradients")
    seeds = []
    for i, (out, g) in enumerate(zip(outputs, given)):
        if not out._requires_grad:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not "
                               "have a grad_fn")
        if g is None:
            if out._data.size != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            g = np.ones_like(out._data)
        else:
            data = g._data if isinstance(g, Tensor) else np.asarray(g)
            if data.shape != out._data.shape:
                raise RuntimeError(
                    f"Mismatch in shape: grad_output[{i}] has a shape of "
                    f"{Tensor._make(data).shape!r} and output[{i}] has a shape of "
                    f"{out.shape!r}.")
            if not isinstance(g, Tensor) or not create_graph:
                g = data
        if create_graph and not isinstance(g, Tensor):
            g = Tensor._make(g)
        seeds.append(g)
    return seeds


def backward(tensors: Tensor | Sequence[Tensor], grad_tensors: Any = None,
             retain_graph: bool | None = None, create_graph: bool = False,
             grad_variables: Any = None, inputs: Any = None) -> None:
    """Accumulate gradients of ``tensors`` into the ``.grad`` of graph leaves (or ``inputs``)."""
    outputs = _as_tuple(tensors)
    if grad_variables is not None:
        grad_tensors = grad_variables
    if inputs is not None:
        inputs = _as_tuple(inputs)
        if not inputs:
            raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
        for t in inputs:
            if not t._requires_grad:
                raise RuntimeError("One of the differentiated Tensors does not require grad")
    if create_graph:
        warnings.warn(CREATE_GRAPH_WARNING, UserWarning, stacklevel=3)
    seeds = _seed_grads(outputs, grad_tensors, create_graph)
    backward_roots(outputs, seeds, retain_graph=create_graph if retain_graph is None
                   else retain_graph, create_graph=create_graph, inputs=inputs, accumulate=True)


def grad(outputs: Tensor | Sequence[Tensor], inputs: Tensor | Sequence[Tensor],
         grad_outputs: Any = None, retain_graph: bool | None = None, create_graph: bool = False,
         only_inputs: bool = True, allow_unused: bool | None = None,
         is_grads_batched: bool = False, materialize_grads: bool = False) -> tuple:
    """The gradients of ``outputs`` with respect to ``inputs``, returned rather than stored."""
    outs = _as_tuple(outputs)
    ins = _as_tuple(inputs)
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when materialize_grads="
                         "True, but got: allow_unused=False.")
    allow_unused = bool(allow_unused) or materialize_grads
    seeds = _seed_grads(outs, grad_outputs, create_graph)    # outputs first, as PyTorch
    for t in ins:
        if not isinstance(t, Tensor):
            raise TypeError("grad(): inputs must be Tensors")
        if not t._requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
    found = backward_roots(outs, seeds, retain_graph=create_graph if retain_graph is None
                           else retain_graph, create_graph=create_graph, inputs=ins,
                           accumulate=False)
    result = []
    for i, (t, g) in enumerate(zip(ins, found)):
        if g is None:
            if materialize_grads:
                result.append(Tensor._make(np.zeros_like(t._data)))
                continue
            if not allow_unused:
                raise RuntimeError(f"The differentiated Tensor at index {i} appears to not "
                                   "have been used in the graph. Set allow_unused=True if this "
                                   "is the desired behavior.")
            result.append(None)
        else:
            result.append(g if isinstance(g, Tensor) else Tensor._make(g))
    return tuple(result)


def backward_roots(tensors: Sequence[Tensor], grads: Sequence[Any], *, retain_graph: bool,
                   create_graph: bool, inputs: Sequence[Tensor] | None,
                   accumulate: bool) -> list | None:
    return run_backward([edge_of(t) for t in tensors], list(grads), retain_graph=retain_graph,
                        create_graph=create_graph,
                        inputs=list(inputs) if inputs is not None else None,
                        accumulate=accumulate)
