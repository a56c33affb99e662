"""CuPy kernels for fused regions (``backend="cupy"``).

A :class:`~srcgrad.codegen.backends.fusion.regions.Region` becomes at most one
``cp.ElementwiseKernel`` and
one ``cp.ReductionKernel`` per reduction, each defined at module level with its CUDA C
printed in ``.source`` (the region's notes as ``//`` comments), and the calls that bind the
outputs as the replaced statements did.

- The elementwise kernel computes the values read after the region (its output parameters)
  and the in-place updates (a buffer updated is an output parameter too, read and written
  through CuPy's reference to its element).  Steps nothing outside the kernel needs are left
  out: a value only reduced is never stored.
- A reduction reads what is already in memory once the elementwise kernel has run (an input,
  an output the kernel stored) and recomputes the rest in its map, a ``__device__`` function
  of its preamble, so that a sum of ``exp(x - m)`` that nothing else needs reads ``x`` and
  ``m`` and stores nothing.  A reduction that needs a value the kernel overwrites (an input
  before its update) runs before the kernel, from the inputs alone.
- ``np.max``/``np.min`` reduce with NumPy's NaN propagation (``np_maximum``), from ``-inf``
  and ``inf``; a sum adds in CuPy's tree order (NumPy adds pairwise: the two agree to rounding).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from srcgrad.codegen.backends.cupy.cuda_exprs import (
    CTYPES,
    CWriter,
    Unsupported,
    c_literal,
    reserved,
    supports,
)
from srcgrad.codegen.backends.fusion.regions import (
    Apply,
    Expr,
    KernelEmitter,
    Let,
    Note,
    Reduce,
    Ref,
    Region,
    Update,
)
from srcgrad.runtime.rules.operators import operation

__all__ = ["CUPY_KERNELS", "CupyKernels", "Unsupported", "supports"]


@dataclass(eq=False)
class _Version:
    """One value a name holds in a region: an input, or what a step defines."""

    name: str
    dtype: np.dtype
    kind: str                             # "input", "let", "update" or "reduce"
    step: Let | Update | Reduce | None = None
    deps: list[_Version] = field(default_factory=list)
    prev: _Version | None = None          # for an update: the value it updates
    notes: list[str] = field(default_factory=list)
    order: int = -1

    @property
    def root(self) -> _Version:
        """The value whose buffer (or C variable) an update writes."""
        return self.prev.root if self.prev is not None else self


def _refs(e: Expr) -> list[str]:
    if isinstance(e, Ref):
        return [e.name]
    return [n for a in e.args for n in _refs(a)] if isinstance(e, Apply) else []


class _Plan:
    """What one region's kernels compute, and from what."""

    def __init__(self, region: Region):
        if not region.domain:
            raise ValueError(f"region {region.name}: its domain has no dimensions")
        self.region, self.domain = region, tuple(region.domain)
        self.values = {v.name: v for v in region.inputs}
        self.python_names = set(self.values) | {s.name for s in region.steps
                                                if not isinstance(s, Note)}
        current = {n: _Version(n, np.dtype(v.dtype), "input") for n, v in self.values.items()}
        held = dict(current)        # what each input's name holds after the region's kernels
        self.versions: list[_Version] = []
        notes: list[str] = []
        for k, step in enumerate(region.steps):
            if isinstance(step, Note):
                notes.append(step.text)
                continue
            if not isinstance(step, (Let, Update, Reduce)):
                raise TypeError(f"not a step of a region: {step!r}")
            missing = [n for n in _refs(step.expr) if n not in current]
            if missing:
                raise ValueError(f"region {region.name} reads {missing[0]!r}, never defined")
            deps = [current[n] for n in _refs(step.expr)]
            if isinstance(step, Update):
                prev = current.get(step.name)
                if prev is None or (prev.root.kind == "input"
                                    and step.name not in region.updated) \
                        or prev.root.kind == "reduce":
                    raise ValueError(f"region {region.name} updates {step.name!r}, which is "
                                     "neither an updated input nor a value it defines")
                version = _Version(step.name, prev.dtype, "update", step, deps + [prev], prev)
            else:
                kind = "let" if isinstance(step, Let) else "reduce"
                version = _Version(step.name, np.dtype(step.dtype), kind, step, deps)
            version.notes, version.order, notes = notes, k, []
            if step.name in held and version.root is held[step.name].root:
                held[step.name] = version                   # an input's buffer, updated
            current[step.name] = version
            self.versions.append(version)
        self.trailing_notes = notes
        missing = [v.name for v in region.outputs if v.name not in current]
        if missing:
            raise ValueError(f"region {region.name}: output {missing[0]!r} is never defined")
        self.stored = [current[v.name] for v in region.outputs
                       if current[v.name].root.kind == "let"]     # the kernel's outputs
        self.updated = [held[n] for n in region.updated]
        # what the names hold once the elementwise kernel has run (a name a reduction binds
        # may be bound before it runs: what it held is not counted on)
        bound = {v.name for v in self.stored} | {v.name for v in self.versions
                                                 if v.kind == "reduce"}
        self.available = {held[n] for n in self.values if n not in bound} | set(self.stored)

    def shape(self, version: _Version) -> tuple[int, ...]:
        return tuple(self.values[version.name].shape) if version.kind == "input" \
            else self.domain

    def closure(self, targets: list[_Version], cut: set[_Version]
                ) -> tuple[list[_Version], list[_Version]]:
        """``(params, steps)``: what computing ``targets`` reads (values in ``cut`` and the
        inputs), and the versions it computes, in program order."""
        params: list[_Version] = []
        needed: set[_Version] = set()
        stack = list(reversed(targets))
        while stack:
            v = stack.pop()
            if v in needed or v in params:
                continue
            if v in cut or v.kind == "input":
                params.append(v)
            else:
                needed.add(v)
                stack.extend(reversed(v.deps))
        inputs = list(self.values)
        params.sort(key=lambda v: (0, inputs.index(v.name)) if v.kind == "input"
                    else (1, v.order))
        return params, sorted(needed, key=lambda v: v.order)


class _Names:
    """C names for one kernel: a region name as it is where C allows it, else made fresh."""

    def __init__(self, python_names: set[str]):
        self.python_names, self.taken = python_names, set()

    def claim(self, name: str) -> str:
        base = name if name.isascii() else "v"
        if reserved(base):
            base = "v_" + base.lstrip("_") if base.isascii() else base
        fresh, k = base, 0
        while fresh in self.taken or reserved(fresh) or (fresh != name
                                                         and fresh in self.python_names):
            k += 1
            fresh = f"{base}_{k}"
        self.taken.add(fresh)
        return fresh


def _comment(text: str) -> str:
    """A ``//`` comment line of ``text``: printable, and never spliced with the next line."""
    text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(text)).rstrip()
    return "// " + (text + " ." if text.endswith("\\") else text)


def _pystr(text: str) -> str:
    """``text`` as a Python literal: triple-quoted where it has several lines."""
    if "\n" not in text:
        return repr(text)
    return "'''" + text.replace("\\", "\\\\").replace("'''", "\\'\\'\\'") + "'''"


def _param(cname: str, dtype: np.dtype) -> str:
    if np.dtype(dtype) not in CTYPES:
        raise Unsupported(f"CuPy kernels hold no {np.dtype(dtype)} values")
    return f"{np.dtype(dtype).name} {cname}"


def _dtype_arg(dtype: np.dtype) -> str:
    """``, dtype=cp.bool_`` for ``cp.empty``: nothing for float64, its default."""
    dtype = np.dtype(dtype)
    if dtype == np.float64:
        return ""
    return f", dtype=cp.{'bool_' if dtype.kind == 'b' else dtype.name}"


class _Kernels:
    """The kernels and calls of one region."""

    def __init__(self, region: Region):
        self.plan = plan = _Plan(region)
        self.defs: list[list[str]] = [[], []]       # in the order the calls run
        self.groups: list[list[tuple[list[str], str, set[str]]]] = [[], []]
        for version in (v for v in plan.versions if v.kind == "reduce"):
            self._reduction(version)
        if plan.stored or plan.updated:
            self._elementwise()

    # the elementwise kernel

    def _elementwise(self) -> None:
        plan, r = self.plan, self.plan.region
        names = _Names(plan.python_names)
        targets = [*plan.updated, *plan.stored]
        params, steps = plan.closure(targets, set())
        cvars: dict[_Version, str] = {}
        outs = []
        for v in plan.updated:
            cvars[v.root] = names.claim(v.name)
            outs.append(_param(cvars[v.root], v.dtype))
        for v in plan.stored:
            if v.root not in cvars:
                cvars[v.root] = names.claim(v.name)
                outs.append(_param(cvars[v.root], v.root.dtype))
        ins = [p for p in params if p.root not in cvars]
        for p in ins:
            cvars[p] = names.claim(p.name)
        body, writer = self._body(steps, cvars, names,
                                  {p.name: p for p in ins + plan.updated})
        body += [_comment(n) for n in plan.trailing_notes]
        preamble = writer.preamble()
        source = [f"{r.name} = cp.ElementwiseKernel(",
                  f"    {_pystr(', '.join(_param(cvars[p], p.dtype) for p in ins))},",
                  f"    {_pystr(', '.join(outs))},",
                  "    " + _pystr("\n" + "".join(f"    {line}\n" for line in body) + "    ")
                  + ",",
                  f"    name={r.name!r}" + (f",\n    preamble={_pystr(preamble + chr(10))})"
                                              if preamble else ")")]
        self.defs[0].append("\n".join(source))
        args = [p.name for p in ins]
        explicit = bool(plan.updated) or _broadcast([plan.shape(p) for p in ins]) != plan.domain
        if explicit:
            args += [v.name for v in plan.updated]
            args += [f"cp.empty({plan.domain!r}{_dtype_arg(v.root.dtype)})"
                     for v in plan.stored if v.root not in {u.root for u in plan.updated}]
        produced = [v.name for v in plan.updated] if explicit else []
        produced += [v.name for v in plan.stored]
        call = f"{r.name}({', '.join(args)})"
        self.groups[0].append((produced, call, {p.name for p in ins}
                               | {v.name for v in plan.updated}))

    def _body(self, steps: list[_Version], cvars: dict[_Version, str], names: _Names,
              scope: dict[str, _Version]) -> tuple[list[str], CWriter]:
        """The C statements computing ``steps`` from the values in ``scope`` (by name), and
        the writer, which knows the names that hold afterwards and the preamble needed."""
        writer = CWriter({n: (cvars.get(v.root, cvars.get(v)), v.dtype)
                          for n, v in scope.items()})
        lines = []
        for v in steps:
            lines += [_comment(n) for n in v.notes]
            ctype = CTYPES.get(np.dtype(v.dtype))
            if ctype is None:
                raise Unsupported(f"CuPy kernels hold no {v.dtype} values ({v.name})")
            if v.kind == "update":
                expr = Apply(v.step.func, (Ref(v.name), v.step.expr), v.dtype)
                lines.append(f"{cvars[v.root]} = {writer.expr(expr, ctype)};")
            elif v in cvars:
                lines.append(f"{cvars[v]} = {writer.expr(v.step.expr, ctype)};")
            else:
                cvars[v] = names.claim(v.name)
                lines.append(f"{ctype} {cvars[v]} = {writer.expr(v.step.expr, ctype)};")
            writer.names[v.name] = (cvars[v.root], v.dtype)
        return lines, writer

    # reductions

    def _reduction(self, red: _Version) -> None:
        plan, step = self.plan, red.step
        ctype = CTYPES.get(np.dtype(red.dtype))
        axes = tuple(sorted({a % len(plan.domain) for a in step.axes}))
        prim = operation(step.func)             # its hints: how C writes it, where it starts
        how = prim.cuda if prim is not None and prim.reduce_from is not None else ("",)
        if how[0] == "infix" and ctype is not None:
            reduce_expr, identity = f"a {how[1]} b", c_literal(prim.reduce_from, ctype)
        elif how[0] == "helper" and ctype in ("double", "float"):
            if any(plan.domain[a] == 0 for a in axes):
                raise Unsupported(f"{red.name}: a maximum or minimum over no elements")
            reduce_expr = f"np_{step.func.__name__}(a, b)"
            identity = c_literal(prim.reduce_from, ctype)
        else:
            raise Unsupported(f"{red.name}: a reduction by {step.func} to {red.dtype}")
        params, steps = plan.closure(red.deps, plan.available)
        group = 1
        if any(p not in plan.available for p in params):    # an input the kernel overwrites
            params, steps = plan.closure(red.deps, set())
            group = 0
        if not params:
            raise Unsupported(f"{red.name}: a reduction of constants")
        name = f"{plan.region.name}_{red.name}"
        names = _Names(plan.python_names)
        cvars = {p: names.claim(p.name) for p in params}
        out = names.claim(red.name)
        lines, writer = self._body(steps, dict(cvars), names, {p.name: p for p in params})
        value = writer.expr(step.expr, ctype)
        if how[0] == "helper":
            writer.helpers[(step.func, ctype)] = None
        writer.constants |= "CUDART" in identity
        preamble = writer.preamble()
        if steps or red.notes:
            signature = ", ".join(f"{CTYPES[np.dtype(p.dtype)]} {cvars[p]}" for p in params)
            function = [f"__device__ {ctype} {name}_map({signature}) {{",
                        *("    " + line for line in [*map(_comment, red.notes), *lines,
                                                     f"return {value};"]), "}"]
            preamble = "\n".join(filter(None, [preamble, "\n".join(function)]))
            map_expr = f"{name}_map({', '.join(cvars[p] for p in params)})"
        else:
            map_expr = value
        source = [f"{name} = cp.ReductionKernel(",
                  f"    {_pystr(', '.join(_param(cvars[p], p.dtype) for p in params))},",
                  f"    {_pystr(_param(out, red.dtype))},",
                  f"    map_expr={map_expr!r}, reduce_expr={reduce_expr!r},",
                  f"    post_map_expr={out + ' = a'!r}, identity={identity!r},",
                  f"    name={name!r}" + (f",\n    preamble={_pystr(preamble + chr(10))})"
                                           if preamble else ")")]
        self.defs[group].append("\n".join(source))
        args = [p.name for p in params]
        if _broadcast([plan.shape(p) for p in params]) != plan.domain:
            first = args[0] if plan.shape(params[0]) else f"cp.asarray({args[0]})"
            args[0] = f"cp.broadcast_to({first}, {plan.domain!r})"
        if axes != tuple(range(len(plan.domain))) or step.keepdims:
            args.append(f"axis={axes[0] if len(axes) == 1 else axes!r}")
        if step.keepdims:
            args.append("keepdims=True")
        call = f"{name}({', '.join(args)})"
        self.groups[group].append(([red.name], call, {p.name for p in params}))

    # calls

    def calls(self) -> list[str]:
        """Each group's calls as statements, or as one tuple assignment where a call reads
        a name an earlier call of its group binds (all read before any is bound)."""
        lines = []
        for group in self.groups:
            bound: set[str] = set()
            clash = False
            for targets, _, reads in group:
                clash |= bool(reads & bound)
                bound |= set(targets)
            if clash:
                left = ", ".join(t[0] if len(t) == 1 else f"({', '.join(t)})"
                                 for t, _, _ in group)
                lines.append(f"{left} = {', '.join(call for _, call, _ in group)}")
            else:
                lines += [f"{', '.join(t)} = {call}" for t, call, _ in group]
        return lines or ["pass"]


def _broadcast(shapes: list[tuple[int, ...]]) -> tuple[int, ...]:
    return tuple(np.broadcast_shapes(*shapes)) if shapes else ()


class CupyKernels(KernelEmitter):
    """The CuPy :class:`~srcgrad.codegen.backends.fusion.regions.KernelEmitter`:
    ``cp.ElementwiseKernel``
    and ``cp.ReductionKernel`` objects built at module level, called in the function."""

    def prelude(self) -> list[str]:
        """Nothing: the module's own ``import cupy as cp`` is all the kernels need."""
        return []

    def kernel(self, region: Region) -> str:
        """The kernels' definitions; raises :class:`Unsupported` for what a kernel cannot
        write with NumPy's meaning."""
        return "\n\n".join(sum(_Kernels(region).defs, [])) + "\n"

    def call(self, region: Region) -> list[str]:
        """The statements replacing the region: ``t = region_1(x, m)``, then
        ``s = region_1_s(t, axis=1)``."""
        return _Kernels(region).calls()

    @staticmethod
    def supports(func: object, dtype: np.dtype | None = None) -> bool:
        return supports(func, dtype)


CUPY_KERNELS = CupyKernels()
"""The emitter that ``backend="cupy"`` hands its shape-specialised modules."""
