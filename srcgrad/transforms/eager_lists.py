"""Lists of Arrays where NumPy expects an array, in the eager fallback.

``np.mean([loss(b) for b in batches])`` converts its list with ``np.asarray`` before it
computes; on the eager engine that conversion would turn each Array into a plain array and
drop its gradient, and NumPy's dispatch (``__array_function__``) never looks inside a list.
The compiler stacks such a list along a new first axis (:mod:`srcgrad.frontend.list_operands`);
so that both modes agree, the eager run does the same: while it runs, the NumPy names (``np``,
``numpy.linalg``, ``from numpy import mean``) of the function's module, and of the user's
modules it reaches (:mod:`srcgrad.transforms.user_modules`), are stand-ins whose functions
stack a list operand that holds an Array (one recorded ``stack`` node) and otherwise call
NumPy unchanged.  The modules' names are restored as soon as the run ends.
"""

from __future__ import annotations

import contextlib
import functools
import sys
import threading
import types
from collections.abc import Iterator
from typing import Any

import numpy as np

from srcgrad.frontend.list_operands import _array_inputs
from srcgrad.runtime.eager.mapped import mapping_stand_in
from srcgrad.runtime.eager.ndarray import Array, plain_array
from srcgrad.runtime.eager.tensor import Tensor
from srcgrad.runtime.rules.primitives import NUMPY_BINDINGS
from srcgrad.runtime.rules.scipy_coverage import public_name
from srcgrad.runtime.rules.special import bind_scipy
from srcgrad.runtime.subclasses import makes_subclass
from srcgrad.transforms.eager_calls import (
    BUFFERS,
    SCIPY_MODULES,
    Buffer,
    math_stand_in,
    scipy_stand_in,
)
from srcgrad.transforms.eager_draws import draw_stand_in, is_generator_class
from srcgrad.transforms.identity_scan import ALL, identity_kept, library_function
from srcgrad.transforms.user_modules import user_namespaces

__all__ = ["stacking_list_operands"]

_CONVERSIONS = (np.array, np.asarray, np.asanyarray, np.ascontiguousarray, np.asfortranarray)
# Functions the compiler lowers on their own that still take plain array operands (the
# others of its special calls, np.stack, np.concatenate, np.einsum ..., take lists on purpose)
_OPERANDS = {np.append: 2, np.polyval: 2, np.linalg.lstsq: 2, np.take: 1, np.sort: 1,
             np.diff: 1, np.roll: 1, np.rot90: 1, np.pad: 1, np.average: 1, np.median: 1,
             np.gradient: 1, np.nan_to_num: 1, np.partition: 1, np.percentile: 1,
             np.quantile: 1, np.split: 1, np.array_split: 1, np.hsplit: 1, np.vsplit: 1,
             np.dsplit: 1, np.linalg.eigh: 1, np.linalg.svd: 1, np.linalg.qr: 1,
             np.linalg.slogdet: 1}
_MODULES = {np.__name__: np, np.linalg.__name__: np.linalg, np.random.__name__: np.random}


def _holds_tensor(value: Any) -> bool:
    return isinstance(value, Tensor) or isinstance(value, (list, tuple)) and any(
        _holds_tensor(v) for v in value)


def _stacked(value: Any) -> Any:
    """``value`` as ``np.asarray`` builds it, recorded: a list holding Arrays, stacked level
    by level (anything else is returned as it is)."""
    if not isinstance(value, (list, tuple)) or not _holds_tensor(value):
        return value
    return np.stack([_stacked(v) for v in value])


class _Stacking:
    """A NumPy function whose first ``count`` positional operands are stacked when they are
    lists holding Arrays; everything else (``np.add.at``, ``__name__``) is the function's."""

    def __init__(self, fun: Any, count: int) -> None:
        self._fun, self._count = fun, count
        functools.update_wrapper(self, fun)
        self.srcgrad_stands_in_for = fun          # what a build made meanwhile binds

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if any(self._fun is c for c in _CONVERSIONS):
            return self._convert(*args, **kwargs)
        if any(_holds_tensor(a) for a in args[:self._count]):
            args = tuple(_stacked(a) if k < self._count else a for k, a in enumerate(args))
        return self._fun(*args, **kwargs)

    def _convert(self, *args: Any, **kwargs: Any) -> Any:
        if args and isinstance(args[0], Array):
            return _converted(self._fun, args[0], args[1:], kwargs)
        if len(args) != 1 or set(kwargs) - {"dtype"} or not isinstance(args[0], (list, tuple)) \
                or not _holds_tensor(args[0]):
            return self._fun(*args, **kwargs)
        out = _stacked(args[0])
        dtype = kwargs.get("dtype")
        return out if dtype is None else out.astype(dtype)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._fun, name)

    def __repr__(self) -> str:
        return repr(self._fun)

    def __eq__(self, other: Any) -> bool:        # a key of a dict built with NumPy's own
        return other is self or other is self._fun

    def __hash__(self) -> int:
        return hash(self._fun)


def _converted(fun: Any, a: Array, rest: tuple, kwargs: dict) -> Any:
    """``np.asarray(a)`` (``np.array``, ``np.ascontiguousarray`` ...) of an Array as NumPy
    makes it of ``a``'s values: ``a`` itself where NumPy returns the very array, else a
    recorded copy (cast to the dtype asked for, with the axes ``ndmin`` adds).  A view NumPy
    would return is left to NumPy's own conversion, which the engine refuses."""
    plain = fun(a._data, *rest, **kwargs)          # NumPy's answer: raises as NumPy raises
    if plain is a._data:
        return a
    if type(plain) is not np.ndarray or np.shares_memory(plain, a._data):
        return fun(a, *rest, **kwargs)
    out = np.copy(a) if plain.dtype == a.dtype else a.astype(plain.dtype)
    return out if out.shape == plain.shape else np.reshape(out, plain.shape)


class _Joined:
    """``np.r_[...]`` / ``np.c_[...]`` of items holding Arrays: each item made an array as
    NumPy does (at least 1-D; for ``c_`` at least 2-D, a 1-D item a column), then joined by a
    recorded ``np.concatenate`` (along the first axis; the last for ``c_``).  Items without
    Arrays (a slice, a constant) are NumPy's own ``r_``/``c_`` of them; strings (``'r'``,
    ``'0,2'``) are left to NumPy."""

    def __init__(self, real: Any, columns: bool) -> None:
        self._real, self._columns = real, columns

    def __getitem__(self, key: Any) -> Any:
        items = key if isinstance(key, tuple) else (key,)
        if not any(_holds_tensor(i) for i in items) or any(isinstance(i, str) for i in items):
            return self._real[key]
        return np.concatenate([self._part(i) for i in items], axis=-1 if self._columns else 0)

    def _part(self, item: Any) -> Any:
        if not _holds_tensor(item):
            return self._real[item]
        t = _stacked(item)
        if self._columns and t.ndim < 2:
            return np.reshape(t, (-1, 1))
        return np.reshape(t, (1,)) if t.ndim == 0 else t

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


class _Refused:
    """A NumPy function or class that makes an ndarray subclass (np.ma.array, np.matrix):
    calling it raises the refusal (the eager engine would lose the gradient inside it)."""

    def __init__(self, real: Any, refusal: Exception) -> None:
        self._real, self._refusal = real, refusal
        self.srcgrad_stands_in_for = real

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not _TURNS._is_owned():     # another thread's code of the module: NumPy's own
            return self._real(*args, **kwargs)
        raise type(self._refusal)(str(self._refusal))

    def __getattr__(self, name: str) -> Any:          # np.ma.array: refused in its turn
        value = getattr(self._real, name)
        stand_in = _stand_in_of(value) if callable(value) else None
        return value if stand_in is None else stand_in


class _RefusedClass(type):
    """The stand-in of a refused ndarray subclass (np.ma.MaskedArray, np.matrix): calling
    it is refused as :class:`_Refused` is, ``isinstance`` and its attributes are the
    class's own."""

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        if not _TURNS._is_owned():
            return cls._real(*args, **kwargs)
        raise type(cls._refusal)(str(cls._refusal))

    def __instancecheck__(cls, value: Any) -> bool:
        return isinstance(value, cls._real)

    def __subclasscheck__(cls, other: type) -> bool:
        return issubclass(other, cls._real)

    def __getattr__(cls, name: str) -> Any:
        return getattr(cls._real, name)


class _TypeStandIn(type):
    """The stand-in of ``np.ndarray``, ``np.ufunc`` and the generator classes: the run's
    Arrays are ndarrays, its stand-ins of ufuncs and generators ufuncs and generators to
    ``isinstance``, as their plain values are to NumPy."""

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        return cls._real(*args, **kwargs)

    def __instancecheck__(cls, value: Any) -> bool:
        real = cls._real
        stands_for = getattr(value, "__dict__", {}).get("srcgrad_stands_in_for")
        return isinstance(value, real) or real is np.ndarray and isinstance(value, Array) or \
            stands_for is not None and isinstance(stands_for, real)

    def __subclasscheck__(cls, other: type) -> bool:
        return issubclass(other, cls._real) or cls._real is np.ndarray and issubclass(other, Array)

    def __getattr__(cls, name: str) -> Any:
        return getattr(cls._real, name)


_MADE: dict[int, tuple[Any, Any]] = {}      # id of a NumPy object -> (it, its stand-in)


def _user_rule(value: Any) -> Any:
    """A function of the user's given a rule with ``srcgrad.defvjp``, as its primitive: called
    on Arrays it records one node with that rule, as the compiler differentiates it."""
    if not isinstance(value, types.FunctionType) or (value.__module__ or "").split(".")[0] in (
            np.__name__, "scipy", "srcgrad"):                # libraries bind their own
        return None
    try:
        binding = NUMPY_BINDINGS.get(value)
    except TypeError:
        return None
    if binding is None:
        return None
    adapter = binding[1]

    @functools.wraps(value)
    def recorded(*args: Any, **kwargs: Any) -> Any:
        return adapter(*args, **kwargs)
    recorded.srcgrad_stands_in_for = value             # type: ignore[attr-defined]
    return recorded


def _stand_in_of(value: Any) -> Any:
    """The stand-in of a NumPy module or function, or of a user's function with a rule
    (None: it needs none)."""
    if _kept(value):
        return None
    made = _MADE.get(id(value))
    if made is not None and made[0] is value:
        return made[1]
    drawn = draw_stand_in(value) or mapping_stand_in(value)    # made for each run
    if drawn is not None:
        return drawn
    ruled = _user_rule(value)
    if ruled is not None:
        return ruled                      # not kept: the rule may be given again
    refusal = makes_subclass(value)
    buffer = refusal is None and callable(value) and any(value is b for b in BUFFERS)
    if buffer:
        stand_in = Buffer(value, _TURNS._is_owned)
    elif refusal is None and (_scipy_module(value) or _scipy_object(value)):
        stand_in = _Module(value) if isinstance(value, types.ModuleType) else \
            scipy_stand_in(value, stacking_list_operands)     # odeint runs its func's vjp
    elif refusal is None and math_stand_in(value) is not None:
        stand_in = math_stand_in(value)
    elif refusal is not None:
        stand_in = _RefusedClass(value.__name__, (), {"_real": value, "_refusal": refusal}) \
            if isinstance(value, type) else _Refused(value, refusal)
    elif isinstance(value, types.ModuleType):
        stand_in = _Module(value) if _MODULES.get(value.__name__) is value else None
    elif value is np.ndarray or value is np.ufunc or is_generator_class(value):
        stand_in = _TypeStandIn(value.__name__, (), {"_real": value})
    elif value is np.r_ or value is np.c_:
        stand_in = _Joined(value, value is np.c_)
    elif callable(value) and not isinstance(value, type):    # np.float64 stays a type
        try:
            count = 1 if any(value is c for c in _CONVERSIONS) else \
                _OPERANDS.get(value) or _array_inputs(value)
        except TypeError:                     # unhashable: not NumPy's
            return None
        stand_in = _Stacking(value, count) if count else None
    else:
        return None
    if stand_in is not None:                  # NumPy's objects live as long as NumPy
        _MADE[id(value)] = (value, stand_in)
    return stand_in


def _scipy_module(value: Any) -> bool:
    return isinstance(value, types.ModuleType) and value.__name__ in SCIPY_MODULES and \
        sys.modules.get(value.__name__) is value


def _scipy_object(value: Any) -> bool:
    return ((getattr(value, "__module__", None) or type(value).__module__ or "").startswith(
        "scipy.") or isinstance(value, np.ufunc) and public_name(value) is not None) and \
        scipy_stand_in(value) is not None


class _Module(types.ModuleType):
    """A NumPy module whose functions are stand-ins (see the module docstring)."""

    def __init__(self, module: types.ModuleType) -> None:
        super().__init__(module.__name__, module.__doc__)
        self.__dict__["_module"] = module
        self.__dict__["srcgrad_stands_in_for"] = module

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._module, name)
        if not _TURNS._is_owned():        # another thread's code of the module: NumPy's own
            return value
        stand_in = _stand_in_of(value)
        return value if stand_in is None else stand_in

    def __dir__(self) -> list[str]:
        return dir(self._module)


_KEPT: list[frozenset[int] | None] = []
"""For each eager run under way (innermost last), the NumPy objects its module's code compares
by identity, which it sees as themselves (:mod:`srcgrad.transforms.identity_scan`)."""


def _kept(value: Any) -> bool:
    if not _KEPT:
        return False
    kept = _KEPT[-1]
    return library_function(value) if kept is ALL else id(value) in kept


_TURNS = threading.RLock()
"""Held while a module shows the stand-ins: they are the module's, seen by every thread, so
eager runs take turns (one restoring the names would pull them from under another)."""


@contextlib.contextmanager
def stacking_list_operands(fun: Any) -> Iterator[None]:
    """While the block runs, ``fun``'s module (and the user's modules it reaches) see NumPy
    through stand-ins that stack list operands holding Arrays (see the module docstring);
    their names are then restored."""
    with _TURNS, _swapped(fun):
        yield


@contextlib.contextmanager
def _swapped(fun: Any) -> Iterator[None]:
    namespaces = user_namespaces(fun)
    swapped: list[tuple[dict, str, Any, Any]] = []
    bind_scipy()                  # SciPy's ufuncs with a rule (erf, gammaln) are recorded
    kept = [identity_kept(n, fun if k == 0 else None) for k, n in enumerate(namespaces)]
    _KEPT.append(ALL if ALL in kept else frozenset().union(*kept))
    for namespace in namespaces:
        for name, value in list(namespace.items()):
            stand_in = _stand_in_of(value)
            if stand_in is not None:
                swapped.append((namespace, name, value, stand_in))
    for namespace, name, _, stand_in in swapped:
        namespace[name] = stand_in
    _RUNS.depth = getattr(_RUNS, "depth", 0) + 1
    try:
        yield
    finally:
        _KEPT.pop()
        _RUNS.depth -= 1
        for namespace, name, value, stand_in in swapped:
            if namespace.get(name) is stand_in:      # unless the function rebound it
                namespace[name] = value
        if not _RUNS.depth:
            for namespace in namespaces:
                _plain_globals(namespace)


_RUNS = threading.local()          # how deep this thread is in eager runs


def _plain_globals(namespace: dict, budget: int = 10_000) -> None:
    """Arrays the run left in its module's globals (``LAST = y``, ``HIST.append(y)``,
    ``CACHE["y"] = y``), made the plain values NumPy would have left there; lists and dicts
    are looked into up to ``budget`` items in all."""
    for name, value in list(namespace.items()):
        if type(value) is Array:
            namespace[name] = plain_array(value)
        elif type(value) in (list, dict) and len(value) <= budget:
            budget -= len(value)
            for key, item in (enumerate(value) if type(value) is list else list(value.items())):
                if type(item) is Array:
                    value[key] = plain_array(item)
