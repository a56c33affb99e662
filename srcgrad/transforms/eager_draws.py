"""Stand-ins for random draws in the eager fallback's run.

While the run shows the function's module NumPy through stand-ins
(:mod:`srcgrad.transforms.eager_lists`), ``np.random``'s functions and the RandomState and
Generator objects among the module's globals are stand-ins too:

- a discrete draw (:data:`~srcgrad.runtime.eager.draw_calls.DISCRETE`: ``choice``,
  ``multinomial``, ``binomial``, ``poisson`` ...) whose parameters carry a gradient is handed
  their plain values, scalars and lists of them included: its result is integer-valued, so
  its derivative is 0, and NumPy draws the same numbers from the same stream;
- ``choice`` of an ``a`` that carries a gradient, and a continuous draw (``normal(mu,
  sigma)``) of a parameter that carries one, are refused with the user's line: srcgrad does
  not differentiate a draw with respect to its parameters;
- anything else (no gradient, ``seed``, ``get_state``) is NumPy's own.

A generator these stand-ins do not see (an argument, ``self.rng``, one made in the function)
is NumPy's own object: :mod:`srcgrad.runtime.eager.draw_calls` lets its discrete draws read
array parameters that carry a gradient; a scalar one (a 0-d Array, which NumPy reads with
``float()``) is refused there.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any

from srcgrad.runtime.eager.constants import carries_gradient, where
from srcgrad.runtime.eager.draw_calls import DISCRETE, GENERATORS
from srcgrad.runtime.eager.ndarray import Array, plain_array
from srcgrad.runtime.eager.tensor import Tensor

__all__ = ["draw_stand_in"]


def _plain(value: Any) -> Any:
    """``value`` with its Arrays replaced by what NumPy holds for them (lists looked into)."""
    if isinstance(value, Array):
        return plain_array(value)
    if isinstance(value, Tensor):
        return value._data
    if type(value) in (list, tuple):
        return type(value)(_plain(v) for v in value)
    return value


def _refuse(what: str, instead: str) -> RuntimeError:
    at, _ = where()
    return RuntimeError(
        f"{at + ': ' if at else ''}{what} carries a gradient; srcgrad does not differentiate "
        f"a random draw with respect to its parameters ({instead})")


def _population(args: tuple, kwargs: dict) -> Any:
    """``choice``'s ``a`` as the call gives it."""
    return args[0] if args else kwargs.get("a")


class _Draw:
    """A draw method of a RandomState or Generator (see the module docstring)."""

    def __init__(self, fun: Any, name: str) -> None:
        self._fun, self._name = fun, name
        functools.update_wrapper(self, fun)
        self.srcgrad_stands_in_for = fun

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not carries_gradient((args, kwargs)):
            return self._fun(*args, **kwargs)
        if self._name not in DISCRETE:
            raise _refuse(f"{self._name}() is given a parameter that", "draw standard "
                          "values, then scale and shift them: mu + sigma * "
                          "rng.standard_normal(shape)")
        if self._name == "choice" and carries_gradient(_population(args, kwargs)):
            raise _refuse("choice(a, ...) picks elements of an array that", "draw the "
                          "indices, rng.choice(len(a), ...), and index a with them")
        return self._fun(*_plain(args), **{k: _plain(v) for k, v in kwargs.items()})

    def __getattr__(self, name: str) -> Any:
        return getattr(self._fun, name)

    def __repr__(self) -> str:
        return repr(self._fun)

    def __eq__(self, other: Any) -> bool:
        return other is self or other == self._fun

    def __hash__(self) -> int:
        return hash(self._fun)


class _Stream:
    """A RandomState or Generator among the module's globals: its draws are :class:`_Draw`,
    anything else its own (``isinstance`` sees the generator, through the stand-ins of
    ``np.random.RandomState`` and ``np.random.Generator``)."""

    def __init__(self, stream: Any) -> None:
        self.__dict__["_stream"] = stream
        self.__dict__["srcgrad_stands_in_for"] = stream

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._stream, name)
        return draw_stand_in(value) or value

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._stream, name, value)

    def __repr__(self) -> str:
        return repr(self._stream)

    def __eq__(self, other: Any) -> bool:
        return other is self or other is self._stream

    def __hash__(self) -> int:
        return hash(self._stream)


def _is_draw(value: Any) -> bool:
    if not (inspect.isbuiltin(value) or inspect.ismethod(value)):   # nothing else is read
        return False
    name = getattr(value, "__name__", None)
    return isinstance(getattr(value, "__self__", None), GENERATORS) and \
        isinstance(name, str) and not name.startswith("_") and name not in _NOT_DRAWS


_NOT_DRAWS = frozenset({"seed", "get_state", "set_state", "spawn", "bit_generator",
                        "shuffle", "permutation", "permuted", "bytes", "tomaxint"})
"""Methods that read no parameter a gradient could reach (``shuffle`` and ``permutation``
move their argument's elements, which NumPy's own refusal covers)."""


def draw_stand_in(value: Any) -> Any:
    """The stand-in of a generator among the module's globals, or of a draw method bound to
    one (``np.random.choice`` is the global RandomState's); None for anything else."""
    if isinstance(value, GENERATORS):
        return _Stream(value)
    if _is_draw(value):
        return _Draw(value, value.__name__)
    return None


def is_generator_class(value: Any) -> bool:
    """Whether ``value`` is ``np.random.RandomState`` or ``np.random.Generator``."""
    return any(value is g for g in GENERATORS)

