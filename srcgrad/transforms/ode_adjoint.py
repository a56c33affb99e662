"""The adjoint method for SciPy's ODE solvers, as one node of the eager graph.

A solve ``y(t_i)`` of ``y' = f(y, t, p)`` from ``y(t0) = y0`` is differentiated backwards in
time: between consecutive output times the augmented system

    y' = f(y, t, p),    a' = -a·∂f/∂y,    b' = -a·∂f/∂p

is integrated from ``(y_i, a, b)`` at ``t_i`` to ``t_{i-1}``, after the cotangent ``g_i`` of
output ``i`` is added to ``a``.  At ``t0``, ``a`` is the gradient of ``y0`` and ``b`` that of
the parameters.  Times are closed forms: an output time ``t_i`` gets ``g_i·f(y_i, t_i)``,
the initial time ``-a·f(y0, t0)``.  odeint's first time is both, and its two terms add up to
``-(a - g_0)·f(y0, t0)``: its first output is ``y0`` whatever that time.

``f`` is the user's function: its values come from a run on plain arrays, its
vector-Jacobian products from a run on the eager engine's Arrays, so that whatever the
engine refuses in it is refused as the engine refuses it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import numpy as np

from srcgrad.runtime.eager import grad_mode
from srcgrad.runtime.eager.autograd import grad as autograd_grad
from srcgrad.runtime.eager.constants import carries_gradient
from srcgrad.runtime.eager.engine import Node, edge_of
from srcgrad.runtime.eager.ndarray import Array, as_array_leaf, plain_array
from srcgrad.runtime.eager.tensor import Tensor
from srcgrad.transforms import pytree

__all__ = ["OdeSystem", "OdeBackward", "adjoint", "plain_of", "state_of", "extended_tolerance"]


def plain_of(value: Any) -> Any:
    """``value`` as NumPy would hold it: its Arrays (lists, tuples and dicts looked into) as
    their plain arrays, a 0-d one that NumPy gives as a scalar a float64."""
    flat, structure = pytree.flatten(value)
    if not any(isinstance(v, Tensor) for v in flat):
        return value
    return pytree.unflatten(structure, [
        (plain_array(v) if isinstance(v, Array) else v._data) if isinstance(v, Tensor) else v
        for v in flat])


def state_of(value: Any) -> Any:
    """An operand as ``np.asarray`` makes it, recorded: an Array as it is, a list or tuple
    holding Arrays stacked (anything else: NumPy's own array of it)."""
    if isinstance(value, Tensor):
        return value
    if isinstance(value, (list, tuple)) and any(isinstance(v, Tensor) or isinstance(
            v, (list, tuple)) for v in value):
        parts = [state_of(v) for v in value]
        if any(isinstance(p, Tensor) for p in parts):
            return np.stack([p if isinstance(p, Tensor) else np.asarray(p, dtype=float)
                             for p in parts])
        return np.asarray(parts)
    return np.asarray(value)


def _closure_refusal(name: str) -> TypeError:
    return TypeError(f"{name}: the function's result carries a gradient that comes neither "
                     "from y nor from args= (an array of a closure or a global); srcgrad "
                     "differentiates the solve with respect to y0, the times and args=: pass "
                     "that array through args=")


class OdeSystem:
    """The user's right-hand side ``func`` with its extra arguments ``args`` (a tuple, that
    may hold Arrays that carry a gradient): ``value`` on plain arrays, ``vjp`` on Arrays.
    ``time_first``: ``func(t, y, *args)`` rather than ``func(y, t, *args)``; ``runs(func)``:
    the context in which the eager engine runs the user's code (NumPy's stand-ins)."""

    def __init__(self, name: str, func: Callable, args: tuple, time_first: bool,
                 runs: Callable[[Any], Any] | None) -> None:
        self.name, self.func, self.time_first = name, func, time_first
        self.runs = runs or (lambda _: contextlib.nullcontext())
        flat, self._structure = pytree.flatten(args)
        self._flat = [plain_of(v) for v in flat]
        self.leaves = [k for k, v in enumerate(flat) if isinstance(v, Tensor)
                       and v._requires_grad]
        self.tensors = [flat[k] for k in self.leaves]
        for k in self.leaves:                       # kept as they are now
            self._flat[k] = np.array(self._flat[k], copy=True) if isinstance(
                self._flat[k], np.ndarray) else self._flat[k]
        self.plain_args = pytree.unflatten(self._structure, self._flat)
        self.size = sum(int(np.size(self._flat[k])) for k in self.leaves)

    def _call(self, y: Any, t: Any, args: tuple) -> Any:
        return self.func(t, y, *args) if self.time_first else self.func(y, t, *args)

    def value(self, y: Any, t: Any) -> np.ndarray:
        """``f(y, t)`` as NumPy computes it (a 1-D float array)."""
        out = self._call(y, t, self.plain_args)
        if carries_gradient(out):
            raise _closure_refusal(self.name)
        return np.asarray(plain_of(out), dtype=float).reshape(-1)

    def plain(self, *call: Any) -> Any:
        """``func`` as SciPy calls it (with ``plain_args``), its result made plain."""
        out = self.func(*call)
        if carries_gradient(out):
            raise _closure_refusal(self.name)
        return plain_of(out)

    def vjp(self, y: np.ndarray, t: float, a: np.ndarray) -> tuple:
        """``(f, a·∂f/∂y, a·∂f/∂p)`` at ``(y, t)``, ``∂f/∂p`` flattened over the leaves that
        carry a gradient; recorded by the eager engine (run inside ``runs``)."""
        with grad_mode.enable_grad():
            y_leaf = as_array_leaf(np.array(y, dtype=float))
            leaves = [as_array_leaf(self._flat[k]) for k in self.leaves]
            flat = list(self._flat)
            for k, leaf in zip(self.leaves, leaves):
                flat[k] = leaf
            out = self._call(y_leaf, t, pytree.unflatten(self._structure, flat))
            f = state_of(out)
            if not isinstance(f, Tensor):
                f = Array._make(np.asarray(f, dtype=float))
            f = np.reshape(f, (-1,))
            value = np.asarray(f._data, dtype=float)
            inputs = [y_leaf, *leaves]
            if not f._requires_grad:
                found: list = [None] * len(inputs)
            else:
                found = list(autograd_grad([f], inputs, [Tensor._make(
                    np.asarray(a, dtype=f._data.dtype))], allow_unused=True))
        grads = [np.zeros(np.shape(x._data)) if g is None else np.asarray(
            g._data if isinstance(g, Tensor) else g, dtype=float) for g, x in zip(found, inputs)]
        gp = np.concatenate([g.reshape(-1) for g in grads[1:]]) if leaves else np.zeros(0)
        return value, grads[0].reshape(-1), gp

    def unflatten_grads(self, gp: np.ndarray) -> list:
        """The flat parameter gradient, one array per leaf (of its shape)."""
        out, at = [], 0
        for k in self.leaves:
            shape = np.shape(self._flat[k])
            n = int(np.prod(shape, dtype=np.int64))
            out.append(gp[at:at + n].reshape(shape))
            at += n
        return out


def extended_tolerance(tol: Any, n: int, size: int) -> Any:
    """A tolerance given per component of the state (``n`` of them), for the augmented
    state of ``size``: the state's own twice (the state and its adjoint), then its smallest
    for the parameters' part; a scalar or None as it is."""
    if tol is None or np.ndim(tol) == 0:
        return tol
    tol = np.asarray(tol, dtype=float).reshape(-1)
    if tol.size != n:
        return tol                      # SciPy's own error, from the forward solve
    return np.concatenate([tol, tol, np.full(size - 2 * n, tol.min())])


def adjoint(system: OdeSystem, times: np.ndarray, ys: np.ndarray, g: np.ndarray, t0: float,
            y0: np.ndarray, segment: Callable[[Callable, np.ndarray, float, float], np.ndarray],
            want_times: bool) -> tuple:
    """The gradients ``(y0, output times, t0, flat parameters)`` of a solve whose outputs
    ``ys[i]`` at ``times[i]`` got the cotangents ``g[i]``; ``segment(rhs, s, t_from, t_to)``
    integrates ``s' = rhs(s, t)`` and returns ``s`` at ``t_to``."""
    n = ys.shape[1] if ys.ndim == 2 else 0
    p = system.size

    def rhs(s: np.ndarray, t: float) -> np.ndarray:
        f, gy, gp = system.vjp(s[:n], t, s[n:2 * n])
        return np.concatenate([f, -gy, -gp])

    a, b = np.zeros(n), np.zeros(p)
    g_times = np.zeros(len(times))
    with system.runs(system.func):
        for i in range(len(times) - 1, -1, -1):
            if want_times and np.any(g[i]):
                g_times[i] = float(np.dot(g[i], system.value(ys[i], times[i])))
            a = a + g[i]
            until = times[i - 1] if i > 0 else t0
            if until != times[i] and np.any(a):       # a zero adjoint stays zero
                s = segment(rhs, np.concatenate([ys[i], a, b]), times[i], until)
                a, b = s[n:2 * n], s[2 * n:]
        g_t0 = -float(np.dot(a, system.value(y0, t0))) if want_times and np.any(a) else 0.0
    return a, g_times, g_t0, b


class OdeBackward(Node):
    """The node of one ODE solve: its backward runs the adjoint (``backward(g)`` gives one
    gradient per tensor in ``tensors``, the order of its edges)."""

    __slots__ = ("_label", "_backward")

    def __init__(self, label: str, tensors: list, backward: Callable[[np.ndarray], list]
                 ) -> None:
        super().__init__(tuple(edge_of(t) for t in tensors))
        self._label, self._backward = label, backward

    def name(self) -> str:
        return self._label

    def apply(self, grads: list, create_graph: bool) -> tuple:
        if create_graph:
            raise TypeError(f"{self._label}: srcgrad differentiates an ODE solve once, by the "
                            "adjoint method; a derivative of that gradient (a Hessian, a "
                            "gradient of a gradient) is not followed")
        g = grads[0]
        if g is None:
            return (None,) * len(self.next_functions)
        g = np.asarray(g._data if isinstance(g, Tensor) else g, dtype=float)
        return tuple(self._backward(g))


def recorded(data: np.ndarray, label: str, tensors: list,
             backward: Callable[[np.ndarray], list]) -> Array:
    """``data`` as an Array that is the output of one :class:`OdeBackward` node."""
    node = OdeBackward(label, tensors, backward)
    out = Tensor._make(np.asarray(data), node, True)
    out.__class__ = Array
    return out
