"""Custom differentiable operations: ``srcgrad.autograd.Function``, as ``torch.autograd.Function``.

``forward(ctx, *args)`` runs without recording; ``backward(ctx, *grads)`` returns one gradient
per forward argument.  The node is named ``<ClassName>Backward``, as PyTorch names it.  Inside
a dual level (forward mode), ``jvp(ctx, *tangents)`` returns one tangent per output; a
Function without it refuses dual inputs, as in PyTorch.
"""

from __future__ import annotations

import contextlib
import weakref
from typing import Any

import numpy as np

from srcgrad.runtime.eager import forward_ad, grad_mode
from srcgrad.runtime.eager import tensor as _tensor
from srcgrad.runtime.eager.engine import SECOND_BACKWARD, Node, _modified_error, edge_of
from srcgrad.runtime.eager.tensor import Tensor

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
        self._forward_saved: tuple = ()
        self._in_jvp = False       # saved_tensors gives what save_for_forward kept

    def save_for_backward(self, *tensors: Tensor | None) -> None:
        self._saved = tensors
        self._versions = tuple(t._version_counter[0] if t is not None else 0 for t in tensors)

    def save_for_forward(self, *tensors: Tensor | None) -> None:
        """Keep ``tensors`` for ``jvp``, where ``ctx.saved_tensors`` gives them."""
        if not all(t is None or isinstance(t, Tensor) for t in tensors):
            raise AssertionError("save_for_forward expects all arguments to be tensors; you "
                                 "should save non-tensors as attributes on ctx.")
        self._forward_saved = tensors

    @property
    def saved_tensors(self) -> tuple:
        if self._in_jvp:
            return self._forward_saved
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

    @staticmethod
    def jvp(ctx: FunctionCtx, *grad_inputs: Any) -> Any:
        """The outputs' tangents given the inputs' (forward mode); needed for dual inputs."""
        raise NotImplementedError("You must implement the jvp function for custom "
                                  "autograd.Function to use it with forward mode AD.")

    @classmethod
    def apply(cls, *args: Any, **kwargs: Any) -> Any:
        ctx = FunctionCtx()
        ctx.needs_input_grad = tuple(isinstance(a, Tensor) and a._requires_grad for a in args)
        uses_setup = "setup_context" in cls.__dict__ or any(
            "setup_context" in k.__dict__ for k in cls.__mro__[1:-1]
            if k is not Function)
        level = _tensor._forward_hook is not None       # a dual level is open
        # forward sees no tangents, as in PyTorch: jvp gives the outputs theirs
        with grad_mode.no_grad(), forward_ad.paused() if level else _NO_PAUSE:
            if uses_setup:
                outputs = cls.forward(*args, **kwargs)
                cls.setup_context(ctx, args, outputs)
            else:
                outputs = cls.forward(ctx, *args, **kwargs)
        dual = level and any(isinstance(a, Tensor) and forward_ad.tangent_of(a) is not None
                             for a in args)
        single = not isinstance(outputs, tuple)
        outs = (outputs,) if single else outputs
        if grad_mode.is_grad_enabled() and any(ctx.needs_input_grad):
            wrapped = _recorded(cls, ctx, args, outs)
        elif dual:
            wrapped = list(outs)
        else:
            return outputs
        if dual:
            _give_tangents(cls, ctx, args, outs, wrapped)
        return wrapped[0] if single else tuple(wrapped)

    @staticmethod
    def setup_context(ctx: FunctionCtx, inputs: tuple, output: Any) -> None:
        raise NotImplementedError


_NO_PAUSE = contextlib.nullcontext()


def _recorded(cls: type, ctx: FunctionCtx, args: tuple, outs: tuple) -> list:
    """The outputs as ``apply`` returns them when it records: the differentiable ones are
    outputs of one ``<Name>Backward`` node."""
    node = _node_class(cls)(cls, ctx, args)
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
    return wrapped


# ---------------------------------------------------------------------------------------------
# Forward mode: ``jvp``, with PyTorch's checks and messages.

NOT_DIFFERENTIABLE = ("Function's jvp returned a gradient at position {}, but  the corresponding "
                      "forward output is not a differentiable Tensor.You should return None at "
                      "that position instead.")
NOT_IN_PLACE = ("An inplace custom Function is not modifying the forward mode gradients "
                "inplace. If the forward is modifying an input inplace, then the jvp function "
                "must modify the corresponding gradient inplace.")
NOT_A_VIEW = ("A custom Function's forward is returning a view (or an input as-is) but the jvp "
              "is not returning a view.")
NOT_ITS_VIEW = ("A custom Function is returning a view but the jvp is not returning a view of "
                "the given grad input.")


def _give_tangents(cls: type, ctx: FunctionCtx, args: tuple, outs: tuple, wrapped: list
                   ) -> None:
    """Call ``cls.jvp`` with one tangent per argument (None for a non-Tensor, zeros for a
    Tensor without one unless grads are not materialized) and give each output of ``outs``
    (returned as ``wrapped``) the tangent it returns."""
    given = []
    for a in args:
        t = forward_ad.tangent_of(a) if isinstance(a, Tensor) else None
        if t is None and isinstance(a, Tensor) and ctx.materialize_grads and \
                a._data.dtype.kind in "fc":
            t = Tensor._make(np.zeros_like(a._data))
        given.append(t)
    ctx._in_jvp = True
    try:
        with forward_ad.paused():
            result = cls.jvp(ctx, *given)
    finally:
        ctx._in_jvp = False
    result = result if isinstance(result, tuple) else (result,)
    if len(result) != len(outs):
        raise RuntimeError("Function's jvp returned an invalid number of forward gradients "
                           f"(expected {len(outs)} but got {len(result)})")
    for nr, (o, t) in enumerate(zip(outs, result)):
        if t is None or not isinstance(o, Tensor):
            continue
        if not isinstance(t, Tensor):
            raise RuntimeError(f"expected Variable or None (got {type(t).__name__}) for grad "
                               f"output {nr}.")
        if o._data.dtype.kind not in "fc" or id(o) in ctx._non_differentiable:
            raise RuntimeError(NOT_DIFFERENTIABLE.format(nr))
        source = _input_viewed(o, args)
        if id(o) in ctx._dirty and source is not None:
            if t is not given[source] and given[source] is not None:
                raise RuntimeError(NOT_IN_PLACE)
            forward_ad.check_size(o, t)
            with forward_ad.paused():
                forward_ad.write(o, t)        # o is the input: its tangent, in place
            continue
        if source is not None:
            if t._base is None:
                raise RuntimeError(NOT_A_VIEW)
            if given[source] is None or _root(t) is not _root(given[source]):
                raise RuntimeError(NOT_ITS_VIEW)
        forward_ad.check_size(o, t)
        out = wrapped[nr]
        if any(out is a for a in args):       # the input as it is: its view carries t
            with forward_ad.paused():
                out = wrapped[nr] = forward_ad.same_view(o)
        forward_ad.set_tangent(out, t if t._data.dtype == o._data.dtype else t.to(o.dtype))


def _input_viewed(o: Tensor, args: tuple) -> int | None:
    """The position of the argument ``o`` is, or is a view of (None: none)."""
    while o is not None:
        for i, a in enumerate(args):
            if a is o:
                return i
        o = o._base
    return None


def _root(t: Tensor) -> Tensor:
    while t._base is not None:
        t = t._base
    return t


def once_differentiable(fn: Any) -> Any:
    """Marks a backward that is not itself differentiable (accepted for compatibility)."""
    return fn
