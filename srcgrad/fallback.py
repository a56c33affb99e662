"""The fallback: a transform run on the eager engine, with the same results as compiled.

Also what the transforms need around it: calling a function with its parameters' kinds
(``*args``, keyword-only), and running the plain function to learn whether NumPy itself raises.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

from srcgrad import pytree
from srcgrad.eager_lists import stacking_list_operands
from srcgrad.errors import NonScalarOutput
from srcgrad.runtime import grad_mode
from srcgrad.runtime.autograd import grad as autograd_grad
from srcgrad.runtime.ndarray import Array, as_array_leaf, private_copy
from srcgrad.runtime.tensor import Tensor

__all__ = ["eager_transform", "eager_jvp", "call_with", "plain_error"]


def _value(x: Any) -> Any:
    if isinstance(x, Tensor):
        return x._data
    if isinstance(x, (tuple, list)):
        return type(x)(_value(v) for v in x)
    return x


def _result_gradient(g: Any, original: Any, higher: bool) -> Any:
    if higher and g is not None:              # higher order: the gradient stays recorded
        g.__class__ = Array
        return g
    if isinstance(original, Tensor):
        return pytree.zero_like(original._data)
    if g is None:
        return pytree.zero_like(original)
    return pytree.same_kind(g._data, original)


def _wrap(values: list, positions: tuple) -> tuple[list, dict]:
    """Replace the differentiable leaves of the ``positions`` arguments by Array leaves.

    The function is handed private copies (of the leaves too: a copy of a leaf is not a leaf,
    so that it may be written into), never the caller's arrays (SPEC §7).  A Tensor that
    requires grad (a transform differentiated by an outer one) is itself the leaf.
    """
    args = list(values)
    leaves: dict[int, tuple[list, Any, list]] = {}
    for i, value in enumerate(values):
        flat, structure = pytree.flatten(value)
        if i in positions:
            wrapped = [_leaf(v) for v in flat]
            leaves[i] = (flat, structure, wrapped)
            private = [private_copy(w) if isinstance(w, Array) else _copy(w) for w in wrapped]
        else:
            private = [_copy(v) for v in flat]
        args[i] = pytree.unflatten(structure, private)
    return args, leaves


def _leaf(value: Any) -> Any:
    if isinstance(value, Tensor):
        if value.requires_grad:
            return value
        value = value._data
    return as_array_leaf(value) if pytree.differentiable(value) else value


def _copy(value: Any) -> Any:
    return value.copy() if isinstance(value, np.ndarray) else value


def _gradients(out: Any, leaves: dict, seed: Any, higher: bool = False) -> dict:
    """Gradients of the output (a Tensor, or a tuple/list of them with a cotangent each);
    ``higher``: recorded themselves, for an outer transform that differentiates them."""
    inputs = [w for _, _, wrapped in leaves.values() for w in wrapped if isinstance(w, Tensor)]
    outs, seeds = _outputs_and_seeds(out, seed)
    found = autograd_grad(outs, inputs, seeds, retain_graph=True, allow_unused=True,
                          create_graph=higher) if inputs and outs else [None] * len(inputs)
    it = iter(found)
    result = {}
    for i, (flat, structure, wrapped) in leaves.items():
        grads = [_result_gradient(next(it), v, higher) if isinstance(w, Tensor) else None
                 for v, w in zip(flat, wrapped)]
        result[i] = pytree.unflatten(structure, grads)
    return result


def _outputs_and_seeds(out: Any, cotangent: Any) -> tuple[list, list | None]:
    """The outputs (a Tensor, or a pytree of them) that require grad, and their cotangents
    (None: the scalar output's own ones)."""
    flat = pytree.flatten(out)[0]
    keep = [k for k, o in enumerate(flat) if isinstance(o, Tensor) and o.requires_grad]
    if cotangent is None:
        return [flat[k] for k in keep], None
    cotangents = pytree.flatten(cotangent)[0]
    return [flat[k] for k in keep], [Tensor._make(np.asarray(cotangents[k])) for k in keep]


def eager_transform(fun: Any, kind: str, values: list, wrt: tuple, single: bool,
                    call: Callable[[Any, list], Any] | None = None) -> Any:
    """``grad``/``value_and_grad``/``vjp`` of ``fun`` computed by the eager engine;
    ``call(fun, args)`` calls it (default: the values as positional arguments)."""
    args, leaves = _wrap(values, wrt)
    higher = any(isinstance(v, Tensor) and v.requires_grad
                 for value in values for v in pytree.flatten(value)[0])
    with grad_mode.enable_grad(), stacking_list_operands(fun):
        out = call(fun, args) if call is not None else fun(*args)
    if kind == "vjp":
        def vjp_fn(cotangent: Any) -> tuple:
            grads = _gradients(out, leaves, cotangent, higher)
            return tuple(grads[i] if pytree.differentiable(values[i]) or not pytree.is_leaf(
                values[i]) else None for i in range(len(values)))
        return (out if higher else _value(out)), vjp_fn
    if np.size(_value(out)) != 1:
        raise NonScalarOutput(f"grad requires a scalar output, but the function returned shape "
                         f"{np.shape(_value(out))}; use srcgrad.vjp for non-scalar outputs")
    grads = _gradients(out, leaves, None, higher)
    result = grads[wrt[0]] if single else tuple(grads[i] for i in wrt)
    return ((out if higher else _value(out)), result) if kind == "value_and_grad" else result


def call_with(signature: inspect.Signature) -> Callable[[Any, list], Any] | None:
    """How to call a function with one value per parameter (None: all positional)."""
    kinds = [p.kind for p in signature.parameters.values()]
    if all(k in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
           for k in kinds):
        return None
    names = list(signature.parameters)

    def call(fun: Any, values: list) -> Any:
        args: list = []
        kwargs: dict = {}
        for name, kind, value in zip(names, kinds, values):
            if kind is inspect.Parameter.VAR_POSITIONAL:
                args.extend(value)
            elif kind is inspect.Parameter.VAR_KEYWORD:
                kwargs.update(value)
            elif kind is inspect.Parameter.KEYWORD_ONLY:
                kwargs[name] = value
            else:
                args.append(value)
        return fun(*args, **kwargs)
    return call


def plain_error(fun: Any, values: list, call: Callable | None) -> Exception | None:
    """The exception the plain function raises on (copies of) these values, or None."""
    plain = [pytree.unflatten(s, [_copy(_value(v)) for v in flat])
             for flat, s in map(pytree.flatten, values)]
    try:
        with grad_mode.no_grad():
            call(fun, plain) if call is not None else fun(*plain)
    except Exception as exc:  # noqa: BLE001 - any error of the user's code is the answer
        return exc
    return None


def eager_jvp(fun: Any, primals: tuple, tangents: tuple, wrt: tuple) -> tuple:
    """``(fun(*primals), J·tangents)`` on the eager engine's forward mode: each float leaf of
    the arguments at ``wrt`` a dual Array (a private copy) carrying its tangent."""
    from srcgrad.runtime import forward_ad
    with forward_ad.dual_level(), grad_mode.enable_grad(), stacking_list_operands(fun):
        args = [pytree.unflatten(tree, [_copy(v) for v in flat])
                for flat, tree in map(pytree.flatten, primals)]
        for i in wrt:
            flat, tree = pytree.flatten(primals[i])
            duals = [forward_ad.make_dual(as_array_leaf(v), Tensor._make(
                np.asarray(t, dtype=np.asarray(v).dtype))) if pytree.differentiable(v)
                else _copy(v) for v, t in zip(flat, pytree.flatten(tangents[i])[0])]
            args[i] = pytree.unflatten(tree, duals)
        out = fun(*args)
        flat, structure = pytree.flatten(out)
        found = [forward_ad.unpack_dual(o).tangent if isinstance(o, Tensor) else None
                 for o in flat]
    result = []
    for o, d in zip(flat, found):
        value = _value(o)
        result.append(pytree.same_kind(d._data, value) if d is not None else
                      pytree.zero_like(value) if pytree.differentiable(value) else None)
    return _value(out), pytree.unflatten(structure, result)


def eager_hessian(fun: Any, args: tuple, p: int) -> Any:
    """The Hessian of a scalar ``fun`` with respect to the array or float ``args[p]`` on
    the eager engine (its compiled directional derivative fell back)."""
    x = args[p]
    flat = np.asarray(x, dtype=float).reshape(-1)
    columns = []
    for i in range(flat.size):
        unit = np.zeros_like(flat)
        unit[i] = 1.0
        unit = float(unit[0]) if isinstance(x, float) else unit.reshape(np.shape(x))

        def grad_of(*values: Any) -> Any:
            return eager_transform(fun, "grad", list(values), (p,), True)
        tangents = tuple(unit if k == p else pytree.zero_like(a) if pytree.differentiable(a)
                         else a for k, a in enumerate(args))
        columns.append(np.asarray(eager_jvp(grad_of, args, tangents, (p,))[1]))
    shape = np.shape(x) + np.shape(x)
    return np.stack(columns, axis=-1).reshape(shape) if columns else np.zeros(shape)
