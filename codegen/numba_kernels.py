"""Numba kernels for fused regions (``backend="numba"``).

Each :class:`~srcgrad.codegen.regions.Region` becomes one ``@njit`` function of nested loops
over the region's domain, written with the user's names so that it reads like the statements
it replaces, and one call that binds the outputs as those statements did.  The module's
prelude imports numba, or stands in for it so the same text runs as plain Python; with
``NUMBA_DISABLE_JIT=1`` numba's own ``njit`` leaves the functions as Python too.

Semantics kept from NumPy: float64 arithmetic with no ``fastmath`` flags (NaN and inf
behave as in NumPy; the transcendental functions come from libm, within 2 ulp of NumPy's),
``error_model="numpy"`` (division by zero gives inf or nan, never raises), ``np.max`` and
``np.min`` propagate NaN, and a sum adds in loop order (NumPy adds pairwise: the results agree
to about 1e-13 relative on ordinary data).  Signed zeros may differ where NumPy's choice is
arbitrary (``np.maximum(0.0, -0.0)``).
"""

from __future__ import annotations

import ast
import math

import numpy as np

from srcgrad.codegen.numba_exprs import (
    OPERATORS,
    SUPPORTED,
    Term,
    Unsupported,
    constant,
    dtype_expr,
    in_kind,
    spell,
    supports,
    write_expr,
)
from srcgrad.codegen.regions import Expr, Let, Note, Reduce, Region, Update

__all__ = ["NUMBA_KERNELS", "NumbaKernels", "Unsupported", "supports", "SUPPORTED", "PARALLEL_MIN"]

PARALLEL_MIN = 2 ** 16
"""Domains with at least this many elements run their outermost loop with ``prange``."""
_REDUCTIONS = (np.add, np.maximum, np.minimum)


def _identity(func: object, dtype: np.dtype) -> float | int | bool:
    """What a ``func`` reduction starts from: 0, or the least/greatest value of ``dtype``."""
    dtype = np.dtype(dtype)
    if func is np.add:
        return in_kind(0, dtype)
    low = func is np.maximum
    if dtype.kind == "f":
        return -math.inf if low else math.inf
    if dtype.kind == "b":
        return not low
    info = np.iinfo(dtype)
    return int(info.min if low else info.max)


def _at(name: str, index: ast.expr) -> str:
    """``name[index]``."""
    return ast.unparse(ast.Subscript(ast.Name(name, ast.Load()), index, ast.Load()))


def _final_kinds(region: Region) -> dict[str, str]:
    """What each name holds after the region: ``"let"`` (a buffer of the domain's shape),
    ``"reduce"``, or ``"input"`` (an input, only read or written in place)."""
    kinds = {v.name: "input" for v in region.inputs}
    for step in region.steps:
        if isinstance(step, (Let, Reduce)):
            kinds[step.name] = "let" if isinstance(step, Let) else "reduce"
    return kinds


class _Writer:
    """Writes one region's kernel: loops over the domain, steps at the innermost level."""

    def __init__(self, region: Region):
        self.region = region
        if not region.domain:
            raise ValueError(f"region {region.name}: its domain has no dimensions")
        for value in region.inputs:
            if np.dtype(value.dtype).kind not in "biuf":
                raise Unsupported(f"{value.name} has dtype {value.dtype}")
        self.inputs = {v.name: v for v in region.inputs}
        self.reserved = {"np", "njit", "prange", "range", "abs", region.name}   # the kernel's
        self.taken = set(self.inputs) | {s.name for s in region.steps if not isinstance(s, Note)}
        self.taken |= self.reserved
        self.params = [self._own(v.name, set()) for v in region.inputs]
        n = len(region.domain)
        self.loops = [self._fresh(c) for c in ("i", "j", "k", "l")[:n]]
        self.loops += [self._fresh(f"i{a}") for a in range(len(self.loops), n)]
        self.env: dict[str, Term] = {}            # how each name is read, at the loops' index
        self.locals: set[str] = set()              # names whose value is now a local scalar
        self.buffers: dict[str, str] = {}          # an output's name -> what the kernel returns
        for value, param in zip(region.inputs, self.params):
            node: ast.expr = ast.Name(param, ast.Load())
            if value.shape:
                node = ast.Subscript(node, self._index(value.name, value.shape), ast.Load())
            self.env[value.name] = Term(node, value.dtype, value.python)
        reduced = [(s.func, {a % n for a in s.axes}) for s in region.steps
                   if isinstance(s, Reduce)]
        self.parallel = (math.prod(region.domain) >= PARALLEL_MIN and region.domain[0] > 1
                         and all(0 not in axes or (func is np.add and len(axes) == n)
                                 for func, axes in reduced))   # numba reduces a scalar sum

    def _own(self, name: str, clash: set[str]) -> str:
        """The user's ``name`` for a kernel local, unless it would hide one of the kernel's
        own names or ``clash``: then a fresh one."""
        return self._fresh(name) if name in self.reserved or name in clash else name

    def _fresh(self, base: str) -> str:
        name, n = base, 0
        while name in self.taken:
            n += 1
            name = f"{base}_{n}"
        self.taken.add(name)
        return name

    def _index(self, name: str, shape: tuple[int, ...], drop: tuple[int, ...] = (),
               zero: tuple[int, ...] = ()) -> ast.expr:
        """The index of ``name`` (of ``shape``, broadcast against the domain) at the loops'
        position; domain axes in ``drop`` are left out, those in ``zero`` read at 0."""
        domain, lead = self.region.domain, len(self.region.domain) - len(shape) - len(drop)
        if lead < 0:
            raise ValueError(f"{name} of shape {shape} has more axes than the domain {domain}")
        index: list[ast.expr] = []
        kept = [a for a in range(len(domain)) if a not in drop]
        for axis, size in zip(kept[lead:], shape):
            if axis in zero or (size == 1 and domain[axis] != 1):
                index.append(ast.Constant(0))
            elif size == domain[axis]:
                index.append(ast.Name(self.loops[axis], ast.Load()))
            else:
                raise ValueError(f"{name} of shape {shape} does not broadcast to {domain}")
        return index[0] if len(index) == 1 else ast.Tuple(index, ast.Load())

    def expr(self, e: Expr) -> Term:
        return write_expr(e, self.env)

    # the kernel

    def write(self) -> str:
        r, n = self.region, len(self.region.domain)
        kinds = _final_kinds(r)
        last = {s.name: k for k, s in enumerate(r.steps) if isinstance(s, (Let, Update))}
        self.before: list[list[str]] = [[] for _ in range(n)]   # before the loop of axis d
        self.after: list[list[str]] = [[] for _ in range(n)]    # after it ends
        self.alloc: list[str] = []
        for name in (v.name for v in r.outputs):
            if kinds.get(name) == "let":
                dtype = [s.dtype for s in r.steps if isinstance(s, Let) and s.name == name][-1]
                self.buffers[name] = self._fresh(f"{name}_out")
                self.alloc.append(f"{self.buffers[name]} = np.empty({r.domain!r}, "
                                  f"{ast.unparse(dtype_expr(dtype))})")
        body: list[str] = []
        for k, step in enumerate(r.steps):
            store = kinds.get(getattr(step, "name", None)) == "let" and last.get(step.name) == k
            if isinstance(step, Note):
                body.append("# " + _printable(step.text))
            elif isinstance(step, Let):
                body += self._let(step, store and step.name in self.buffers)
            elif isinstance(step, Update):
                body += self._update(step, store and step.name in self.buffers)
            elif isinstance(step, Reduce):
                body += self._reduce(step)
            else:
                raise TypeError(f"not a step of a region: {step!r}")
        returned = []
        for value in r.outputs:
            if value.name not in kinds:
                raise ValueError(f"region {r.name}: output {value.name} is never defined")
            if kinds[value.name] != "input":
                returned.append(self.buffers[value.name])
        flags = "cache=True, error_model='numpy'" + (", parallel=True" if self.parallel else "")
        names = ", ".join(v.name for v in r.outputs if kinds[v.name] != "input")
        lines = [f"@njit({flags})", f"def {r.name}({', '.join(self.params)}):",
                 f'    """{names or "Updates in place"} over {r.domain}.', "",
                 '    float64 as NumPy: no fastmath; sums add in loop order."""']
        lines += ["    " + line for line in self.alloc]
        for d in range(n):
            pad = "    " * (d + 1)
            lines += [pad + line for line in self.before[d]]
            loop = "prange" if d == 0 and self.parallel else "range"
            lines.append(f"{pad}for {self.loops[d]} in {loop}({r.domain[d]}):")
        lines += ["    " * (n + 1) + line for line in body]
        for d in reversed(range(n)):
            lines += ["    " * (d + 1) + line for line in self.after[d]]
        if returned:
            lines.append(f"    return {', '.join(returned)}")
        return "\n".join(lines)

    def _store(self, name: str) -> str:
        place = _at(self.buffers[name], self._index(name, self.region.domain))
        return f"{place} = {ast.unparse(self.env[name].node)}"

    def _let(self, step: Let, store: bool) -> list[str]:
        dtype = np.dtype(step.dtype)
        if dtype.kind not in "biuf":
            raise Unsupported(f"{step.name} has dtype {dtype}")
        term = self.expr(step.expr)
        node = (ast.Constant(in_kind(term.node.value, dtype))
                if isinstance(term.node, ast.Constant) else term.node)
        old = self.env.get(step.name)
        if old is None:
            local = self._own(step.name, set())
        elif step.name in self.locals and old.dtype == dtype:
            local = old.node.id                     # rebound with the same dtype
        else:
            local = self._fresh(step.name)
        self.env[step.name] = Term(ast.Name(local, ast.Load()), dtype, False)
        self.locals.add(step.name)
        line = f"{local} = {ast.unparse(node)}"
        return [line, self._store(step.name)] if store else [line]

    def _update(self, step: Update, store: bool) -> list[str]:
        target, value = self.env.get(step.name), self.inputs.get(step.name)
        if step.name not in self.locals and (value is None or value.shape != self.region.domain):
            raise ValueError(f"region {self.region.name} updates {step.name}, which is not a "
                             "buffer of the domain's shape")
        term = self.expr(step.expr)
        if step.func in OPERATORS:
            line = ast.unparse(ast.AugAssign(target.node, OPERATORS[step.func](), term.node))
        else:
            new = spell(step.func, [target, term], target.dtype)
            line = f"{ast.unparse(target.node)} = {ast.unparse(new)}"
        return [line, self._store(step.name)] if store else [line]

    def _reduce(self, step: Reduce) -> list[str]:
        domain = self.region.domain
        axes = tuple(sorted({a % len(domain) for a in step.axes}))
        if not any(step.func is f for f in _REDUCTIONS) or not axes:
            raise Unsupported(f"{step.name}: reduction by {step.func} over axes {step.axes}")
        if step.func is not np.add and any(domain[a] == 0 for a in axes):
            raise Unsupported(f"{step.name}: a maximum or minimum over no elements")
        if np.dtype(step.dtype).kind not in "biuf":
            raise Unsupported(f"{step.name} has dtype {step.dtype}")
        fill = ast.unparse(constant(_identity(step.func, step.dtype)))
        dtype = ast.unparse(dtype_expr(step.dtype))
        term = self.expr(step.expr)
        index = (self._index(step.name, step.shape, zero=axes) if step.keepdims
                 else self._index(step.name, step.shape, drop=axes) if step.shape else None)
        start = axes[0]
        if axes == tuple(range(start, len(domain))):     # the innermost axes: a local sum
            acc = self._own(step.name, set(self.inputs))
            self.before[start].append(f"{acc} = {fill}")
            if index is None:
                self.buffers[step.name] = acc            # a scalar, returned as it is
            else:
                buffer = self.buffers[step.name] = self._fresh(f"{step.name}_out")
                self.alloc.append(f"{buffer} = np.empty({step.shape!r}, {dtype})")
                self.after[start].append(f"{_at(buffer, index)} = {acc}")
        else:                                            # accumulate in the output's buffer
            buffer = self._own(step.name, set(self.inputs))
            self.buffers[step.name] = buffer
            self.alloc.append(f"{buffer} = np.full({step.shape!r}, {fill}, {dtype})")
            acc = _at(buffer, index)
        item = ast.unparse(term.node)
        if step.func is np.add:
            return [f"{acc} += {item}"]
        lines = []
        if not isinstance(term.node, (ast.Name, ast.Subscript)):
            lines.append(f"{(local := self._fresh(step.name + '_item'))} = {item}")
            item = local
        op = ">" if step.func is np.maximum else "<"
        return lines + [f"if {item} {op} {acc} or {item} != {item}:   # NaN propagates",
                        f"    {acc} = {item}"]


def _printable(text: str) -> str:
    """``text`` on one line of a comment (as :func:`srcgrad.codegen.module.printable`)."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(text))


class NumbaKernels:
    """The numba :class:`~srcgrad.codegen.regions.KernelEmitter`; ``file_backed``: the
    module must be loaded from a real file, for numba's on-disk cache (``cache=True``)."""

    file_backed = True
    names = ("njit", "prange")
    """The module-level names the prelude binds (a module's own names must avoid them)."""

    def supports(self, func: object) -> bool:
        """:func:`supports`, for the fusion pass."""
        return supports(func)

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
        """The ``@njit`` function for ``region``; raises :class:`Unsupported` for what it
        cannot write exactly."""
        return _Writer(region).write()

    def call(self, region: Region) -> list[str]:
        """``y, d_x = kernel(x, m)``: a 0-d array argument is passed as its scalar
        (``z[()]``); a full reduction is bound as NumPy's scalar (``np.float64(s)``)."""
        finals = _final_kinds(region)
        targets = [v for v in region.outputs if finals.get(v.name) != "input"]
        args = ", ".join(v.name if v.python or v.shape else f"{v.name}[()]"
                         for v in region.inputs)
        call = f"{region.name}({args})"
        scalars = [v for v in targets if not v.shape and finals[v.name] == "reduce"]
        if not targets:
            return [call]
        if len(targets) == 1 and scalars:
            return [f"{targets[0].name} = {ast.unparse(dtype_expr(targets[0].dtype))}({call})"]
        lines = [f"{', '.join(v.name for v in targets)} = {call}"]
        return lines + [f"{v.name} = {ast.unparse(dtype_expr(v.dtype))}({v.name})"
                        for v in scalars]


NUMBA_KERNELS = NumbaKernels()
"""The emitter that ``backend="numba"`` hands its shape-specialised modules."""
