"""Loops of a generated main function, as :mod:`srcgrad.codegen.emit.control` emits them, and the
shapes their bodies' values had in every iteration of a first call.

A loop whose body runs through a vjp function reads, in the main function::

    for t in range(trips):
        loop_3, loop_3_back = f_loop_3_body_vjp(t, *loop_3, w, xs)
        loop_3_backs.append(loop_3_back)

and its adjoint, later::

    for loop_3_back_1 in reversed(loop_3_backs):
        _, d_loop_3_0, d_w_sum, _ = loop_3_back_1(d_loop_3 + (d_w_sum,))
        d_loop_3 = (d_loop_3_0,)

:func:`find_loops` finds such pairs.  A shape specialisation's first call runs the generic
module with each body function (and its backward closure) reporting its locals
(:func:`instrument`); :func:`merge` keeps the facts every iteration agrees on, and
:class:`ShapeFacts` carries them to the code generator next to the main function's facts.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["Fact", "LoopSite", "ShapeFacts", "find_loops", "instrument", "merge", "fact_of",
           "python_scalars", "RECORD"]

RECORD = "__srcgrad_loop_locals__"
"""The name the instrumented bodies call with their locals."""

Fact = tuple[tuple[int, ...], np.dtype, str]
"""``(shape, dtype, kind)``; kind: ``"array"`` (an ndarray, 0-d included), ``"scalar"``
(a Python float or bool, or a NumPy scalar: one float64 to numba) or ``"int"``."""


class ShapeFacts(dict):
    """The main function's facts (``{name: (shape, dtype)}``), with ``loops``: for each loop
    body's vjp function, by name, ``{"primal": facts, "backward": facts}`` of the values its
    body and its backward closure held, the same in every iteration of the first call, and
    ``"python"``: the body's Python scalars in its last iteration (:func:`merge`)."""

    loops: dict[str, dict[str, dict[str, Fact]]]

    def __init__(self, facts: dict, loops: dict) -> None:
        super().__init__(facts)
        self.loops = loops


@dataclass
class LoopSite:
    """One loop of the main function and its adjoint: ``body``, the body's vjp function;
    ``forward``/``backward``, the two ``for`` statements; ``state``, ``backs``: the names
    of the carried tuple and of the list of closures."""

    body: str
    forward: ast.For
    backward: ast.For
    state: str
    backs: str


def _name(node: Any) -> str | None:
    return node.id if isinstance(node, ast.Name) else None


def _forward(st: ast.stmt) -> tuple[str, str, str, str] | None:
    """``(body, state, back, backs)`` of a forward loop of the shape above, else None."""
    if not (isinstance(st, ast.For) and _name(st.target) and not st.orelse
            and len(st.body) == 2 and isinstance(st.iter, ast.Call)
            and _name(st.iter.func) == "range" and len(st.iter.args) == 1):
        return None
    call, append = st.body
    if not (isinstance(call, ast.Assign) and len(call.targets) == 1
            and isinstance(call.targets[0], ast.Tuple) and len(call.targets[0].elts) == 2
            and isinstance(call.value, ast.Call) and _name(call.value.func)):
        return None
    state, back = (_name(e) for e in call.targets[0].elts)
    args = call.value.args
    if not (state and back and args and _name(args[0]) == _name(st.target)
            and len(args) >= 2 and isinstance(args[1], ast.Starred)
            and _name(args[1].value) == state and not call.value.keywords):
        return None
    if not (isinstance(append, ast.Expr) and isinstance(append.value, ast.Call)
            and isinstance(append.value.func, ast.Attribute)
            and append.value.func.attr == "append" and _name(append.value.func.value)
            and [_name(a) for a in append.value.args] == [back]):
        return None
    return _name(call.value.func), state, back, _name(append.value.func.value)


def _backward_of(st: ast.stmt, backs: str) -> bool:
    """Whether ``st`` is the adjoint loop over ``reversed(backs)``."""
    return (isinstance(st, ast.For) and _name(st.target) is not None and not st.orelse
            and isinstance(st.iter, ast.Call) and _name(st.iter.func) == "reversed"
            and [_name(a) for a in st.iter.args] == [backs] and len(st.body) == 2)


def find_loops(fn: ast.FunctionDef) -> list[LoopSite]:
    """The loops at the top level of ``fn`` with their adjoint loop (also at the top
    level), each ``backs`` list read by nothing else."""
    sites = []
    for i, st in enumerate(fn.body):
        found = _forward(st)
        if found is None:
            continue
        body, state, _, backs = found
        later = [b for b in fn.body[i + 1:] if _backward_of(b, backs)]
        reads = sum(1 for node in ast.walk(fn) if _name(node) == backs
                    and isinstance(node.ctx, ast.Load))
        if len(later) == 1 and reads == 2:         # the append and the reversed(...)
            sites.append(LoopSite(body, st, later[0], state, backs))
    return sites


def instrument(tree: ast.Module, main: str) -> None:
    """Make each loop body's vjp function of ``tree`` (and its backward closure) report its
    locals before it returns: ``RECORD(body, "primal" | "backward", locals())``."""
    fn = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == main), None)
    if fn is None:
        return
    bodies = {site.body for site in find_loops(fn)}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name in bodies:
            _report(node, node.name, "primal")
            for inner in node.body:
                if isinstance(inner, ast.FunctionDef):
                    _report(inner, node.name, "backward")


def _report(fn: ast.FunctionDef, body: str, part: str) -> None:
    call = ast.parse(f"{RECORD}({body!r}, {part!r}, locals())").body[0]
    out: list[ast.stmt] = []
    for st in fn.body:
        if isinstance(st, ast.Return):
            out.append(call)
        out.append(st)
    fn.body = out


def fact_of(value: Any) -> Fact | None:
    """A value's fact, or None for what a loop kernel does not carry (tuples, closures)."""
    if type(value) is np.ndarray:
        return value.shape, value.dtype, "array"
    if isinstance(value, (bool, np.bool_)):
        return (), np.dtype(bool), "scalar"
    if isinstance(value, (float, np.floating)):
        return (), np.dtype(np.float64) if type(value) is float else value.dtype, "scalar"
    if isinstance(value, (int, np.integer)):
        return (), np.dtype(np.int64), "int"
    return None


def merge(records: list[tuple[str, str, dict[str, Fact | None], frozenset[str]]]
          ) -> dict[str, dict[str, Any]]:
    """``{body: {part: {name: fact}}}`` from the reported facts of locals (:func:`fact_of`
    of each): a name's fact where every report of its body and part holds it with one.
    ``{body: {"python": names}}``: the names that held a Python scalar (float, int, bool,
    not NumPy's) in the body's last report of ``"primal"``, its last iteration: the type a
    carried value leaves the loop with (:func:`python_scalars`)."""
    seen: dict[tuple[str, str], list[dict[str, Fact | None]]] = {}
    last: dict[str, frozenset[str]] = {}
    for body, part, facts, python in records:
        seen.setdefault((body, part), []).append(facts)
        if part == "primal":
            last[body] = python
    out: dict[str, dict[str, Any]] = {}
    for (body, part), runs in seen.items():
        first = runs[0]
        out.setdefault(body, {})[part] = {
            name: fact for name, fact in first.items()
            if fact is not None and all(run.get(name) == fact for run in runs[1:])}
    for body, python in last.items():
        out[body]["python"] = python
    return out


def python_scalars(values: dict[str, Any]) -> frozenset[str]:
    """The names of ``values`` that hold a Python float, int or bool (a loop kernel returns
    those; a NumPy scalar it must make again)."""
    return frozenset(name for name, v in values.items() if type(v) in (float, int, bool))
