"""``autograd.functional`` (jacobian, hessian, vjp, jvp, hvp) and ``gradcheck``."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from srcgrad.runtime.eager import forward_ad, grad_mode
from srcgrad.runtime.eager.autograd import grad
from srcgrad.runtime.eager.tensor import Tensor

__all__ = ["jacobian", "hessian", "vjp", "jvp", "hvp", "vhp", "gradcheck", "gradgradcheck",
           "GradcheckError"]


def _tuple(x: Any) -> tuple[bool, tuple]:
    return (True, tuple(x)) if isinstance(x, (tuple, list)) else (False, (x,))


def _prepare(inputs: tuple, create_graph: bool) -> tuple:
    """Fresh differentiable views of the inputs, so that the caller's graph is not touched."""
    out = []
    for t in inputs:
        if create_graph and t.requires_grad:
            out.append(t.view_as(t))
        else:
            out.append(t.detach().requires_grad_(True))
    return tuple(out)


def _grads(outputs: Any, inputs: tuple, v: Any, create_graph: bool) -> tuple:
    got = grad(outputs, inputs, v, retain_graph=True, create_graph=create_graph,
               allow_unused=True)
    return tuple(g if g is not None else Tensor._make(np.zeros_like(x._data))
                 for g, x in zip(got, inputs))


def vjp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple:
    """``(func(inputs), vᵀ J)``."""
    is_tuple, ins = _tuple(inputs)
    with grad_mode.enable_grad():
        ins = _prepare(ins, create_graph)
        out = func(*ins)
        g = _grads(out, ins, v, create_graph)
    if not create_graph:
        out = out.detach() if isinstance(out, Tensor) else tuple(o.detach() for o in out)
        g = tuple(x.detach() for x in g)
    return out, (g if is_tuple else g[0])


def _tangents(v: Any, inputs: tuple, is_tuple: bool) -> tuple:
    """``v`` as one tangent per input, checked (with the inputs) as PyTorch checks them."""
    for i, x in enumerate(inputs):
        if not isinstance(x, Tensor):
            where = f"the value at index {i}" if is_tuple else "the given inputs"
            raise TypeError("The inputs given to jvp must be either a Tensor or a tuple of "
                            f"Tensors but {where} has type {type(x)}.")
    if v is None:
        if len(inputs) != 1 or inputs[0].numel() != 1:
            raise RuntimeError("The vector v can only be None if the input to the user-provided "
                               "function is a single Tensor with a single element.")
        return (Tensor._make(np.ones_like(inputs[0]._data)),)
    _, vs = _tuple(v)
    if len(vs) != len(inputs):
        raise RuntimeError(f"v is a tuple of invalid length: should be {len(inputs)} but got "
                           f"{len(vs)}.")
    for vi, x in zip(vs, inputs):
        if tuple(vi.shape) != tuple(x.shape):
            raise RuntimeError(f"v has invalid size: should be {x.shape} but got {vi.shape}.")
    return vs


def jvp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple:
    """``(func(inputs), J v)`` in one forward pass, by forward-mode AD (:mod:`forward_ad`).

    With ``create_graph`` both are differentiable, with respect to the inputs and to ``v``.
    """
    is_tuple, ins = _tuple(inputs)
    vs = _tangents(v, ins, is_tuple)
    with grad_mode.enable_grad():
        ins = _prepare(ins, create_graph)
        # a copy: writes in place in ``func`` change the tangent, never the caller's ``v``
        vs = tuple(vi.clone() if create_graph else vi.detach().clone() for vi in vs)
        with forward_ad.dual_level():
            out = func(*(forward_ad.make_dual(x, vi) for x, vi in zip(ins, vs)))
            out_is_tuple, outs = _tuple(out)
            for o in outs:
                if not isinstance(o, Tensor):
                    raise TypeError(
                        "The outputs of the user-provided function given to jvp must be either "
                        "a Tensor or a tuple of Tensors but the given outputs of the "
                        f"user-provided function has type {type(o)}.")
            result = [forward_ad.unpack_dual(o).tangent for o in outs]
    for i, (r, o) in enumerate(zip(result, outs)):
        if r is None and strict:
            raise RuntimeError(f"Output {i} of the user-provided function does not require "
                               "gradients. The outputs must be computed in a differentiable "
                               "manner from the input when running in strict mode.")
        if r is None:
            result[i] = Tensor._make(np.zeros_like(o._data))
    if not create_graph:
        outs = tuple(o.detach() for o in outs)
        result = [r.detach() for r in result]
    return ((tuple(outs) if out_is_tuple else outs[0]),
            (tuple(result) if out_is_tuple else result[0]))


def jacobian(func: Callable, inputs: Any, create_graph: bool = False, strict: bool = False,
             vectorize: bool = False, strategy: str = "reverse-mode") -> Any:
    """The Jacobian of ``func`` at ``inputs``: one row of vᵀJ per output element."""
    is_tuple, ins = _tuple(inputs)
    with grad_mode.enable_grad():
        ins = _prepare(ins, create_graph)
        out = func(*ins)
        out_is_tuple, outs = _tuple(out)
        blocks = []
        for o in outs:
            flat = o.reshape(-1)
            rows = [_grads(flat[j], ins, None, create_graph) for j in range(flat.shape[0])]
            per_input = []
            for k, x in enumerate(ins):
                if rows:
                    from srcgrad.runtime.eager.views import stack
                    jac = stack([r[k].reshape(-1) for r in rows]).reshape(
                        *(tuple(o.shape) + tuple(x.shape)))
                else:
                    jac = Tensor._make(np.zeros(tuple(o.shape) + tuple(x.shape),
                                                dtype=x._data.dtype))
                per_input.append(jac if create_graph else jac.detach())
            blocks.append(tuple(per_input) if is_tuple else per_input[0])
    return tuple(blocks) if out_is_tuple else blocks[0]


def hessian(func: Callable, inputs: Any, create_graph: bool = False, strict: bool = False,
            vectorize: bool = False, outer_jacobian_strategy: str = "reverse-mode") -> Any:
    """The Hessian of a scalar ``func``: the Jacobian of its gradient."""
    is_tuple, _ = _tuple(inputs)

    def gradient(*xs: Tensor) -> Any:
        g = jacobian(func, xs if is_tuple else xs[0], create_graph=True)
        return g
    return jacobian(gradient, inputs, create_graph=create_graph)


def vhp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple:
    """``(func(inputs), vᵀ H)``."""
    is_tuple, ins = _tuple(inputs)
    with grad_mode.enable_grad():
        ins = _prepare(ins, create_graph)
        out = func(*ins)
        g = _grads(out, ins, None, True)
        h = _grads(g, ins, v, create_graph)
    if not create_graph:
        out, h = out.detach(), tuple(x.detach() for x in h)
    return out, (h if is_tuple else h[0])


hvp = vhp   # H is symmetric for the twice-differentiable functions srcgrad records

# ---------------------------------------------------------------------------------------------


class GradcheckError(RuntimeError):
    """Analytical and numerical gradients disagree."""


def _numerical_jacobian(fn: Callable, inputs: tuple, k: int, eps: float) -> np.ndarray:
    x = inputs[k]
    base = x._data
    cols = []
    for j in range(base.size):
        flat = base.reshape(-1)
        old = flat[j]
        flat[j] = old + eps
        plus = np.concatenate([np.ravel(o._data) for o in _outs(fn(*inputs))])
        flat[j] = old - eps
        minus = np.concatenate([np.ravel(o._data) for o in _outs(fn(*inputs))])
        flat[j] = old
        cols.append((plus - minus) / (2 * eps))
    return np.stack(cols, axis=1) if cols else np.zeros((0, 0))


def _outs(out: Any) -> tuple:
    return tuple(out) if isinstance(out, (tuple, list)) else (out,)


def gradcheck(func: Callable, inputs: Any, *, eps: float = 1e-6, atol: float = 1e-5,
              rtol: float = 1e-3, raise_exception: bool = True, **_: Any) -> bool:
    """Compare the engine's Jacobian with central finite differences, as PyTorch's gradcheck."""
    _, ins = _tuple(inputs)
    if not any(isinstance(t, Tensor) and t.requires_grad for t in ins):
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but "
                         "none of them have requires_grad=True.")
    for i, t in enumerate(ins):
        if isinstance(t, Tensor) and t.requires_grad and t._data.dtype != np.float64:
            warnings.warn(f"Input #{i} requires gradient and is not a double precision floating "
                          "point or complex. This check will likely fail if all the inputs are "
                          "not of double precision floating point or complex. ", UserWarning,
                          stacklevel=2)
    for k, x in enumerate(ins):
        if not (isinstance(x, Tensor) and x.requires_grad):
            continue
        with grad_mode.no_grad():
            numerical = _numerical_jacobian(func, ins, k, eps)
        rows = []
        with grad_mode.enable_grad():
            out_all = _outs(func(*ins))
            for o in out_all:
                flat = o.reshape(-1)
                for j in range(flat.shape[0]):
                    g = grad(flat[j], (x,), retain_graph=True, allow_unused=True)[0]
                    rows.append(np.zeros(x._data.size) if g is None else g._data.reshape(-1))
        analytical = np.stack(rows) if rows else np.zeros_like(numerical)
        if not np.allclose(analytical, numerical, rtol=rtol, atol=atol):
            if not raise_exception:
                return False
            raise GradcheckError(f"Jacobian mismatch for output 0 with respect to input {k},\n"
                                 f"numerical:{numerical}\nanalytical:{analytical}\n")
    return True


def gradgradcheck(func: Callable, inputs: Any, grad_outputs: Any = None, **kwargs: Any) -> bool:
    """gradcheck of the gradient itself (second derivatives through ``create_graph``)."""
    _, ins = _tuple(inputs)
    with grad_mode.no_grad():
        outs = _outs(func(*ins))
    rng = np.random.default_rng(0)
    gos = _tuple(grad_outputs)[1] if grad_outputs is not None else tuple(
        Tensor._make(rng.standard_normal(o._data.shape).astype(o._data.dtype)) for o in outs)

    def first(*xs: Tensor) -> tuple:
        with grad_mode.enable_grad():      # also under gradcheck's finite differences
            return grad(func(*xs), [x for x in xs if x.requires_grad], gos, create_graph=True,
                        allow_unused=True)
    return gradcheck(first, ins, **kwargs)
