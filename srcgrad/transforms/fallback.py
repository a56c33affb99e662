"""The fallback: a transform run on the eager engine, with the same results as compiled.

Also what the transforms need around it: calling a function with its parameters' kinds
(``*args``, keyword-only), and running the plain function to learn whether NumPy itself raises.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

from srcgrad.errors import CompileError, NonScalarOutput
from srcgrad.runtime.eager import grad_mode
from srcgrad.runtime.eager.autograd import grad as autograd_grad
from srcgrad.runtime.eager.ndarray import Array, as_array_leaf, private_copy
from srcgrad.runtime.eager.tensor import Tensor
from srcgrad.runtime.quiet import muted
from srcgrad.runtime.rules import streams
from srcgrad.runtime.subclasses import SubclassError, refuse_subclass
from srcgrad.transforms import pytree
from srcgrad.transforms.argument_writes import watched
from srcgrad.transforms.levels import (
    copy_array,
    forward_hook,
    graph_mark,
    hand_back,
    leaf,
    nested,
    other,
    plain_value,
    recorded,
    running,
    unless_outer,
)
from srcgrad.transforms.object_copies import plain_globals, private_objects

__all__ = ["eager_transform", "eager_jvp", "eager_hessian", "eager_jacobian", "call_with",
           "plain_error", "failure"]


def _result_gradient(g: Any, original: Any, higher: bool, inside: bool) -> Any:
    if isinstance(original, Tensor):
        original = original._data
    if higher and g is not None:              # higher order: the gradient stays recorded
        return hand_back(g, inside)
    if g is None:
        return pytree.zero_like(original)
    return pytree.same_kind(g._data, original)


def _wrap(values: list, positions: tuple, connect: bool) -> tuple[list, dict]:
    """Replace the differentiable leaves of the ``positions`` arguments by leaf Arrays.

    The function is handed private copies (of the leaves too: a copy of a leaf is not a leaf,
    so that it may be written into), never the caller's arrays.  ``connect``: values of an
    outer level stay recorded (see :func:`leaf` and :func:`other`).
    """
    args = list(values)
    leaves: dict[int, tuple[list, Any, list]] = {}
    for i, value in enumerate(values):
        flat, structure = pytree.flatten(value)
        if i in positions:
            wrapped = [leaf(v, connect) for v in flat]
            leaves[i] = (flat, structure, wrapped)
            private = [private_copy(w) if isinstance(w, Array) else copy_array(w) for w in wrapped]
        else:
            private = [other(v, connect) for v in flat]
        args[i] = pytree.unflatten(structure, private)
    return watched(args, list(values)), leaves        # a dict's writes: warned, or refused


def _gradients(out: Any, leaves: dict, seed: Any, higher: bool = False,
               inside: bool = False) -> dict:
    """Gradients of the output (a Tensor, or a tuple/list of them with a cotangent each);
    ``higher``: recorded themselves, for an outer level that differentiates them."""
    inputs = [w for _, _, wrapped in leaves.values() for w in wrapped if isinstance(w, Tensor)]
    outs, seeds = _outputs_and_seeds(out, seed, higher)
    found = autograd_grad(outs, inputs, seeds, retain_graph=True, allow_unused=True,
                          create_graph=higher) if inputs and outs else [None] * len(inputs)
    it = iter(found)
    result = {}
    for i, (flat, structure, wrapped) in leaves.items():
        grads = [_result_gradient(next(it), v, higher, inside) if isinstance(w, Tensor)
                 else None for v, w in zip(flat, wrapped)]
        result[i] = pytree.unflatten(structure, grads)
    return result


def _outputs_and_seeds(out: Any, cotangent: Any, higher: bool) -> tuple[list, list | None]:
    """The outputs (a Tensor, or a pytree of them) that require grad, and their cotangents
    (None: the scalar output's own ones); a recorded cotangent stays recorded when
    ``higher``."""
    flat = pytree.flatten(out)[0]
    keep = [k for k, o in enumerate(flat) if isinstance(o, Tensor) and o.requires_grad]
    if cotangent is None:
        return [flat[k] for k in keep], None
    cotangents = pytree.flatten(cotangent)[0]
    for c in cotangents:
        refuse_subclass(c, "a cotangent")
    seeds = [c if higher and isinstance(c, Tensor) else
             Tensor._make(np.asarray(c._data if isinstance(c, Tensor) else c))
             for c in (cotangents[k] for k in keep)]
    return [flat[k] for k in keep], seeds


def eager_transform(fun: Any, kind: str, values: list, wrt: tuple, single: bool,
                    call: Callable[[Any, list], Any] | None = None, outer: bool = False) -> Any:
    """``grad``/``value_and_grad``/``vjp`` of ``fun`` computed by the eager engine;
    ``call(fun, args)`` calls it (default: the values as positional arguments); ``outer``:
    ``fun`` reads Tensors of the caller's (its results stay recorded)."""
    inside, connect, higher = recorded(values, outer)
    mark = graph_mark()
    values = private_objects(values, True)    # the caller's objects: never changed
    args, leaves = _wrap(values, wrt, connect)
    streams.rewind()                  # a rerun of a watched call: the draws the first saw
    try:
        with running(fun):
            out = call(fun, args) if call is not None else fun(*args)
    finally:
        plain_globals(fun)                    # no engine array left in a global object
    value = hand_back(out, inside) if higher else plain_value(out)
    own = [w for _, _, wrapped in leaves.values() for w in wrapped if isinstance(w, Tensor)]
    if kind == "vjp":
        def vjp_fn(cotangent: Any) -> tuple:
            grads = _gradients(out, leaves, cotangent, higher, inside)
            return tuple(grads[i] if i in grads and (pytree.differentiable(values[i]) or not
                         pytree.is_leaf(values[i])) else None for i in range(len(values)))
        return value, vjp_fn
    shape = np.shape(plain_value(out))
    if int(np.prod(shape)) != 1:
        raise NonScalarOutput(f"grad requires a scalar output, but the function returned shape "
                              f"{shape}; use srcgrad.vjp for non-scalar outputs")
    grads = _gradients(out, leaves, None, higher, inside)
    result = grads[wrt[0]] if single else tuple(grads[i] for i in wrt)
    if higher:                 # what no outer level differentiates is handed back plain
        value, result = unless_outer((value, result), mark, own)
    return (value, result) if kind == "value_and_grad" else result


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
    plain = [pytree.unflatten(s, [copy_array(plain_value(v)) for v in flat])
             for flat, s in map(pytree.flatten, private_objects(values))]
    try:
        with grad_mode.no_grad():
            call(fun, plain) if call is not None else fun(*plain)
    except Exception as exc:  # noqa: BLE001 - any error of the user's code is the answer
        return exc
    return None


def eager_jvp(fun: Any, primals: tuple, tangents: tuple, wrt: tuple) -> tuple:
    """``(fun(*primals), J·tangents)`` on the eager engine's forward mode: each float leaf of
    the arguments at ``wrt`` a dual Array (a private copy) carrying its tangent.  Inside
    another dual level (the engine opens one at a time) by two reverse passes instead."""
    from srcgrad.runtime.eager import forward_ad
    if forward_hook() is not None:
        return _jvp_by_reverse(fun, primals, tangents, wrt)
    primals = tuple(private_objects(primals, True))   # the caller's objects: never changed
    inside, connect, higher = recorded(list(primals) + list(tangents), False)
    streams.rewind()                  # a rerun of a watched call: the draws the first saw
    with running(fun), forward_ad.dual_level():     # running first: eager runs take turns
        args = [pytree.unflatten(tree, [other(v, connect) for v in flat])
                for flat, tree in map(pytree.flatten, primals)]
        for i in wrt:
            flat, tree = pytree.flatten(primals[i])
            duals = [private_copy(forward_ad.make_dual(leaf(v, connect),   # may be written
                                                       _tangent_tensor(t, v, higher)),
                                  array=not isinstance(v, float))
                     if pytree.differentiable(v) else other(v, connect)
                     for v, t in zip(flat, pytree.flatten(tangents[i])[0])]
            args[i] = pytree.unflatten(tree, duals)
        try:
            out = fun(*args)
        finally:
            plain_globals(fun)
        flat, structure = pytree.flatten(out)
        found = [forward_ad.unpack_dual(o).tangent if isinstance(o, Tensor) else None
                 for o in flat]
    return _jvp_results(out, found, higher, inside)


def _tangent_tensor(t: Any, primal: Any, higher: bool) -> Tensor:
    """A tangent as the engine takes it (of the primal's dtype; recorded ones stay so)."""
    if higher and isinstance(t, Tensor):
        return t
    dtype = (primal._data if isinstance(primal, Tensor) else np.asarray(primal)).dtype
    refuse_subclass(t, "a tangent")
    return Tensor._make(np.asarray(t._data if isinstance(t, Tensor) else t, dtype=dtype))


def _jvp_results(out: Any, found: list, higher: bool, inside: bool) -> tuple:
    """The value and the tangents ``found`` for its leaves (None: zero), recorded when
    ``higher``, else plain."""
    flat, structure = pytree.flatten(out)
    result = []
    for o, d in zip(flat, found):
        value = plain_value(o)
        if d is not None and higher:
            result.append(hand_back(d, inside))
        else:
            result.append(pytree.same_kind(d._data, value) if d is not None else
                          pytree.zero_like(value) if pytree.differentiable(value) else None)
    value = hand_back(out, inside) if higher else plain_value(out)
    return value, pytree.unflatten(structure, result)


def _jvp_by_reverse(fun: Any, primals: tuple, tangents: tuple, wrt: tuple) -> tuple:
    """``J·t`` as the derivative along ``t`` of the linear map ``u ↦ Jᵀu``: a recorded reverse
    pass with a cotangent variable ``u``, then one of its result seeded with ``t``.  For a jvp
    inside another's dual level, whose tangents flow through both passes."""
    inside, connect, higher = recorded(list(primals) + list(tangents), False)
    args, leaves = _wrap(list(primals), wrt, connect)
    streams.rewind()                  # a rerun of a watched call: the draws the first saw
    with running(fun):
        out = fun(*args)
        flat = pytree.flatten(out)[0]
        keep = [k for k, o in enumerate(flat) if isinstance(o, Tensor) and o.requires_grad]
        inputs, along = [], []
        for i, (values, _, wrapped) in leaves.items():
            for v, w, t in zip(values, wrapped, pytree.flatten(tangents[i])[0]):
                if isinstance(w, Tensor):
                    inputs.append(w)
                    along.append(_tangent_tensor(t, v, True))
        us = [as_array_leaf(np.zeros_like(flat[k]._data)) for k in keep]
        found: list = [None] * len(flat)
        if keep and inputs:
            back = autograd_grad([flat[k] for k in keep], inputs, us, create_graph=True,
                                 allow_unused=True)
            pairs = [(g, t) for g, t in zip(back, along) if g is not None and g.requires_grad]
            if pairs:
                jts = autograd_grad([g for g, _ in pairs], us, [t for _, t in pairs],
                                    create_graph=True, allow_unused=True)
                for k, d in zip(keep, jts):
                    found[k] = d
    return _jvp_results(out, found, higher, inside)


def _answering(what: str) -> Callable:
    """An eager computation of a Jacobian or Hessian, where any failure is answered as a
    transform's: the plain function's own error, or a CompileError naming the engine's."""
    def wrap(run: Callable) -> Callable:
        @functools.wraps(run)
        def answered(fun: Any, args: tuple, *rest: Any, **kwargs: Any) -> Any:
            try:
                return run(fun, args, *rest, **kwargs)
            except (MemoryError, CompileError, NonScalarOutput, SubclassError):
                raise
            except Exception as exc:
                error = failure(fun, list(args), exc, f"compute the {what} of")
                raise error from (exc if isinstance(error, CompileError) else None)
        return answered
    return wrap


def failure(fun: Any, values: list, exc: Exception, what: str, reason: str = "") -> Exception:
    """What answers the eager engine's ``exc`` on ``values``: the plain function's own error
    when it raises one, else a CompileError saying the engine cannot ``what`` ``fun`` (raised
    from ``exc``)."""
    error = plain_error(fun, values, None)
    if error is not None:
        return error
    return CompileError(f"the eager engine cannot {what} {getattr(fun, '__qualname__', fun)} "
                        f"({type(exc).__name__}: {exc}){reason}")


@_answering("Hessian")
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
        streams.rewind()                        # each column sees the function's draws
        with muted() if columns else contextlib.nullcontext():   # its prints: one column's
            columns.append(np.asarray(eager_jvp(grad_of, args, tangents, (p,))[1]))
    shape = np.shape(x) + np.shape(x)
    return np.stack(columns, axis=-1).reshape(shape) if columns else np.zeros(shape)


@_answering("Jacobian")
def eager_jacobian(fun: Any, args: tuple, p: int, mode: str, inner: int | None = None) -> Any:
    """``jacfwd``/``jacrev``/``hessian`` (``mode`` "fwd", "rev", "hessian") of ``fun`` with
    respect to the array or float ``args[p]`` on the eager engine: under an eager transform,
    or of Tensors, whose graph the result keeps.  A Hessian's rows are the gradient with
    respect to ``args[inner]`` (default ``p``), of a scalar ``fun``."""
    _leaf_only(fun, args[p], mode, "arguments")
    if mode == "rev":
        value, back = eager_transform(fun, "vjp", list(args), tuple(range(len(args))), False)
        _leaf_only(fun, value, mode, "results")
        return _assemble([back(u)[p] for u in _units(value)], 0, value, args[p])
    g = fun
    if mode == "hessian":
        def g(*values: Any) -> Any:
            return eager_transform(fun, "grad", list(values), (p if inner is None else inner,),
                                   True)
    value, columns = None, []
    for unit in _units(args[p]):
        tangents = tuple(unit if k == p else None for k in range(len(args)))
        streams.rewind()                        # each column sees the function's draws
        with muted() if columns else contextlib.nullcontext():   # its prints: one column's
            value, column = eager_jvp(g, args, tangents, (p,))
        columns.append(column)
    if value is None:
        streams.rewind()
        value = eager_jvp(g, args, (None,) * len(args), ())[0]
    _leaf_only(fun, value, mode, "results")
    return _assemble(columns, -1, value, args[p])


def _leaf_only(fun: Any, value: Any, mode: str, what: str) -> None:
    if not pytree.is_leaf(value):
        name = getattr(fun, "__name__", fun)
        raise CompileError(f"srcgrad computes the {mode} Jacobian of {name} on the eager engine "
                           f"(under an eager transform, or of Tensors) for array and float "
                           f"{what}, not lists, tuples or dicts")


def _units(x: Any) -> Any:
    """Every unit tangent (or cotangent) of the array or float ``x``, in C order."""
    data = x._data if isinstance(x, Tensor) else np.asarray(x)
    for j in range(data.size):
        if isinstance(x, float):
            yield 1.0
        else:
            e = np.zeros(data.shape, dtype=data.dtype if data.dtype.kind == "f" else float)
            e.reshape(-1)[j] = 1
            yield e


def _assemble(parts: list, axis: int, outside: Any, inside: Any) -> Any:
    """One Jacobian block of shape ``outside.shape + inside.shape`` from its columns
    (``axis=-1``) or rows (``0``): recorded when they are."""
    shape = np.shape(plain_value(outside)) + np.shape(plain_value(inside))
    if not any(isinstance(q, Tensor) for q in parts):
        if not parts:
            return np.zeros(shape)
        block = np.stack([np.asarray(q) for q in parts], axis=axis).reshape(shape)
        return float(block) if isinstance(outside, float) and isinstance(inside, float) \
            else block
    for q in parts:
        if isinstance(q, Tensor):
            q.__class__ = Array
    with grad_mode.enable_grad():
        block = np.reshape(np.stack(parts, axis=axis), shape)
    return hand_back(block, nested())


def eager_jacobians(jacobian: Any, args: tuple) -> Any:
    """What the ``Jacobian`` transform ``jacobian`` returns for ``args``, on the eager engine
    (:func:`eager_jacobian`): one block per argument, a Hessian's blocks nested as JAX's."""
    fun, mode, wrt, inner = jacobian.fun, jacobian.mode, jacobian.wrt, jacobian._inner
    if mode == "hessian" and inner is None and not jacobian._single:
        return tuple(tuple(eager_jacobian(fun, args, q, mode, i) for q in wrt) for i in wrt)
    out = [eager_jacobian(fun, args, p, mode, inner) for p in wrt]
    return out[0] if jacobian._single else tuple(out)
