"""``srcgrad.explain(f)``: whether ``f`` compiles and, where it does not, every refusal of it
and of the helpers it calls, each with its file, line, construct and what to change.

It builds as ``srcgrad.grad`` and ``srcgrad.jvp`` do (strict, no warning), then looks past the
first refusal (:mod:`srcgrad.tools.diagnose`): ``f`` lowered again going on after each refused
statement, and each user function it calls lowered on its own.  It never calls ``f`` nor any
function of the user's: with example arguments it builds the code for their structures and
classes, as a transform does at its first call, without running it.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from srcgrad.errors import CompileError
from srcgrad.frontend.objects import NeedsArgumentTypes
from srcgrad.frontend.parse import not_plain
from srcgrad.tools.diagnose import Finding, helpers, refusals
from srcgrad.transforms.callables import describe, target
from srcgrad.transforms.grad import Transform
from srcgrad.transforms.jvp import Jvp

__all__ = ["explain", "Explanation", "Refusal"]


@dataclass(frozen=True)
class Refusal:
    """One construct the compiler refuses: where, what, why, and what to change."""

    function: str                    # the function whose source holds it
    filename: str | None
    lineno: int | None
    construct: str | None            # the source text refused
    message: str                     # the refusal's first line
    advice: str | None               # what to change (None: no change is known)
    transforms: tuple[str, ...] = ("grad",)   # the builds that stopped at it (or found it)
    after: int | None = None         # an earlier refused line it may follow from

    @classmethod
    def of(cls, error: CompileError, function: str, transforms: tuple[str, ...] = ("grad",),
           after: int | None = None) -> Refusal:
        where = error.where
        return cls(where.function if where is not None else function, error.filename,
                   error.lineno, error.construct, error.message.split("\n", 1)[0],
                   error.advice, transforms, after)

    @property
    def location(self) -> str:
        return f"{self.filename}:{self.lineno}" if self.filename else "(no line)"

    def __str__(self) -> str:
        text = f"{self.location} in {self.function}"
        if self.construct:
            text += f": {self.construct}"
        text += f"\n    {self.message}"
        if self.advice:
            text += f"\n    to compile it: {self.advice}"
        if "grad" not in self.transforms:
            text += f"\n    (in {', '.join(self.transforms)} only)"
        if self.after is not None:
            text += f"\n    (reads a value of line {self.after}, refused above: it may change " \
                    "once that line compiles)"
        return text


@dataclass(frozen=True)
class Explanation:
    """What :func:`explain` found: ``compiles`` by transform (``grad`` stands for
    ``value_and_grad`` and ``vjp`` too, which build alike), the refusals, and a note where
    the code waits for the arguments' types."""

    function: str
    compiles: dict[str, bool]
    refusals: tuple[Refusal, ...] = ()
    note: str | None = None
    helpers: tuple[str, ...] = field(default=())

    @property
    def compiled(self) -> bool:
        """Whether every transform explained compiles."""
        return all(self.compiles.values())

    def __str__(self) -> str:
        done = [k for k, ok in self.compiles.items() if ok]
        if self.compiled:
            head = f"{self.function} compiles ({', '.join(done)})"
        elif done:
            head = (f"{self.function} compiles for {', '.join(done)}, not for "
                    f"{', '.join(k for k, ok in self.compiles.items() if not ok)}")
        else:
            head = f"{self.function} does not compile: it runs on the eager engine"
        lines = [head + (f"; {self.note}" if self.note else "")]
        if self.refusals:
            lines.append(f"{len(self.refusals)} refusal{'s' * (len(self.refusals) != 1)}:")
            lines += ["  " + str(r).replace("\n", "\n  ") for r in self.refusals]
        return "\n".join(lines)

    def __repr__(self) -> str:
        state = "compiles" if self.compiled else f"{len(self.refusals)} refusals"
        return f"<srcgrad.Explanation of {self.function}: {state}>"


def explain(f: Callable, *args: Any, wrt: Any = 0, **kwargs: Any) -> Explanation:
    """Whether ``f`` compiles (for ``grad`` and ``jvp``) and every refusal of it and of the
    helpers it calls, with file:line, construct and advice.  ``args``/``kwargs``: example
    arguments, for code built at the first call (pytrees, objects); never called."""
    name = describe(f)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        first, note, built = _grad(f, wrt, args, kwargs)
        forward = _jvp(f) if built is not None and not args and not kwargs else False
    compiles = {"grad": first is None and note is None}
    if forward is not False:
        compiles["jvp"] = forward is None
    found: list[Refusal] = []
    if first is not None:
        found = _more(built, wrt) if built is not None else []
        _add(found, Refusal.of(first, name))
    if isinstance(forward, CompileError):
        _add(found, Refusal.of(forward, name, ("jvp",)))
    return Explanation(name, compiles, tuple(_unique(found)), note,
                       tuple(describe(h) for h in helpers(built)) if first and built else ())


def _grad(f: Any, wrt: Any, args: tuple, kwargs: dict
          ) -> tuple[CompileError | None, str | None, Any]:
    """The refusal of ``grad(f, wrt, strict=True)`` built ahead (and for ``args`` where
    given), a note where the code waits for the arguments, and the function compiled."""
    fun, _, refusal = target(f)
    refusal = refusal or not_plain(fun)          # a generator: grad raises TypeError
    if refusal is not None:
        return CompileError(refusal), None, None
    try:
        transform = Transform(f, "grad", wrt, strict=True)
    except CompileError as exc:
        return exc, None, fun
    compiled = transform._compiled_target
    if args or kwargs:
        try:
            transform._compiled_for(transform._bind(args, kwargs))
        except CompileError as exc:
            return exc, None, compiled
        return None, None, compiled
    if getattr(transform, "_deferred", None) is not None:
        return None, ("its code is built at the first call, for the arguments' structures "
                      "and classes: pass example arguments to explain them"), compiled
    return None, None, compiled


def _jvp(f: Any) -> CompileError | None | bool:
    """The refusal of ``jvp(f)`` built ahead with a tangent for every argument; None where
    it compiles, False where it is not built ahead (a transform, ``*args``, objects)."""
    transform = Jvp(f, strict=True)
    if transform._count is None or transform._inner is not None:
        return False
    try:
        transform.compiled(tuple(range(transform._count)), {}, quiet=True)
    except NeedsArgumentTypes:
        return False                       # built at the call, for the arguments' classes
    except CompileError as exc:
        return exc
    return None


def _more(fun: Any, wrt: Any) -> list[Refusal]:
    """The refusals past the first: ``fun`` lowered on past each refused statement, then
    every helper it calls (theirs too), each lowered on its own."""
    found: list[Refusal] = []
    seen: set = set()
    todo = [(fun, _positions(wrt))]
    while todo:
        current, positions = todo.pop(0)
        if current in seen:
            continue
        seen.add(current)
        try:
            findings, last = refusals(current, wrt=positions)
        except CompileError as exc:       # its source cannot be read
            findings, last = [], exc
        except Exception:  # noqa: BLE001 - a diagnosis past a refusal: best effort, no answer
            findings, last = [], None
        findings = findings + ([Finding(last)] if last is not None else [])
        for finding in findings:
            _add(found, Refusal.of(finding.error, describe(current), after=finding.after))
        todo += [(h, None) for h in helpers(current)]
    return found


def _positions(wrt: Any) -> tuple[int, ...] | None:
    items = wrt if isinstance(wrt, (tuple, list)) else (wrt,)
    return tuple(items) if all(isinstance(i, int) for i in items) else None


def _add(found: list[Refusal], refusal: Refusal) -> None:
    """Add ``refusal`` unless the same line already says the same (merging transforms)."""
    for i, other in enumerate(found):
        if (other.filename, other.lineno, other.message) == \
                (refusal.filename, refusal.lineno, refusal.message):
            merged = other.transforms + tuple(t for t in refusal.transforms
                                              if t not in other.transforms)
            found[i] = Refusal(other.function, other.filename, other.lineno, other.construct,
                               other.message, other.advice, merged, other.after)
            return
    found.append(refusal)


def _unique(found: list[Refusal]) -> list[Refusal]:
    out: list[Refusal] = []
    for refusal in found:
        _add(out, refusal)
    return out
