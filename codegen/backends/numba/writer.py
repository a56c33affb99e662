"""The loops of one numba kernel: how a fused region is written as an ``@njit`` function.

The function runs nested loops over the region's domain (the outermost a ``prange`` for large
domains whose reductions allow it) with every step at the innermost level, written with the
user's names so that it reads like the statements it replaces.

Semantics kept from NumPy: float64 arithmetic with no ``fastmath`` flags (NaN and inf behave
as in NumPy; float64 ``exp``, ``expm1``, ``log``, ``log1p``, ``sin``, ``cos`` and ``tanh`` may
be the vectorisable functions of :mod:`~srcgrad.codegen.backends.numba.libm`, the others are libm's;
all within 2 ulp of NumPy's), ``error_model="numpy"`` (division by zero gives inf or nan,
never raises), ``np.max`` and ``np.min`` propagate NaN.  A float reduction along the last
axes stores each row (in blocks of ``ROW`` values) and reduces it with eight partial sums
(four for a maximum or minimum): the loop that computes the values then carries no float
from one element to the next, and LLVM vectorises it.  NumPy adds pairwise, starting with
eight partial sums; other sums add in loop order: the results agree to about 1e-13 relative
on ordinary data.  Signed zeros are NumPy's (sums start at +0.0, as NumPy's do: a sum of
-0.0 alone is +0.0; a maximum or minimum over outer axes takes the later of equal values, as
NumPy's ``np.maximum`` does), except the sign of a zero maximum or minimum along the last
axes, which NumPy's vector loops choose in no fixed order.
"""

from __future__ import annotations

import ast
import math

import numpy as np

from srcgrad.codegen.backends.fusion.regions import (
    Apply,
    Expr,
    Let,
    Note,
    Reduce,
    Ref,
    Region,
    Update,
)
from srcgrad.codegen.backends.numba.exprs import (
    Term,
    Unsupported,
    constant,
    dtype_expr,
    in_kind,
    write_expr,
)
from srcgrad.codegen.backends.numba.libm import HELPERS, LIMITED, NEAR
from srcgrad.codegen.printer import unparse
from srcgrad.runtime.rules.operators import operation

__all__ = ["KernelWriter", "final_kinds", "PARALLEL_MIN", "ROW"]

PARALLEL_MIN = 2 ** 16
"""Domains with at least this many elements run their outermost loop with ``prange``."""
ROW = 1024
"""The block of the last axis whose values a float reduction stores before reducing them."""
BUILTINS = tuple(f.__name__ for f in (range, abs, min))
"""The builtins a kernel calls (a user's name must not hide them)."""


def _start(func: object) -> float | None:
    """What a ``func`` reduction starts from (the ``reduce_from`` hint: 0, -inf for a maximum,
    inf for a minimum); None where the kernels do not reduce by ``func``."""
    prim = operation(func)
    return prim.reduce_from if prim is not None else None


def _summed(func: object) -> bool:
    """Whether a ``func`` reduction adds (``s += v``, which numba's ``prange`` reduces) rather
    than keeping the greatest or least value."""
    start = _start(func)
    return start is not None and not math.isinf(start)


def _identity(func: object, dtype: np.dtype) -> float | int | bool:
    """What a ``func`` reduction starts from: 0, or the least/greatest value of ``dtype``."""
    dtype, start = np.dtype(dtype), _start(func)
    if _summed(func) or dtype.kind == "f":
        return in_kind(start, dtype)
    low = start < 0
    if dtype.kind == "b":
        return not low
    info = np.iinfo(dtype)
    return int(info.min if low else info.max)


def _at(name: str, index: ast.expr) -> str:
    """``name[index]``."""
    return unparse(ast.Subscript(ast.Name(name, ast.Load()), index, ast.Load()))


def final_kinds(region: Region) -> dict[str, str]:
    """What each name holds after the region: ``"let"`` (a buffer of the domain's shape),
    ``"reduce"``, or ``"input"`` (an input, only read or written in place)."""
    kinds = {v.name: "input" for v in region.inputs}
    for step in region.steps:
        if isinstance(step, (Let, Reduce)):
            kinds[step.name] = "let" if isinstance(step, Let) else "reduce"
    return kinds


class KernelWriter:
    """Writes one region's kernel: loops over the domain, steps at the innermost level.
    ``helpers``: the functions of :mod:`~srcgrad.codegen.backends.numba.libm` it may call; where it
    calls one of :data:`~srcgrad.codegen.backends.numba.libm.LIMITED`, the kernel counts the
    arguments
    beyond their range and, if there are any, returns what ``twin`` computes instead."""

    def __init__(self, region: Region, helpers: frozenset[str] = frozenset(),
                 twin: str | None = None, note: str = ""):
        self.region, self.helpers, self.twin, self.note = region, helpers, twin, note
        self.used: set[str] = set()                 # the helpers the kernel calls
        self.pending: list[str] = []               # lines the current step needs first
        self.far: str | None = None                # the count of arguments out of range
        if not region.domain:
            raise ValueError(f"region {region.name}: its domain has no dimensions")
        for value in region.inputs:
            if np.dtype(value.dtype).kind not in "biuf":
                raise Unsupported(f"{value.name} has dtype {value.dtype}")
        self.inputs = {v.name: v for v in region.inputs}
        self.reserved = {"np", "njit", "prange", *BUILTINS, region.name, *HELPERS}
        self.reserved |= {twin} if twin else set()            # the kernel's own names
        self.taken = set(self.inputs) | {s.name for s in region.steps if not isinstance(s, Note)}
        self.taken |= self.reserved
        self.params = [self._own(v.name, set()) for v in region.inputs]
        n = len(region.domain)
        self.loops = [self._fresh(c) for c in ("i", "j", "k", "l")[:n]]
        self.loops += [self._fresh(f"i{a}") for a in range(len(self.loops), n)]
        self.rows: list[str] = []                  # allocations of the blocks of rows
        self.combine: list[str] = []               # after the last axis's loop: rows reduced
        self.block = self._fresh(self.loops[-1] + "b") if region.domain[-1] > ROW and any(
            isinstance(s, Reduce) and self._by_row(s) for s in region.steps) else None
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
                         and all(0 not in axes or (_summed(func) and len(axes) == n)
                                 for func, axes in reduced))   # numba reduces a scalar sum

    def _by_row(self, step: Reduce) -> bool:
        """Whether ``step`` reduces stored rows: a float reduction over the last axes."""
        n = len(self.region.domain)
        axes = sorted({a % n for a in step.axes})
        return np.dtype(step.dtype).kind == "f" and bool(axes) and axes == list(range(axes[0], n))

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
        term = write_expr(e, self.env, self.helpers)
        if self.twin is not None:
            term.node = _Bounded(self).visit(term.node)
        self.used |= {n.id for n in ast.walk(term.node) if isinstance(n, ast.Name)
                      and n.id in HELPERS}
        return term

    def bound(self, call: ast.Call) -> None:
        """Count the argument of ``call`` (a helper exact up to NEAR) if it is beyond:
        bound first to a local where it is an expression."""
        arg = call.args[0]
        if not isinstance(arg, (ast.Name, ast.Subscript, ast.Constant)):
            local = self._fresh(call.func.id.partition("_")[0] + "_arg")
            self.pending.append(f"{local} = {unparse(arg)}")
            arg = call.args[0] = ast.Name(local, ast.Load())
        if self.far is None:
            self.far = self._fresh("far")
        self.pending.append(f"{self.far} += 1 if abs({unparse(arg)}) > {NEAR!r} else 0")

    # the kernel

    def write(self) -> str:
        r, n = self.region, len(self.region.domain)
        kinds = final_kinds(r)
        last = {s.name: k for k, s in enumerate(r.steps) if isinstance(s, (Let, Update))}
        self.before: list[list[str]] = [[] for _ in range(n)]   # before the loop of axis d
        self.after: list[list[str]] = [[] for _ in range(n)]    # after it ends
        self.alloc: list[str] = []
        for name in (v.name for v in r.outputs):
            if kinds.get(name) == "let":
                dtype = [s.dtype for s in r.steps if isinstance(s, Let) and s.name == name][-1]
                self.buffers[name] = self._fresh(f"{name}_out")
                self.alloc.append(f"{self.buffers[name]} = np.empty({r.domain!r}, "
                                  f"{unparse(dtype_expr(dtype))})")
        body: list[str] = []
        for k, step in enumerate(r.steps):
            store = kinds.get(getattr(step, "name", None)) == "let" and last.get(step.name) == k
            if isinstance(step, Note):
                lines = ["# " + _printable(step.text)]
            elif isinstance(step, Let):
                lines = self._let(step, store and step.name in self.buffers)
            elif isinstance(step, Update):
                lines = self._update(step, store and step.name in self.buffers)
            elif isinstance(step, Reduce):
                lines = self._reduce(step)
            else:
                raise TypeError(f"not a step of a region: {step!r}")
            body += self.pending + lines
            self.pending = []
        returned = []
        for value in r.outputs:
            if value.name not in kinds:
                raise ValueError(f"region {r.name}: output {value.name} is never defined")
            if kinds[value.name] != "input":
                returned.append(self.buffers[value.name])
        flags = "cache=True, error_model='numpy'" + (", parallel=True" if self.parallel else "")
        names = ", ".join(v.name for v in r.outputs if kinds[v.name] != "input")
        sums = ("the rows a reduction along the last axis stores are\n    reduced with "
                "partial sums, other sums add in loop order" if self.combine
                else "sums add in loop order")
        lines = [f"@njit({flags})", f"def {r.name}({', '.join(self.params)}):",
                 f'    """{names or "Updates in place"} over {r.domain}{self.note}.', "",
                 f'    float64 as NumPy: no fastmath; {sums}."""']
        lines += ["    " + line for line in self.alloc]
        if self.far:
            lines.append(f"    {self.far} = 0   # arguments of sin and cos beyond {NEAR:.0f}")
        lines += self._loops(body)
        if self.far:
            lines += [f"    if {self.far}:   # where sin_f64 and cos_f64 are not exact",
                      f"        return {self.twin}({', '.join(self.params)})"]
        if returned:
            lines.append(f"    return {', '.join(returned)}")
        return "\n".join(lines)

    def _loops(self, body: list[str]) -> list[str]:
        """The loop nest around ``body``; the last axis in blocks of ROW where rows are
        stored for reductions longer than that."""
        domain, n, lines = self.region.domain, len(self.region.domain), []
        for d in range(n):
            pad = "    " * (d + 1)
            lines += [pad + line for line in self.before[d]]
            loop = "prange" if d == 0 and self.parallel else "range"
            if d == n - 1 and self.block:
                lines.append(f"{pad}for {self.block} in {loop}({-(-domain[d] // ROW)}):")
                pad += "    "
                start = f"{self.block} * {ROW}"
                lines += [pad + line for line in self.rows]
                lines.append(f"{pad}for {self.loops[d]} in range({start}, min({start} + {ROW}, "
                             f"{domain[d]})):")
            else:
                lines += [pad + line for line in self.rows] if d == n - 1 else []
                lines.append(f"{pad}for {self.loops[d]} in {loop}({domain[d]}):")
        inner = n + (1 if self.block else 0)
        lines += ["    " * (inner + 1) + line for line in body]
        lines += ["    " * inner + line for line in self.combine]
        for d in reversed(range(n)):
            lines += ["    " * (d + 1) + line for line in self.after[d]]
        return lines

    def _store(self, name: str) -> str:
        place = _at(self.buffers[name], self._index(name, self.region.domain))
        return f"{place} = {unparse(self.env[name].node)}"

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
        self.env[step.name] = Term(ast.Name(local, ast.Load()), dtype, term.python)
        self.locals.add(step.name)
        line = f"{local} = {unparse(node)}"
        return [line, self._store(step.name)] if store else [line]

    def _update(self, step: Update, store: bool) -> list[str]:
        target, value = self.env.get(step.name), self.inputs.get(step.name)
        if step.name not in self.locals and (value is None or value.shape != self.region.domain):
            raise ValueError(f"region {self.region.name} updates {step.name}, which is not a "
                             "buffer of the domain's shape")
        new = self.expr(Apply(step.func, (Ref(step.name), step.expr), target.dtype))
        if isinstance(new.node, ast.BinOp) and new.node.left is target.node:   # `y op= v`
            line = unparse(ast.AugAssign(target.node, new.node.op, new.node.right))
        else:              # a function, a conditional, or NumPy's rules for Python numbers
            line = f"{unparse(target.node)} = {unparse(new.node)}"
        self.env[step.name] = Term(target.node, target.dtype, new.python)
        return [line, self._store(step.name)] if store else [line]

    def _reduce(self, step: Reduce) -> list[str]:
        domain = self.region.domain
        axes = tuple(sorted({a % len(domain) for a in step.axes}))
        if _start(step.func) is None or not axes:
            raise Unsupported(f"{step.name}: reduction by {step.func} over axes {step.axes}")
        if not _summed(step.func) and any(domain[a] == 0 for a in axes):
            raise Unsupported(f"{step.name}: a maximum or minimum over no elements")
        if np.dtype(step.dtype).kind not in "biuf":
            raise Unsupported(f"{step.name} has dtype {step.dtype}")
        fill = unparse(constant(_identity(step.func, step.dtype)))
        dtype = unparse(dtype_expr(step.dtype))
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
        item = unparse(term.node)
        if self._by_row(step):
            return self._row(step, acc, item)
        if _summed(step.func):
            return [f"{acc} += {item}"]
        lines = []
        if not isinstance(term.node, (ast.Name, ast.Subscript)):
            lines.append(f"{(local := self._fresh(step.name + '_item'))} = {item}")
            item = local
        op = ">=" if _start(step.func) < 0 else "<="          # the later of equal zeros
        return lines + [f"if {item} {op} {acc} or {item} != {item}:   # NaN propagates",
                        f"    {acc} = {item}"]

    def _row(self, step: Reduce, acc: str, item: str) -> list[str]:
        """Store ``item`` in the block of the row; reduce the block into ``acc`` after it."""
        size, block = self.region.domain[-1], self.block
        row = self._fresh(f"{step.name}_row")
        self.rows.append(f"{row} = np.empty({min(size, ROW)}, "
                         f"{unparse(dtype_expr(step.dtype))})")
        count = f"min({ROW}, {size} - {block} * {ROW})" if block else str(size)
        if _summed(step.func):
            self.used.add("sum_row")
            self.combine.append(f"{acc} += sum_row({row}, {count})")
        else:
            func, op = ("max_row", ">") if _start(step.func) < 0 else ("min_row", "<")
            part = self._fresh(f"{step.name}_part")
            self.used.add(func)
            self.combine += [f"{part} = {func}({row}, {count})",
                             f"if {part} {op} {acc} or {part} != {part}:   # NaN propagates",
                             f"    {acc} = {part}"]
        at = f"{self.loops[-1]} - {block} * {ROW}" if block else self.loops[-1]
        return [f"{row}[{at}] = {item}"]


class _Bounded(ast.NodeTransformer):
    """Has the writer count the arguments of the helpers exact only up to NEAR (inner calls
    first)."""

    def __init__(self, writer: KernelWriter):
        self.writer = writer

    def visit_Call(self, node: ast.Call) -> ast.Call:
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id in LIMITED:
            self.writer.bound(node)
        return node


def _printable(text: str) -> str:
    """``text`` on one line of a comment (as :func:`srcgrad.codegen.module.printable`)."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(text))
