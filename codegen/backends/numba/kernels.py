"""Numba kernels for fused regions (``backend="numba"``): the backend's
:class:`~srcgrad.codegen.backends.fusion.regions.KernelEmitter`.

Each :class:`~srcgrad.codegen.backends.fusion.regions.Region` becomes one ``@njit`` function of
nested loops
over the region's domain (:mod:`~srcgrad.codegen.backends.numba.writer`), after the definitions of
the
vectorisable math functions it calls (:mod:`~srcgrad.codegen.backends.numba.libm`), and one call
that
binds the outputs as the statements it replaces did.  The module's prelude imports numba, or
stands in for it so the same text runs as plain Python; with ``NUMBA_DISABLE_JIT=1`` numba's
own ``njit`` leaves the functions as Python too.
"""

from __future__ import annotations

import ast
import dataclasses
import math

from srcgrad.codegen.backends.fusion.regions import KernelEmitter, Region
from srcgrad.codegen.backends.numba.exprs import SUPPORTED, Unsupported, dtype_expr, supports
from srcgrad.codegen.backends.numba.libm import HELPERS, LIMITED, definitions
from srcgrad.codegen.backends.numba.loops import loop_kernels
from srcgrad.codegen.backends.numba.writer import PARALLEL_MIN, ROW, KernelWriter, final_kinds
from srcgrad.codegen.printer import unparse

__all__ = ["NUMBA_KERNELS", "NumbaKernels", "Unsupported", "supports", "SUPPORTED",
           "PARALLEL_MIN", "ROW"]


VECTORISED_MIN = 4096
"""The size of domain from which a kernel calls the vectorisable math functions: they make a
loop over many elements 3-5 times faster, but take seconds to compile (every call inlined)
where a small domain's loop gains little."""


class NumbaKernels(KernelEmitter):
    """The numba :class:`~srcgrad.codegen.backends.fusion.regions.KernelEmitter`; ``file_backed``:
    the
    module must be loaded from a real file, for numba's on-disk cache (``cache=True``)."""

    file_backed = True
    names = ("njit", "prange", *HELPERS)
    """The module-level names the prelude and the kernels' helpers bind (a module's own names
    must avoid them; a kernel ``k`` may also define ``k_libm``)."""

    def supports(self, func: object) -> bool:
        """:func:`supports`, for the fusion pass."""
        return supports(func)

    def loops(self, functions: list[ast.FunctionDef], main: ast.FunctionDef, loops: dict,
              taken: set[str]) -> list[str]:
        """The main function's loops that qualify as loop kernels
        (:func:`~srcgrad.codegen.backends.numba.loops.loop_kernels`): rewritten to call them, whose
        sources are returned."""
        return loop_kernels(functions, main, loops, taken)

    def prelude(self) -> list[str]:
        return ["try:",
                "    from numba import njit, prange",
                "except ImportError:   # without numba, the kernels run as plain Python (slowly)",
                "    prange = range",
                "",
                "    def njit(*args, **options):",
                '        """Stand-in for numba.njit: the function itself, unchanged."""',
                "        if len(args) == 1 and callable(args[0]) and not options:",
                "            return args[0]",
                "        return lambda function: function"]

    def kernel(self, region: Region) -> str:
        """The ``@njit`` function for ``region``, after the helpers of
        :mod:`~srcgrad.codegen.backends.numba.libm` it calls; where those include ``sin_f64`` or
        ``cos_f64`` (exact up to 2**20), after its twin with libm's functions too, which it
        calls where an argument is beyond.  A region that updates an input in place (which a
        second pass would see updated) calls libm's ``sin`` and ``cos``.  Raises
        :class:`Unsupported` for what it cannot write exactly."""
        if math.prod(region.domain) < VECTORISED_MIN:
            helpers: frozenset[str] = frozenset()    # libm: compiles in a fraction of the time
        else:
            helpers = frozenset(HELPERS) - (LIMITED if region.updated else frozenset())
        twin = f"{region.name}_libm"
        writer = KernelWriter(region, helpers, None if region.updated else twin)
        texts, used = [writer.write()], set(writer.used)
        if writer.far:             # the twin calls the helpers for signed zeros too
            plain = KernelWriter(dataclasses.replace(region, name=twin),
                                 note=", with libm's functions (for sin and cos beyond 2**20)")
            texts.insert(0, plain.write())
            used |= plain.used
        return "\n\n\n".join(definitions(used) + texts)

    def call(self, region: Region) -> list[str]:
        """``y, d_x = kernel(x, m)``: a 0-d array argument is passed as its scalar
        (``z[()]``); a full reduction is bound as NumPy's scalar (``np.float64(s)``)."""
        finals = final_kinds(region)
        targets = [v for v in region.outputs if finals.get(v.name) != "input"]
        args = ", ".join(v.name if v.python or v.shape else f"{v.name}[()]"
                         for v in region.inputs)
        call = f"{region.name}({args})"
        scalars = [v for v in targets if not v.shape and finals[v.name] == "reduce"]
        if not targets:
            return [call]
        if len(targets) == 1 and scalars:
            return [f"{targets[0].name} = {unparse(dtype_expr(targets[0].dtype))}({call})"]
        lines = [f"{', '.join(v.name for v in targets)} = {call}"]
        return lines + [f"{v.name} = {unparse(dtype_expr(v.dtype))}({v.name})"
                        for v in scalars]


NUMBA_KERNELS = NumbaKernels()
"""The emitter that ``backend="numba"`` hands its shape-specialised modules."""
