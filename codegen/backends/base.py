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

A backend also answers what the transforms ask of it when they run (whether its code is
specialised for shapes, which arrays are its library's, what happens to its arrays before
the eager engine takes them ...), so that no transform tells backends apart by name.  The
user-facing names, ``"auto"`` and the default are kept by
:mod:`srcgrad.codegen.backends.registry`.
"""

from __future__ import annotations

import ast
import contextlib
import contextvars
import importlib
import re
import threading
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["Backend", "NUMPY", "NUMBA", "CUPY", "DASK", "MATH", "as_backend", "LazyKernels",
           "NotInBackend", "FILTERS_LOCK", "NOT_IN_DASK"]

MATH_NAMES = {np.sin: "sin", np.cos: "cos", np.tan: "tan", np.exp: "exp", np.log: "log",
              np.sqrt: "sqrt", np.tanh: "tanh", np.sinh: "sinh", np.cosh: "cosh",
              np.arcsin: "asin", np.arccos: "acos", np.arctan: "atan", np.log1p: "log1p",
              np.expm1: "expm1", np.log2: "log2", np.log10: "log10", np.fabs: "fabs",
              np.arctan2: "atan2", np.hypot: "hypot", np.arcsinh: "asinh",
              np.arccosh: "acosh", np.arctanh: "atanh"}     # not floor/ceil: math's give ints
"""NumPy ufuncs that Python's ``math`` module has, by their ``math`` name."""

_PRIVATE_MODULES = ("_core", "core", "fromnumeric", "numeric", "_linalg", "multiarray")

FILTERS_LOCK = threading.RLock()
"""Held while srcgrad's own warning filters are in place (a library's warnings made errors):
the filters are the process's, and each ``catch_warnings`` restores those it found, so calls
in several threads take turns (else one would restore the filter another had added)."""

_NOTHING = contextlib.nullcontext()


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
    name, or one NumPy would not hand it: ``np.array`` of its arrays).  ``reserved``: names
    its code binds for itself (``njit``); ``helper_module``: the module whose top-level
    functions its modules may define (read from its text, never imported for this).
    ``loop_probe``: what learns its loops' shapes at a first call (where its kernels
    specialise loops: ``specialises_loops``).
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
    specialises_shapes: bool = True
    specialises_loops: bool = False
    array_class: str | None = None
    array_interface: str | None = None
    by_arrays: bool = False
    unfused_as: Backend | None = None
    refuses_arrays: bool = False
    eager_takes_arrays: bool = True
    compiled_warnings: tuple[dict[str, Any], ...] = ()
    plain_warnings: tuple[dict[str, Any], ...] = ()
    runtime: Any = None
    reserved: tuple[str, ...] = ()
    helper_module: str | None = None
    loop_probe: Any = None

    def __repr__(self) -> str:
        return f"<backend {self.name}>"

    # ------------------------------------------------------------- run-time hooks
    @property
    def unfused(self) -> Backend:
        """The backend its code is written for where no kernels are fused."""
        return self.unfused_as or self

    def owns(self, x: Any) -> bool:
        """Whether ``x`` is an array of this backend's own library (told by its class)."""
        kind = type(x)
        return self.array_class is not None and kind.__name__ == self.array_class and \
            kind.__module__.partition(".")[0] == self.module.partition(".")[0]

    def picks(self, x: Any) -> bool:
        """Whether ``"auto"`` runs on this backend for an argument ``x``."""
        return self.owns(x) or (self.array_interface is not None
                                and hasattr(x, self.array_interface))

    def refusal(self, leaves: list, name: str) -> str | None:
        """Why its code for the function ``name`` cannot take these arguments, or None."""
        return self.runtime.refusal(leaves, name) if self.refuses_arrays else None

    def eager_arguments(self, values: list) -> list:
        """The arguments as the eager engine takes them."""
        return values if self.eager_takes_arrays else self.runtime.eager_arguments(values)

    def own_refusal(self, exc: BaseException, name: str, where: str) -> str | None:
        """Where ``exc`` is the library refusing what the code asks of it: the message
        (``where``: the user's line) that ``strict`` raises; else None."""
        return None if self.runtime is None else self.runtime.own_refusal(exc, name, where)

    def compiled_code(self) -> contextlib.AbstractContextManager:
        """The context its compiled code runs in (``compiled_warnings`` made errors)."""
        return _raising(self.compiled_warnings)

    def plain_code(self) -> contextlib.AbstractContextManager:
        """The context the plain function runs in after the compiled code failed."""
        return _raising(self.plain_warnings)

    def probe_loops(self, tree: ast.Module, main: str, namespace: dict[str, Any],
                    sink: contextvars.ContextVar) -> None:
        """Make the loop bodies of the probing module ``tree`` (its main function ``main``,
        run in ``namespace``) report their locals, in every iteration, into the list ``sink``
        holds; nothing where this backend's loops are not specialised."""
        if self.loop_probe is not None:
            self.loop_probe.instrument(tree, main, namespace, sink)

    def loop_facts(self, facts: dict[str, tuple], records: list) -> dict[str, tuple]:
        """The facts a specialisation is built from: the main function's ``facts``, with
        what the loop bodies reported (``records``) where there are any."""
        if not records or self.loop_probe is None:
            return facts
        return self.loop_probe.facts(facts, records)

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


class _Raising:
    """A context in which the warnings ``filters`` select (``filterwarnings`` keywords) are
    raised as errors, under :data:`FILTERS_LOCK`."""

    def __init__(self, filters: tuple[dict[str, Any], ...]) -> None:
        self.filters, self.caught = filters, warnings.catch_warnings()

    def __enter__(self) -> None:
        FILTERS_LOCK.acquire()
        try:
            self.caught.__enter__()
        except BaseException:
            FILTERS_LOCK.release()
            raise
        for keywords in self.filters:
            warnings.filterwarnings("error", **keywords)

    def __exit__(self, *exc: Any) -> None:
        try:
            self.caught.__exit__(*exc)
        finally:
            FILTERS_LOCK.release()


def _raising(filters: tuple[dict[str, Any], ...]) -> contextlib.AbstractContextManager:
    return _Raising(filters) if filters else _NOTHING


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


NOT_IN_DASK = r"The `numpy\.[\w.]+` function is not implemented by Dask array"
"""Dask's warning before it computes its arrays into NumPy's for a function it lacks (made
an error while compiled code runs on Dask arrays)."""

NUMPY = Backend("numpy", "numpy", "np")
NUMBA = Backend("numba", "numpy", "np", library="numba", extra="numba",
                kernels=LazyKernels("srcgrad.codegen.backends.numba.kernels", "NUMBA_KERNELS"),
                specialises_loops=True, unfused_as=NUMPY, reserved=("njit", "prange"),
                helper_module="srcgrad.codegen.backends.numba.libm",
                loop_probe=LazyKernels("srcgrad.codegen.backends.numba.loop_probe", "PROBE"))
CUPY = Backend("cupy", "cupy", "cp", library="cupy", extra="cuda",
               kernels=LazyKernels("srcgrad.codegen.backends.cupy.kernels", "CUPY_KERNELS"),
               array_class="ndarray", array_interface="__cuda_array_interface__")
MATH = Backend("math", "numpy", "np", scalar=True)
DASK = Backend("dask", "dask.array", "da", library="dask", extra="dask", keeps_numpy=True,
               helpers=LazyKernels("srcgrad.codegen.backends.dask.helpers", "HELPERS"),
               writes_in_place=False,
               renamed={np.array: "array", np.asarray: "asarray",   # of data: Dask's
                        np.conjugate: "conj", np.copy: "asarray", np.linalg.matmul: "matmul",
                        np.linalg.outer: "outer", np.linalg.tensordot: "tensordot"},
               specialises_shapes=False, array_class="Array", refuses_arrays=True,
               eager_takes_arrays=False,
               compiled_warnings=({"message": NOT_IN_DASK, "category": FutureWarning},),
               plain_warnings=({"category": FutureWarning, "module": "dask"},),
               runtime=LazyKernels("srcgrad.codegen.backends.dask.runtime", "RUNTIME"),
               helper_module="srcgrad.codegen.backends.dask.helpers")

_BY_NAME = {**{b.alias: b for b in (NUMPY, CUPY, DASK)},       # the namespaces callers pass
            **{b.name: b for b in (NUMPY, NUMBA, CUPY, DASK, MATH)}}


def as_backend(backend: Backend | str) -> Backend:
    """The backend named ``backend`` (``"numpy"``, ``"numba"``, ``"cupy"``, or the
    namespaces ``"np"``, ``"cp"`` and ``"math"`` that callers pass), or ``backend`` itself."""
    if isinstance(backend, Backend):
        return backend
    try:
        return _BY_NAME[backend]
    except KeyError:
        raise ValueError(f"unknown backend {backend!r}") from None
