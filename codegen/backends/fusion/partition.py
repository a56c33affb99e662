"""The fusion pass: the regions of a shape-specialised function that one kernel each can run.

:func:`find_regions` reads the top-level body of the main function of a specialised module
(after the render passes) and returns its
:class:`~srcgrad.codegen.backends.fusion.regions.Region`\\ s: runs
of consecutive statements ``name = expr``, ``name op= expr`` and ``name = np.sum(expr,
axis=...)`` (``np.max``, ``np.min``) that are elementwise over one shape, built from values
whose shapes and dtypes the facts of a first call give
(:mod:`~srcgrad.codegen.backends.fusion.exprs`
reads the expressions).  Everything else — a matrix product, a helper, a name whose shape is
not known, a float32 array — is a boundary, left to the array library.

The rules that keep a kernel's meaning the statements' own:

- every value a region defines has its domain's shape (a reduction, its own), and every value
  it reads broadcasts to the domain; nothing in a region reads a reduction of the same region;
- a statement whose value NumPy would make a view or an alias (``a = b``,
  ``np.broadcast_to(b, s)``) stays NumPy's: a kernel's value is a new array;
- an in-place update writes only a buffer the code owns: one a fresh elementwise value made,
  which nothing has since read but elementwise statements (no alias, no call it was passed to);
- a name defined twice in a region is one value per definition (the earlier ones renamed);
  a region never redefines a name it reads from before it;
- a region with fewer than two operations is left as NumPy: a call would save nothing.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from srcgrad.codegen.backends.fusion.exprs import (
    FUSED_DTYPES,
    Translator,
    Typed,
    applications,
    broadcast,
    fused_operator,
    reduction_axes,
    refs,
    renamed,
)
from srcgrad.codegen.backends.fusion.regions import Let, Note, Reduce, Region, Step, Update, Value
from srcgrad.codegen.backends.fusion.scope import Scope, comment_text
from srcgrad.ir import fresh_name
from srcgrad.runtime.rules.operators import operation

__all__ = ["find_regions"]


@dataclass
class _Read:
    """A statement that may fuse: ``kind`` "let", "reduce" or "update" of ``target``."""

    kind: str
    target: str
    value: Typed
    domain: tuple[int, ...]
    dtype: np.dtype
    reads: list[str]
    func: Callable | None = None
    axes: tuple[int, ...] = ()
    keepdims: bool = False
    shape: tuple[int, ...] = ()


@dataclass
class _Open:
    """A region being gathered; names it defines are kept as ``name#version``."""

    domain: tuple[int, ...]
    start: int
    stop: int = 0
    steps: list = field(default_factory=list)
    version: dict[str, int] = field(default_factory=dict)
    reduced: set[str] = field(default_factory=set)
    inputs: dict[str, Value] = field(default_factory=dict)
    updated: list[str] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)
    defined: dict[str, tuple[tuple[int, ...], np.dtype]] = field(default_factory=dict)
    first: str = ""
    work: int = 0

    def accepts(self, s: _Read) -> bool:
        """Whether ``s`` can join: same domain, no read of this region's reductions, and
        no redefinition of a value the region reads from before it."""
        if s.domain != self.domain or any(r in self.reduced for r in s.reads):
            return False
        return s.kind == "update" or (s.target not in self.inputs and (
            s.target not in s.reads or s.target in self.version))


def find_regions(fn: ast.FunctionDef, facts: dict[str, tuple], taken: set[str], *,
                 alias: str = "np", supports: Callable[[Callable], bool] | None = None
                 ) -> list[Region]:
    """The fusable regions of ``fn``'s top-level body, in order.

    ``facts``: ``{name: (shape, dtype)}`` of the function's locals at a first call (dtype
    ``float`` for a Python float); a name without facts has an unknown shape.  ``taken``:
    the module's names, which kernel names (and renamed values) avoid, with ``fn``'s own;
    ``alias``: the array module's name in ``fn``; ``supports``: which NumPy functions the
    backend's kernels can spell (all where None).  ``fn`` is not changed."""
    scope = Scope(fn)
    finder = _Finder(fn, facts, set(taken) | scope.names, scope,
                     Translator(alias, supports, frozenset(scope.stores_anywhere)))
    with np.errstate(all="ignore"):
        return finder.run()


class _Finder:
    def __init__(self, fn: ast.FunctionDef, facts: dict[str, tuple], taken: set[str],
                 scope: Scope, translator: Translator) -> None:
        self.fn, self.facts, self.taken, self.scope = fn, facts, taken, scope
        self.tr = translator
        self.env: dict[str, tuple[tuple[int, ...], np.dtype, bool]] = {}
        for name in [a.arg for a in fn.args.args]:
            if name not in scope.last_store:
                self._learn(name)
        self.owned: dict[str, bool] = {}
        self.regions: list[Region] = []

    def _learn(self, name: str) -> None:
        """Take ``name``'s facts (its value at the end of the first call) as its value now."""
        fact = self.facts.get(name)
        self.env.pop(name, None)
        if fact is None or name in self.scope.volatile:
            return
        shape, dtype = fact
        if dtype is float:
            self.env[name] = ((), np.dtype(np.float64), True)
        elif isinstance(dtype, np.dtype) and dtype in FUSED_DTYPES:
            self.env[name] = (tuple(shape), dtype, False)

    def known(self, name: str) -> tuple[tuple[int, ...], np.dtype, bool] | None:
        return self.env.get(name)

    def run(self) -> list[Region]:
        current: _Open | None = None
        for i, st in enumerate(self.fn.body):
            text = comment_text(st)
            if text is not None:
                if current is not None:
                    current.notes.append(Note(text))
                continue
            read = self._read(st)
            if read is None:
                current = self._close(current)
                self._boundary(i)
                continue
            if current is not None and not current.accepts(read):
                current = self._close(current)
            if current is None:
                current = _Open(read.domain, i, first=read.target)
                if not current.accepts(read):
                    current = None                  # y = y + 1 of an earlier y: NumPy's
            if current is not None:
                self._add(current, read, i)
            self._after(read)
        self._close(current)
        return self.regions

    # ---------------------------------------------------------------- statements
    def _read(self, st: ast.stmt) -> _Read | None:
        """``st`` as a statement a region may hold, or None (a boundary)."""
        if isinstance(st, ast.Assign) and len(st.targets) == 1 \
                and isinstance(st.targets[0], ast.Name):
            target = st.targets[0].id
            if target in self.scope.volatile:
                return None
            reduce = self._reduction(st.value, target)
            if reduce is not False:
                return reduce
            value = self.tr.expr(st.value, self.known)
            if value is None or value.python or value.view or not _spreads(value.shape) \
                    or not self._agrees(target, value.shape, value.dtype):
                return None                   # a view: NumPy's (it aliases what it shows)
            return _Read("let", target, value, value.shape, value.dtype, refs(value.expr))
        if isinstance(st, ast.AugAssign) and isinstance(st.target, ast.Name) \
                and fused_operator(st.op) is not None:
            return self._update(st)
        return None

    def _agrees(self, name: str, shape: tuple[int, ...], dtype: np.dtype) -> bool:
        """Whether what the pass infers of ``name`` is what the first call saw."""
        fact = self.facts.get(name)
        return fact is None or (tuple(fact[0]) == shape and fact[1] == dtype)

    def _reduction(self, node: ast.expr, target: str) -> _Read | None | bool:
        """``np.sum(e, axis=..., keepdims=...)`` (and max, min) of an elementwise ``e``; False
        where ``node`` is no such call."""
        call = self.tr.numpy_object(node.func) if isinstance(node, ast.Call) else None
        prim = operation(call) if call is not None else None
        func = prim.reduces_with if prim is not None else None    # np.add for np.sum ...
        if func is None:
            return False
        keywords = {k.arg: k.value for k in node.keywords}
        if not 1 <= len(node.args) <= 2 or set(keywords) - {"axis", "keepdims"} or (
                len(node.args) == 2 and "axis" in keywords):
            return None
        if self.tr.supports is not None and not self.tr.supports(func):
            return None
        value = self.tr.expr(node.args[0], self.known)
        if value is None or value.python or not _spreads(value.shape):
            return None
        how = reduction_axes(node.args[1] if len(node.args) == 2 else keywords.get("axis"),
                             keywords.get("keepdims"), len(value.shape))
        if how is None:
            return None
        axes, keep = how
        ndim = len(value.shape)
        try:
            dtype = call(np.ones((1,) * ndim, value.dtype), axis=axes, keepdims=keep).dtype
        except Exception:                     # NumPy refuses it
            return None
        shape = tuple(1 if d in axes else n for d, n in enumerate(value.shape)
                      if keep or d not in axes)
        if dtype not in FUSED_DTYPES or not self._agrees(target, shape, dtype):
            return None
        return _Read("reduce", target, value, value.shape, dtype, refs(value.expr), func,
                     axes, keep, shape)

    def _update(self, st: ast.AugAssign) -> _Read | None:
        """``name op= expr`` on a buffer the code owns, of the same dtype after."""
        target = st.target.id
        fact = self.known(target)
        if fact is None or fact[2] or not self.owned.get(target) or not _spreads(fact[0]):
            return None
        value = self.tr.expr(st.value, self.known)
        func = fused_operator(st.op)
        if value is None or (self.tr.supports is not None and not self.tr.supports(func)):
            return None
        if broadcast(fact[0], value.shape) != fact[0]:
            return None
        try:
            dtype = np.asarray(func(np.ones(1, fact[1]), value.stand_in())).dtype
        except Exception:                     # NumPy refuses it
            return None
        if dtype != fact[1]:
            return None
        return _Read("update", target, value, fact[0], dtype, refs(value.expr), func)

    def _after(self, read: _Read) -> None:
        """What a fusable statement tells of the names it defines."""
        if read.kind == "update":
            return
        shape = read.shape if read.kind == "reduce" else read.domain
        self.env[read.target] = (shape, read.dtype, False)
        self.owned[read.target] = read.kind == "let"        # a new array, not a view

    def _boundary(self, i: int) -> None:
        """A statement left to NumPy: what it reads may be kept (no longer owned), and what
        it binds is known only from the facts, and only when it binds its last value."""
        for name in self.scope.loads[i]:
            self.owned[name] = False
        for name in self.scope.stores[i]:
            self.owned[name] = False
            if self.scope.last_store.get(name) == i:
                self._learn(name)
            else:
                self.env.pop(name, None)            # facts are of the last value only

    # ---------------------------------------------------------------- regions
    def _add(self, region: _Open, read: _Read, i: int) -> None:
        region.steps.extend(region.notes)
        region.notes = []
        for name in read.reads + ([read.target] if read.kind == "update" else []):
            if name not in region.version and name not in region.inputs:
                shape, dtype, python = self.env[name]
                region.inputs[name] = Value(name, shape, dtype, python)
        expr = renamed(read.value.expr, lambda n: f"{n}#{region.version[n]}"
                       if n in region.version else n)
        if read.kind == "update":
            if read.target in region.version:
                target = f"{read.target}#{region.version[read.target]}"
            else:
                target = read.target
                if target not in region.updated:
                    region.updated.append(target)
            region.steps.append(Update(target, read.func, expr))
            region.work += 1 + applications(expr)
            region.stop = i + 1
            return
        k = region.version[read.target] = region.version.get(read.target, 0) + 1
        region.defined.pop(read.target, None)             # ordered by the last definition
        if read.kind == "let":
            region.steps.append(Let(f"{read.target}#{k}", expr, read.dtype))
            region.reduced.discard(read.target)
            region.defined[read.target] = (read.domain, read.dtype)
            region.work += applications(expr)
        else:
            region.steps.append(Reduce(f"{read.target}#{k}", read.func, expr, read.axes,
                                       read.keepdims, read.shape, read.dtype))
            region.reduced.add(read.target)
            region.defined[read.target] = (read.shape, read.dtype)
            region.work += 1 + applications(expr)
        region.stop = i + 1

    def _close(self, region: _Open | None) -> None:
        """Keep ``region`` if it is worth a kernel (returns None: no region is open)."""
        if region is None or region.work < 2:
            return None
        names = {}
        for name, last in region.version.items():
            for k in range(1, last):
                names[f"{name}#{k}"] = fresh_name(name, self.taken)
            names[f"{name}#{last}"] = name
        steps = tuple(_renamed(s, names) for s in region.steps)
        outputs = tuple(Value(name, shape, dtype) for name, (shape, dtype)
                        in region.defined.items()
                        if self.scope.read_after(name, region.stop))
        self.regions.append(Region(
            fresh_name(f"{region.first}_kernel", self.taken), region.domain,
            tuple(region.inputs.values()), outputs, tuple(region.updated), steps,
            region.start, region.stop))
        return None


def _spreads(shape: tuple[int, ...]) -> bool:
    """A shape a region can iterate over: at least one dimension, not empty."""
    return len(shape) >= 1 and all(n > 0 for n in shape)


def _renamed(step: Step, names: dict[str, str]) -> Step:
    """A step with its ``name#version`` names made the function's (or fresh) names."""
    def new(name: str) -> str:
        return names.get(name, name)
    if isinstance(step, Let):
        return Let(new(step.name), renamed(step.expr, new), step.dtype)
    if isinstance(step, Reduce):
        return Reduce(new(step.name), step.func, renamed(step.expr, new), step.axes,
                      step.keepdims, step.shape, step.dtype)
    if isinstance(step, Update):
        return Update(new(step.name), step.func, renamed(step.expr, new))
    return step
