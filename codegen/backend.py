"""Backends: the array library generated code calls, as an object the emitters are handed.

A :class:`Backend` knows the module a generated module imports and the name it binds it to
(``import numpy as np``, ``import cupy as cp``), and how a NumPy function is written for it
(:meth:`Backend.path`).  ``MATH`` is NumPy's code specialised for Python floats: it writes
``math.sin`` where Python's ``math`` module has the function (and ``math.pow`` for ``**``,
which raises where NumPy gives nan), NumPy's functions otherwise.

A backend with ``kernels`` (a :class:`~srcgrad.codegen.regions.KernelEmitter`: ``NUMBA``,
``CUPY``) runs the fused regions of its shape-specialised modules as kernels (see
:func:`srcgrad.codegen.module.render`); the emitters are imported when first used, so
importing the backends imports neither numba nor CuPy.
"""

from __future__ import annotations

import ast
import importlib
import re
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["Backend", "NUMPY", "NUMBA", "CUPY", "MATH", "as_backend", "LazyKernels"]

MATH_NAMES = {np.sin: "sin", np.cos: "cos", np.tan: "tan", np.exp: "exp", np.log: "log",
              np.sqrt: "sqrt", np.tanh: "tanh", np.sinh: "sinh", np.cosh: "cosh",
              np.arcsin: "asin", np.arccos: "acos", np.arctan: "atan", np.log1p: "log1p",
              np.expm1: "expm1", np.log2: "log2", np.log10: "log10", np.fabs: "fabs",
              np.arctan2: "atan2", np.hypot: "hypot", np.arcsinh: "asinh",
              np.arccosh: "acosh", np.arctanh: "atanh"}     # not floor/ceil: math's give ints
"""NumPy ufuncs that Python's ``math`` module has, by their ``math`` name."""

_PRIVATE_MODULES = ("_core", "core", "fromnumeric", "numeric", "_linalg", "multiarray")


@dataclass(frozen=True)
class Backend:
    """An array library for generated code.

    ``name``: the user's spelling (``backend="numpy"``); ``module``/``alias``: what the
    generated module imports, and as what; ``scalar``: specialised for Python floats;
    ``kernels``: the emitter of its fused kernels (None: no fusion); ``library``: the module
    its code needs to run, and ``extra`` the ``pip install srcgrad[extra]`` that brings it.
    """

    name: str
    module: str
    alias: str
    scalar: bool = False
    kernels: Any = None
    library: str | None = None
    extra: str | None = None

    def __repr__(self) -> str:
        return f"<backend {self.name}>"

    @property
    def import_line(self) -> str:
        return f"import {self.module} as {self.alias}"

    def path(self, func: Any) -> ast.expr:
        """``np.linalg.solve`` for ``numpy.linalg.solve``, under this backend's alias; a
        builtin by its own name; with ``scalar``, ``math.sin`` where ``math`` has it."""
        if getattr(func, "__module__", None) == "builtins":
            return ast.Name(func.__name__, ast.Load())        # sum(xs) of a list is Python's
        if self.scalar and func in MATH_NAMES:
            return ast.Attribute(ast.Name("math", ast.Load()), MATH_NAMES[func], ast.Load())
        module = getattr(func, "__module__", None) or "numpy"
        node: ast.expr = ast.Name(self.alias, ast.Load())
        for part in module.split(".")[1:]:
            if part not in _PRIVATE_MODULES:
                node = ast.Attribute(node, part, ast.Load())
        return ast.Attribute(node, func.__name__, ast.Load())

    def attribute(self, name: str) -> ast.expr:
        """``np.name``: an attribute of the array module (``np.s_``, ``np.shape``)."""
        return ast.Attribute(ast.Name(self.alias, ast.Load()), name, ast.Load())

    def binop(self, left: ast.expr, op: ast.operator, right: ast.expr) -> ast.expr:
        """``left op right``; ``math.pow(left, right)`` for ``**`` on Python floats."""
        if self.scalar and isinstance(op, ast.Pow):
            return ast.Call(ast.Attribute(ast.Name("math", ast.Load()), "pow", ast.Load()),
                            [left, right], [])
        return ast.BinOp(left, op, right)

    def swap(self, source: str) -> str:
        """A helper's NumPy source (written with ``np.``, or ``getattr(np, name)``) for
        this backend."""
        return source if self.alias == "np" else re.sub(r"\bnp\b(?=[.,)])", self.alias, source)


class LazyKernels:
    """A kernel emitter imported when first used: ``module``'s ``attribute``."""

    def __init__(self, module: str, attribute: str) -> None:
        self.module, self.attribute = module, attribute

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(getattr(importlib.import_module(self.module), self.attribute), name)

    def __repr__(self) -> str:
        return f"<kernels {self.module}.{self.attribute}>"


NUMPY = Backend("numpy", "numpy", "np")
NUMBA = Backend("numba", "numpy", "np", library="numba", extra="numba",
                kernels=LazyKernels("srcgrad.codegen.numba_kernels", "NUMBA_KERNELS"))
CUPY = Backend("cupy", "cupy", "cp", library="cupy", extra="cuda",
               kernels=LazyKernels("srcgrad.codegen.cupy_kernels", "CUPY_KERNELS"))
MATH = Backend("math", "numpy", "np", scalar=True)

_BY_NAME = {"numpy": NUMPY, "np": NUMPY, "numba": NUMBA, "cupy": CUPY, "cp": CUPY,
            "math": MATH}


def as_backend(backend: Backend | str) -> Backend:
    """The backend named ``backend`` (``"numpy"``, ``"numba"``, ``"cupy"``, or the
    namespaces ``"np"``, ``"cp"`` and ``"math"`` that callers pass), or ``backend`` itself."""
    if isinstance(backend, Backend):
        return backend
    try:
        return _BY_NAME[backend]
    except KeyError:
        raise ValueError(f"unknown backend {backend!r}") from None
