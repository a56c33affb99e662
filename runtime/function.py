"""Custom differentiable operations: ``srcgrad.autograd.Function``, as ``torch.autograd.Function``.

``forward(ctx, *args)`` runs without recording; ``backward(ctx, *grads)`` returns one gradient
per forward argument.  The node is named ``<ClassName>Backward``, as PyTorch names it.
"""

from __future__ import annotations

import weakref
from typing import Any

from srcgrad.runtime import grad_mode
from srcgrad.runtime.engine import SECOND_BACKWARD, Node, _modified_error, edge_of
from srcgrad.runtime.tensor import Tensor

__all__ = ["Function", "FunctionCtx", "once_differentiable"]


class FunctionCtx:
    """The ``ctx`` object a custom Function's forward and backward share."""

    def __init__(self) -> None:
        self._saved: tuple | None = ()
        self._versions: tuple = ()
        self.needs_input_grad: tuple[bool, ...] = ()
        self.materialize_grads = True
        self._non_differentiable: set[int] = set()
        self._dirty: set[int] = set()

    def save_for_backward(self, *tensors: Tensor | None) -> None:
        self._saved = tensors
        self._versions = tuple(t._version_counter[0] if t is not None else 0 for t in tensors)

    @property
    def saved_tensors(self) -> tuple:
        if self._saved is None:
            raise RuntimeError(SECOND_BACKWARD)
        for t, v in zip(self._saved, self._versions):
            if t is not None and t._version_counter[0] != v:
                raise _modified_error(t._data, t._grad_fn, t._version_counter[0], v)
        return self._saved

    def mark_non_differentiable(self, *tensors: Tensor) -> None:
        self._non_differentiable.update(id(t) for t in tensors)

    def mark_dirty(self, *tensors: Tensor) -> None:
        self._dirty.update(id(t) for t in tensors)

    def set_materialize_grads(self, value: bool) -> None:
        self.materialize_grads = value


class FunctionBackward(Node):
    """The node of one call of a custom Function."""

    __slots__ = ("fn_cls", "ctx", "arg_slots", "num_outputs", "output_meta")

    def __init__(self, fn_cls: type, ctx: FunctionCtx, args: tuple) -> None:
        edges, slots = [], []
        for i, a in enumerate(args):
            if isinstance(a, Tensor):
                slots.append(i)
                edges.append(edge_of(a) if a._requires_grad else (None, 0))
        super().__init__(tuple(edges))
        self.fn_cls, self.ctx, self.arg_slots = fn_cls, ctx, slots
        self.num_outputs = 1
        self.output_meta: list = []

    def name(self) -> str:
        return f"{self.fn_cls.__name__}Backward"

    def release(self) -> None:
        self.ctx._saved = None

    def apply(self, grads: list, create_graph: bool) -> tuple:
        import numpy as np
        wrapped = []
        for g, meta in zip(grads, self.output_meta):
            if g is None and self.ctx.materialize_grads:
                g = np.zeros(meta[0], dtype=meta[1])
            wrapped.append(g if g is None or isinstance(g, Tensor) else Tensor._make(g))
        result = self.fn_cls.backward(self.ctx, *wrapped)
        if not isinstance(result, tuple):
            result = (result,)
        n_args = max(self.arg_slots, default=-1) + 1
        if len(result) < n_args:
            raise RuntimeError(f"function {self.name()} returned an incorrect number of "
                               f"gradients (expected {n_args}, got {len(result)})")
        out = []
        for slot in self.arg_slots:
            g = result[slot]
            if g is not None and not create_graph and isinstance(g, Tensor):
                g = g._data
            out.append(g)
        return tuple(out)


_NODE_CLASSES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _node_class(fn_cls: type) -> type:
    """The node class of a custom Function, named ``<Name>Backward`` as PyTorch names it."""
    cls = _NODE_CLASSES.get(fn_cls)
    if cls is None:
        cls = _NODE_CLASSES[fn_cls] = type(f"{fn_cls.__name__}Backward", (FunctionBackward,),
                                           {"__slots__": ()})
    return cls


class Function:
    """Base class of custom differentiable operations (``MyOp.apply(x)``)."""

    @staticmethod
    def forward(ctx: FunctionCtx, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("You must implement the forward function for custom "
                                  "autograd.Function.")

    @staticmethod
    def backward(ctx: FunctionCtx, *grad_outputs: Any) -> Any:
        raise NotImplementedError("You must implement either the backward or vjp method for "
                                  "your custom autograd.Function to use it with backward mode "
                                  "AD.")

    vjp = backward

    @classmethod
    def apply(cls, *args: Any, **kwargs: Any) -> Any:
        ctx = FunctionCtx()
        ctx.needs_input_grad = tuple(isinstance(a, Tensor) and a._requires_grad for a in args)
        uses_setup = "setup_context" in cls.__dict__ or any(
            "setup_context" in k.__dict__ for k in cls.__mro__[1:-1]
            if k is not Function)
        with grad_mode.no_grad():
            if uses_setup:
                outputs = cls.forward(*args, **kwargs)
                cls.setup_context(ctx, args, outputs)
            else:
                outputs = cls.forward(ctx, *args, **kwargs)
        if not (grad_mode.is_grad_enabled() and any(ctx.needs_input_grad)):
            return outputs
        node = _node_class(cls)(cls, ctx, args)
        single = not isinstance(outputs, tuple)
        outs = (outputs,) if single else outputs
        node.num_outputs = len(outs)
        wrapped = []
        for nr, o in enumerate(outs):
            if not isinstance(o, Tensor):
                node.output_meta.append(((), None))
                wrapped.append(o)
                continue
            node.output_meta.append((o._data.shape, o._data.dtype))
            differentiable = o._data.dtype.kind in "fc" and id(o) not in ctx._non_differentiable
            if id(o) in ctx._dirty and differentiable:
                o._grad_fn, o._output_nr, o._requires_grad = node, nr, True
                wrapped.append(o)
                continue
            t = Tensor._make(o._data, node if differentiable else None, differentiable)
            t._output_nr = nr
            wrapped.append(t)
        return wrapped[0] if single else tuple(wrapped)

    @staticmethod
    def setup_context(ctx: FunctionCtx, inputs: tuple, output: Any) -> None:
        raise NotImplementedError


def once_differentiable(fn: Any) -> Any:
    """Marks a backward that is not itself differentiable (accepted for compatibility)."""
    return fn
