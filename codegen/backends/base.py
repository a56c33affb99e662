"""Backends: the array library generated code calls, as an object the emitters are handed.

A :class:`Backend` knows the module a generated module imports and the name it binds it to
(``import numpy as np``, ``import cupy as cp``), and how a NumPy function is written for it
(:meth:`Backend.path`).  ``MATH`` is NumPy's code specialised for Python floats: it writes
``math.sin`` where Python's ``math`` module has the function (and ``math.pow`` for ``**``,
which raises where NumPy gives nan), NumPy's functions otherwise.

A backend with ``kernels`` (a :class:`~srcgrad.codegen.backends.fusion.regions.KernelEmitter`:
``NUMBA``,
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

__all__ = ["Backend", "NUMPY", "NUMBA", "CUPY", "DASK", "MATH", "as_backend", "LazyKernels",
           "NotInBackend"]

MATH_NAMES = {np.sin: "sin", np.cos: "cos", np.tan: "tan", np.exp: "exp", np.log: "log",
              np.sqrt: "sqrt", np.tanh: "tanh", np.sinh: "sinh", np.cosh: "cosh",
              np.arcsin: "asin", np.arccos: "acos", np.arctan: "atan", np.log1p: "log1p",
              np.expm1: "expm1", np.log2: "log2", np.log10: "log10", np.fabs: "fabs",
              np.arctan2: "atan2", np.hypot: "hypot", np.arcsinh: "asinh",
              np.arccosh: "acosh", np.arctanh: "atanh"}     # not floor/ceil: math's give ints
"""NumPy ufuncs that Python's ``math`` module has, by their ``math`` name."""

_PRIVATE_MODULES = ("_core", "core", "fromnumeric", "numeric", "_linalg", "multiarray")


class NotInBackend(LookupError):
    """The backend's library cannot take a call the code makes (the compiler reports it as a
    CompileError at the statement)."""


@dataclass(frozen=True)
class Backend:
    """An array library for generated code.

    ``name``: the user's spelling (``backend="numpy"``); ``module``/``alias``: what the
    generated module imports, and as what; ``scalar``: specialised for Python floats;
    ``kernels``: the emitter of its fused kernels (None: no fusion); ``library``: the module
    its code needs to run, and ``extra`` the ``pip install srcgrad[extra]`` that brings it.
    ``keeps_numpy``: the module also imports NumPy, keeps the user's ``np`` and NumPy's helper
    sources (which NumPy hands to the library's arrays through ``__array_function__``);
    ``helpers``: the library's own versions of the helpers that must differ (a lazily
    imported mapping: name → function).  Such a module
    writes the library's elementwise functions as the library's (``da.exp``) and its others
    as NumPy's (``np.sum``: NumPy hands them to the library's arrays, and answers for numbers
    and NumPy arrays itself, which the library's may not take).  ``writes_in_place``: whether
    the code adds into the arrays it made (``d_x += g``): not where they may be immutable
    graphs (Dask), into which a NumPy ``+=`` would compute its operand; ``renamed``: NumPy
    functions written as the library's function of that name (one it has under another
    name, or one NumPy would not hand it: ``np.array`` of its arrays).
    """

    name: str
    module: str
    alias: str
    scalar: bool = False
    kernels: Any = None
    library: str | None = None
    extra: str | None = None
    keeps_numpy: bool = False
    helpers: Any = None
    writes_in_place: bool = True
    renamed: Any = None

    def __repr__(self) -> str:
        return f"<backend {self.name}>"

    @property
    def import_line(self) -> str:
        line = f"import {self.module} as {self.alias}"
        return f"import numpy as np\n{line}" if self.keeps_numpy else line

    def path(self, func: Any) -> ast.expr:
        """``np.linalg.solve`` for ``numpy.linalg.solve``, under this backend's alias; a
        builtin by its own name; with ``scalar``, ``math.sin`` where ``math`` has it."""
        if getattr(func, "__module__", None) == "builtins":
            return ast.Name(func.__name__, ast.Load())        # sum(xs) of a list is Python's
        if self.scalar and func in MATH_NAMES:
            return ast.Attribute(ast.Name("math", ast.Load()), MATH_NAMES[func], ast.Load())
        module = getattr(func, "__module__", None) or "numpy"
        parts = [p for p in module.split(".")[1:] if p not in _PRIVATE_MODULES]
        if self.renamed and func in self.renamed:
            return _dotted([self.alias, *self.renamed[func].split(".")])
        if self.keeps_numpy and elementwise_function(
                self._resolve(parts + [func.__name__])) is None:
            return _dotted(["np", *parts, func.__name__])     # NumPy hands it to the library
        return _dotted([self.alias, *parts, func.__name__])

    def _resolve(self, path: list[str]) -> Any:
        target = self.library_module()
        for part in path:
            target = getattr(target, part, None)
        return target

    def library_module(self) -> Any:
        """The array module, or None where it cannot be imported."""
        try:
            return importlib.import_module(self.module)
        except ImportError:
            return None

    def attribute(self, name: str) -> ast.expr:
        """``np.name``: an attribute of the array module (``np.s_``, ``np.shape``); NumPy's
        where the module keeps NumPy."""
        return ast.Attribute(ast.Name("np" if self.keeps_numpy else self.alias, ast.Load()),
                             name, ast.Load())

    def binop(self, left: ast.expr, op: ast.operator, right: ast.expr) -> ast.expr:
        """``left op right``; ``math.pow(left, right)`` for ``**`` on Python floats."""
        if self.scalar and isinstance(op, ast.Pow):
            return ast.Call(ast.Attribute(ast.Name("math", ast.Load()), "pow", ast.Load()),
                            [left, right], [])
        return ast.BinOp(left, op, right)

    def swap(self, source: str) -> str:
        """A helper's NumPy source (written with ``np.``, or ``getattr(np, name)``) for
        this backend."""
        if self.alias == "np" or self.keeps_numpy:
            return source
        return re.sub(r"\bnp\b(?=[.,)])", self.alias, source)

    def helper(self, name: str) -> Any:
        """The library's own version of the helper ``name`` (None: NumPy's serves)."""
        return None if self.helpers is None else self.helpers.get(name)


def elementwise_function(target: Any) -> Any:
    """The NumPy function a library's elementwise function stands for (Dask's ufuncs and
    their wrappers, which take what NumPy's take: numbers and NumPy arrays too), or None."""
    if type(target).__name__ == "ufunc" and hasattr(target, "_ufunc"):
        return target._ufunc
    code = getattr(target, "__code__", None)
    if code is None or "numpy_ufunc" not in code.co_freevars:
        return None
    return target.__closure__[code.co_freevars.index("numpy_ufunc")].cell_contents


def _dotted(parts: list[str]) -> ast.expr:
    node: ast.expr = ast.Name(parts[0], ast.Load())
    for part in parts[1:]:
        node = ast.Attribute(node, part, ast.Load())
    return node


class LazyKernels:
    """``module``'s ``attribute``, imported when first used: a kernel emitter, or a table of
    a backend's helpers (read with ``get``)."""

    def __init__(self, module: str, attribute: str) -> None:
        self.module, self.attribute = module, attribute

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(getattr(importlib.import_module(self.module), self.attribute), name)

    def get(self, name: str, default: Any = None) -> Any:
        """For a mapping (a backend's helpers): its ``name``, or ``default`` without the
        module's library."""
        try:
            table = getattr(importlib.import_module(self.module), self.attribute)
        except ImportError:
            return default
        return table.get(name, default)

    def __repr__(self) -> str:
        return f"<kernels {self.module}.{self.attribute}>"


NUMPY = Backend("numpy", "numpy", "np")
NUMBA = Backend("numba", "numpy", "np", library="numba", extra="numba",
                kernels=LazyKernels("srcgrad.codegen.backends.numba.kernels", "NUMBA_KERNELS"))
CUPY = Backend("cupy", "cupy", "cp", library="cupy", extra="cuda",
               kernels=LazyKernels("srcgrad.codegen.backends.cupy.kernels", "CUPY_KERNELS"))
MATH = Backend("math", "numpy", "np", scalar=True)
DASK = Backend("dask", "dask.array", "da", library="dask", extra="dask", keeps_numpy=True,
               helpers=LazyKernels("srcgrad.codegen.backends.dask.helpers", "HELPERS"),
               writes_in_place=False,
               renamed={np.array: "array", np.asarray: "asarray",   # of data: Dask's
                        np.conjugate: "conj", np.copy: "asarray", np.linalg.matmul: "matmul",
                        np.linalg.outer: "outer", np.linalg.tensordot: "tensordot"})

_BY_NAME = {"numpy": NUMPY, "np": NUMPY, "numba": NUMBA, "cupy": CUPY, "cp": CUPY,
            "dask": DASK, "da": DASK,
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
