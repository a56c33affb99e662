"""Shift invariance: values whose adjoint is exactly zero, found before any code is emitted.

In ``m = np.max(x, axis=1, keepdims=True); s = np.log(np.sum(np.exp(x - m), axis=1,
keepdims=True)) + m`` the result does not change when ``m`` is replaced by ``m + δ``, for any
``δ`` of ``m``'s shape (a logsumexp, a softmax is shift-invariant): the adjoint of ``m`` is
zero, and so is everything its ``max`` would send back to ``x``.  :func:`invariant_values`
proves it for each candidate ``m`` by following, statement by statement, how each value
depends on ``δ`` under the rules srcgrad differentiates with (a non-differentiable input,
such as a comparison's, carries nothing):

- invariant (absent from the table): unchanged;
- ``shift k``: the value plus ``k·δ``;  ``scale k``: the value times ``exp(k·δ)``;
- ``other``: anything else (the proof fails once such a value reaches the result).

``k`` is exact (a Fraction).  Each non-invariant value also carries a frame
(:mod:`srcgrad.analysis.shift_frames`): which of its axes carry which axis of ``δ``, so that a sum
over an axis along which ``δ`` is constant keeps a scale and one along which it varies does
not.  What each primitive does is its ``shift`` hint (see :mod:`srcgrad.runtime.rules`); the
analysis names no operation.  A call, a branch or a loop that reads a value depending on ``δ``
gives ``other``: never entered.

Ranks are not known when compiling, so each value's rank is ``(base, offset)``: the rank of
an earlier value (a parameter, or one of unknown rank) plus an offset, or a known number
(base None).  Anything not followed exactly is refused (the value keeps its adjoint).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

import numpy as np

from srcgrad.analysis.shift_frames import (
    CONSTANT,
    Frame,
    Rank,
    axes_of,
    constant_along,
    drop,
    embed,
    index,
    insert,
    is_int,
    meet,
    own_frame,
)
from srcgrad.ir import Const, Function, Stmt, Var

__all__ = ["invariant_values", "ranks", "State"]

BUDGET = 50_000
"""Statements visited in all, for one function, before the analysis gives up (it only
ever removes work, so giving up is always right)."""

OTHER = "other"


@dataclass(frozen=True)
class State:
    """How a value changes with δ: ``kind`` "shift" (plus ``k·δ``) or "scale" (times
    ``exp(k·δ)``), δ laid out in it as ``frame`` says."""

    kind: str
    k: Fraction
    frame: Frame


# ---------------------------------------------------------------------------------------------
# Ranks.

def ranks(fn: Function) -> dict[str, Rank]:
    """Each value's rank as ``(base, offset)``: a known number (base None), or the unknown
    rank of ``base`` plus ``offset``."""
    out: dict[str, Rank] = {p: (p, 0) for p in fn.params}

    def of(a: Any) -> Rank | None:
        if isinstance(a, Var):
            return out.get(a.name, (a.name, 0))
        try:
            return None, int(np.ndim(a.value))
        except Exception:   # noqa: BLE001 - a constant NumPy cannot size: unknown
            return None

    for st in fn.body:
        if st.target is None:
            continue
        out[st.target] = _rank(st, [of(a) for a in st.args]) or (st.target, 0)
    return out


def _rank(st: Stmt, ins: list[Rank | None]) -> Rank | None:
    if st.kind != "prim" or not ins or None in ins:
        return None
    hint, params = st.fn.shift, st.params
    if st.fn.elementwise or hint == "choice":       # the inputs broadcast together
        ins = [r for r in ins if r != (None, 0)] or [(None, 0)]
        if len({r[0] for r in ins}) == 1:
            return ins[0][0], max(r[1] for r in ins)
        return None
    base, off = ins[0]
    if hint in _REDUCING:
        keep, axes = params.get("keepdims", False), axes_of(params.get("axis"))
        if keep is True or keep is False and params.get("axis") is None:
            return (base, off) if keep else (None, 0)
        return (base, off - len(axes)) if keep is False and axes is not None else None
    if hint in ("drop_axis", "new_axis"):
        axes = axes_of(params.get("axis"))
        step = 1 if hint == "new_axis" else -1
        return None if axes is None else (base, off + step * len(axes))
    if hint == "select":
        index = params.get("index")
        items = index if isinstance(index, tuple) else (index,)
        if all(i is None or i is Ellipsis or isinstance(i, slice) or is_int(i) for i in items):
            return base, off - sum(is_int(i) for i in items) + sum(i is None for i in items)
    return None


# ---------------------------------------------------------------------------------------------
# What each hint does to the states of its inputs (None: invariant).

def _number(a: Any) -> Fraction | None:
    """An operand that is a finite number known when compiling, exactly."""
    v = a.value if isinstance(a, Const) else None
    if is_int(v):
        return Fraction(int(v))
    if isinstance(v, (float, np.floating)) and np.isfinite(v):
        return Fraction(float(v))
    return None


def _made(kind: str, k: Fraction, frame: Frame | None) -> Any:
    if k == 0:
        return None
    return OTHER if frame is None else State(kind, k, frame)


def _add(st: Stmt, a: Any, b: Any, sign: int = 1) -> Any:
    if a is None or b is None:
        s = a or b
        return _made("shift", s.k * (sign if s is b else 1), s.frame) if s.kind == "shift" \
            else OTHER
    if a.kind == b.kind == "shift":
        return _made("shift", a.k + sign * b.k, meet(a.frame, b.frame))
    if a.kind == b.kind == "scale" and a.k == b.k:   # (u ± v) times the same factor
        return _made("scale", a.k, meet(a.frame, b.frame))
    return OTHER


def _multiply(st: Stmt, a: Any, b: Any, sign: int = 1) -> Any:
    if a is not None and b is not None:
        return _made("scale", a.k + sign * b.k, meet(a.frame, b.frame)) \
            if a.kind == b.kind == "scale" else OTHER
    s, const = (a, st.args[1]) if a is not None else (b, st.args[0])
    if s.kind == "scale":
        return _made("scale", s.k * (sign if s is b else 1), s.frame)
    c = _number(const)
    if c is None or (sign < 0 and (s is b or c == 0)):
        return OTHER
    return _made("shift", s.k * c if sign > 0 else s.k / c, s.frame)


def _where(st: Stmt, c: Any, a: Any, b: Any) -> Any:
    """``np.where(c, a, b)`` (``c`` has no gradient): both sides changed alike, or a scaled
    side and a literal zero (zero times any factor)."""
    if a is not None and b is not None:
        same = a.kind == b.kind and a.k == b.k
        return _made(a.kind, a.k, meet(a.frame, b.frame)) if same else OTHER
    s, other = (a, st.args[2]) if b is None else (b, st.args[1])
    return s if s.kind == "scale" and _number(other) == 0 else OTHER


def _unary(st: Stmt, s: State) -> Any:
    hint = st.fn.shift
    if hint == "negated":
        return _made(s.kind, -s.k if s.kind == "shift" else s.k, s.frame)
    wanted, made = {"exponential": ("shift", "scale"), "logarithm": ("scale", "shift")}[hint]
    return _made(made, s.k, s.frame) if s.kind == wanted else OTHER


def _reduce(st: Stmt, s: State) -> Any:
    if s.kind == "shift" and st.fn.shift == "reduce_sum":
        return OTHER                   # the sum of n shifts: n unknown
    keep, axis = st.params.get("keepdims", False), st.params.get("axis")
    if keep not in (True, False):
        return OTHER
    if s.frame == CONSTANT:
        return s
    axes = axes_of(axis)
    if axes is None or not all(constant_along(s.frame, a) for a in axes):
        return OTHER
    return s if keep else _made(s.kind, s.k, drop(s.frame, axes))


def _reshape(st: Stmt, s: State) -> Any:
    """squeeze, expand_dims, and moves or copies of entries (these only of a number δ)."""
    hint, f = st.fn.shift, s.frame
    if f == CONSTANT:
        return s
    axes = axes_of(st.params.get("axis"))
    if hint == "drop_axis" and axes is not None:
        return _made(s.kind, s.k, drop(f, axes))
    if hint == "new_axis" and axes is not None and len(axes) == 1:
        return _made(s.kind, s.k, insert(f, axes[0]))
    return OTHER


def _select(st: Stmt, s: State) -> Any:
    """``x[index]``: kept when the index takes whole axes of δ, or picks along axes where δ
    is constant."""
    return s if s.frame == CONSTANT else _made(s.kind, s.k, index(s.frame,
                                                                  st.params.get("index")))


_REDUCING = ("reduce_sum", "reduce_max", "reduce_mean")
_CANDIDATES = ("reduce_max",)
"""Which values are tried: a max or min, subtracted to keep an exp from overflowing (other
values are seldom invariant, and each try costs a pass over the rest of the body)."""
_BINARY: dict[str, tuple[Callable, int]] = {       # broadcasting: the rule, how many inputs
    "plus": (_add, 2), "minus": (lambda st, a, b: _add(st, a, b, -1), 2),
    "times": (_multiply, 2), "over": (lambda st, a, b: _multiply(st, a, b, -1), 2),
    "choice": (_where, 3)}
_UNARY: dict[str, Callable] = {
    "negated": _unary, "exponential": _unary, "logarithm": _unary, "reduce_sum": _reduce,
    "reduce_max": _reduce, "reduce_mean": _reduce, "drop_axis": _reshape,
    "new_axis": _reshape, "rearrange": _reshape, "select": _select}


def _transfer(st: Stmt, states: dict[str, Any], rank: dict[str, Rank]) -> Any:
    """The state of ``st``'s target from its inputs' (None: invariant)."""
    if st.kind != "prim":
        return OTHER if any(n in states for n in _reads(st)) else None
    ins = [states.get(a.name) if isinstance(a, Var) else None for a in st.args]
    ins = [s if st.fn.vjp(i) is not None else None for i, s in enumerate(ins)]
    if all(s is None for s in ins):
        return None
    hint = st.fn.shift
    if OTHER in ins or hint is None:
        return OTHER
    if hint in _UNARY and len(ins) == 1:
        return _UNARY[hint](st, ins[0])
    if hint in _BINARY and len(ins) == _BINARY[hint][1]:
        aligned = []
        for a, s in zip(st.args, ins):
            frame = None if s is None else embed(s.frame, rank[a.name], rank[st.target])
            if s is not None and frame is None:
                return OTHER
            aligned.append(s and replace(s, frame=frame))
        return _BINARY[hint][0](st, *aligned)
    return OTHER


# ---------------------------------------------------------------------------------------------

def invariant_values(fn: Function, active: frozenset[str]) -> frozenset[str]:
    """The values of ``fn`` (results of primitives) whose adjoint is exactly zero: the result
    of ``fn`` (every output of it) does not change when one of them is shifted.  ``active``:
    the values that have an adjoint so far (the result among them, or nothing is done)."""
    result = fn.result.name if isinstance(fn.result, Var) else None
    if result not in active:
        return frozenset()
    hinted: dict[str, bool] = {}      # a candidate: read only by primitives with a hint
    for st in fn.body:                # (or not through a differentiable input, or dead)
        for i, a in enumerate(st.args):
            if isinstance(a, Var):
                ok = st.target not in active or st.kind == "prim" and (
                    st.fn.shift is not None or st.fn.vjp(i) is None)
                hinted[a.name] = hinted.get(a.name, True) and ok
        for u in st.uses:
            if st.kind not in ("prim", "static", "effect"):
                hinted[u] = False
    rank, budget, found = ranks(fn), [BUDGET], set()
    reads = [_reads(st) for st in fn.body]
    for k, st in enumerate(fn.body):
        if st.kind == "prim" and st.fn.shift in _CANDIDATES and st.target in active and \
                st.target != result and hinted.get(st.target, False) and \
                _vanishes(fn, k, rank, reads, active, result, budget):
            found.add(st.target)
    return frozenset(found)


def _vanishes(fn: Function, k: int, rank: dict[str, Rank], reads: list[list[str]],
              active: frozenset[str], result: str, budget: list[int]) -> bool:
    """Whether the result of ``fn`` is invariant under a shift of statement ``k``'s value."""
    m = fn.body[k]
    frame = own_frame(m.fn.shift in _REDUCING, m.params, rank[m.target])
    states: dict[str, Any] = {m.target: State("shift", Fraction(1), frame)}
    for st, names in zip(fn.body[k + 1:], reads[k + 1:]):
        budget[0] -= 1
        if budget[0] < 0:
            return False
        if st.target is None or not any(n in states for n in names):
            continue
        out = _transfer(st, states, rank)
        if out is OTHER and st.target in active:
            return False
        if out is not None:
            states[st.target] = out
    return result not in states


def _reads(st: Stmt) -> list[str]:
    """The values ``st`` may carry a change of: its inputs (and what a block or call reads;
    a primitive's static parameters and static code carry none)."""
    return [a.name for a in st.args if isinstance(a, Var)] + (
        [] if st.kind in ("prim", "static", "effect") else list(st.uses))
