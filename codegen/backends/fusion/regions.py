"""Fused regions: what the fusion pass finds in a specialised function, and what every
backend's kernel emitter reads.

A region is a run of consecutive statements of a generated function whose work is
elementwise over one iteration shape (its ``domain``), possibly ended by reductions of that
work.  The fusion pass (:mod:`srcgrad.codegen.backends.fusion.partition`) finds regions where shape
specialisation has told it every value's shape and dtype; a backend turns each region into
one kernel (a numba loop, a CuPy ``ElementwiseKernel``) and one call that replaces the
statements.  Nothing here names an operation: an expression applies a NumPy ufunc (or
``np.where``), and each backend spells ufuncs in its own language.

Every object is frozen: emitters read a region, they never change it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

__all__ = ["Unsupported", "Value", "Ref", "Lit", "Apply", "Expr", "Let", "Reduce", "Update", "Note",
           "Step", "Region", "KernelEmitter"]


class Unsupported(ValueError):
    """A region a backend's emitter cannot write with NumPy's meaning (a ufunc it has no
    exact spelling of, a dtype it does not hold): its statements stay array-library calls."""


@dataclass(frozen=True)
class Value:
    """A value a region reads or writes, by its name in the generated function.

    ``shape`` is ``()`` for a scalar: a Python float, int or bool, or a 0-d array, which
    ``python`` tells apart (True: a Python number, passed as it is)."""

    name: str
    shape: tuple[int, ...]
    dtype: np.dtype
    python: bool = False


@dataclass(frozen=True)
class Ref:
    """The value named ``name``: a region input, or a value an earlier step defined."""

    name: str


@dataclass(frozen=True)
class Lit:
    """A literal constant of the generated code (``0.1``, ``2``, ``True``)."""

    value: float | int | bool


@dataclass(frozen=True)
class Apply:
    """``func(*args)`` elementwise: ``func`` is a NumPy ufunc (``np.add`` for ``+``,
    ``np.negative`` for unary ``-``, ``np.greater`` for ``>``, ``np.sin`` ...) or
    ``np.where``; ``dtype``: the result's dtype, as NumPy computes it."""

    func: Callable
    args: tuple[Expr, ...]
    dtype: np.dtype


Expr = Ref | Lit | Apply


@dataclass(frozen=True)
class Let:
    """``name = expr``, elementwise: ``expr`` broadcasts to the region's domain, and so does
    the value (its shape is the domain's)."""

    name: str
    expr: Expr
    dtype: np.dtype


@dataclass(frozen=True)
class Reduce:
    """``name = func.reduce(expr, axis=axes, keepdims=keepdims)``: ``func`` is ``np.add``
    (``np.sum``), ``np.maximum`` or ``np.minimum`` (``np.max``/``np.min``, NaN
    propagating); ``expr`` is over the domain; ``axes`` are all of the domain's for a
    full reduction.  No step of the same region reads ``name``: a reduction ends the
    dataflow it reduces."""

    name: str
    func: Callable
    expr: Expr
    axes: tuple[int, ...]
    keepdims: bool
    shape: tuple[int, ...]
    dtype: np.dtype


@dataclass(frozen=True)
class Update:
    """``name op= expr`` in place (``func``: ``np.add`` for ``+=`` ...): ``name`` is a region
    input of the domain's shape that the generated code owns (a fresh, unaliased buffer),
    or a value an earlier ``Let`` defined; the buffer is written, not rebound."""

    name: str
    func: Callable
    expr: Expr


@dataclass(frozen=True)
class Note:
    """A comment of the generated code (``# file.py:3  y = np.sin(x)``) inside the region,
    kept in the kernel so that it reads like the statements it replaces."""

    text: str


Step = Let | Reduce | Update | Note


@dataclass(frozen=True)
class Region:
    """One kernel's worth of a generated function.

    ``name``: the kernel's function name, fresh in its module; ``domain``: the shape
    iterated over (at least one dimension); ``inputs``: the values read that are defined
    before the region (arrays of the domain's shape or broadcasting to it, and scalars), in
    a fixed order; ``outputs``: the values the region defines that are read after it or
    returned (a ``Let``'s value has the domain's shape, a ``Reduce``'s its own), in the
    order they are defined; ``updated``: the inputs written in place by ``Update`` steps;
    ``steps``: the work, in program order; ``start``/``stop``: the statements
    ``body[start:stop]`` of the function that the kernel's call replaces."""

    name: str
    domain: tuple[int, ...]
    inputs: tuple[Value, ...]
    outputs: tuple[Value, ...]
    updated: tuple[str, ...]
    steps: tuple[Step, ...]
    start: int
    stop: int


class KernelEmitter(Protocol):
    """What a backend that runs fused kernels provides (see ``Backend.kernels``).  An emitter
    that subclasses it inherits the defaults of ``names``, ``file_backed``, ``supports`` and
    ``loops``."""

    names: tuple[str, ...] = ()
    """The module-level names its prelude and kernels bind (the module's own avoid them)."""

    file_backed: bool = False
    """Whether a module with its kernels must be loaded from a real file (numba's on-disk
    cache)."""

    def supports(self, func: Callable) -> bool:
        """Whether a kernel can apply the NumPy function ``func`` (the fusion pass leaves
        the others out of its regions)."""
        return True

    def loops(self, functions: list, main: Any, loops: dict, taken: set[str]) -> list[str]:
        """Loop kernels: rewrite the qualifying loops of ``main`` to call them, and return
        their sources (``loops``: the loop bodies' facts); none by default."""
        return []

    def prelude(self) -> list[str]:
        """Lines after the module's imports (``import numba``, with a plain-Python
        stand-in where the library is missing)."""

    def kernel(self, region: Region) -> str:
        """The source of the kernel's definition (a function, or an assignment of a
        CuPy kernel object), at module level."""

    def call(self, region: Region) -> list[str]:
        """The statements that replace ``body[region.start:region.stop]``: the kernel's
        call, binding every output's name."""
