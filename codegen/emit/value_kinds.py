"""Which values of a lowered function are floats for certain, and which integers or bools.

The activity analysis follows the dataflow, not dtypes: a loop counter or a jump flag that an
active loop carries, or that a block hands on, counts as active.  The gradient of an integer
is None (``match_input``, ``zero_gradient``), and adding or scaling that None fails.  This
pass finds, without running anything, the values that are integers or bools on every path
(int and bool constants, comparisons, integer arithmetic of integers, a branch's or loop's
output that is one whatever runs): those get no adjoint at all, which is exact, as nothing of
an integer's value can change with a float input.  It also finds the values that are floats
for certain, whose adjoints are never None; the adjoint of any other value, when it may be
None, is made a zero before arithmetic reads it (:mod:`srcgrad.codegen.emit.accumulate`).

A block's parameters take the kinds of the arguments of its branch or loop (a loop's carried
values to a fixed point), so each block's kinds are known by the time it is emitted:
:func:`function_kinds` records them for the emitter of the block.

The reverse emitter also knows some values' shapes and dtypes (``facts``): those a first call
reported to a specialisation, and those :func:`value_facts` derives from them and from
``float()``, which rules fold into the code they print.
"""

from __future__ import annotations

import ast
import weakref
from typing import Any

import numpy as np

from srcgrad.ir import Const, Function, Stmt, Var

__all__ = ["FLOAT", "INT", "function_kinds", "block_params", "dtype_kind", "value_facts"]

FLOAT, INT = "float", "int"

_BLOCK_PARAMS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
"""Each block's parameter kinds, as its branch or loop was last analysed."""


def block_params(block: Function) -> dict[str, str] | None:
    """The kinds of a block's parameters as its enclosing function's analysis found them
    (None: the block has not been seen, or is not a block)."""
    return _BLOCK_PARAMS.get(block)


def function_kinds(fn: Function, params: dict[str, str]) -> dict[str, str]:
    """``name -> FLOAT | INT`` for the values of ``fn`` whose kind is certain, given the kinds
    of its parameters (``params``); the blocks inside get theirs recorded."""
    known = {p: k for p, k in params.items() if k is not None}
    outputs: dict[str, list] = {}            # a tuple-valued statement: its items' kinds
    dtypes: dict[str, str] = {}              # ``d = x.dtype``: the kind of that dtype
    for st in fn.body:
        if st.target is None:
            continue
        if st.kind == "prim":
            kind = _prim_kind(st, known, dtypes)
            if kind is not None:
                known[st.target] = kind
        elif st.kind == "static":
            kind = _dtype_of(st.expr, known)
            if kind is not None:
                dtypes[st.target] = kind
        elif st.kind == "branch":
            outputs[st.target] = _branch(st, known)
        elif st.kind == "loop":
            outputs[st.target] = _loop(st, known)
        elif st.kind == "unpack" and isinstance(st.args[0], Var):
            items = outputs.get(st.args[0].name)
            index = st.params.get("index")
            if items is not None and isinstance(index, int) and index < len(items) and \
                    items[index] is not None:
                known[st.target] = items[index]
    return known


def dtype_kind(dtype: Any) -> str | None:
    """FLOAT or INT for a dtype (``float``, ``np.int32``, ``"f4"``), None for any other."""
    try:
        kind = np.dtype(dtype).kind
    except TypeError:
        return None
    return FLOAT if kind in "fc" else INT if kind in "biu" else None


def _const_kind(value: Any) -> str | None:
    if isinstance(value, (bool, int, np.integer, np.bool_)):
        return INT
    if isinstance(value, (float, complex, np.floating, np.complexfloating)):
        return FLOAT
    return dtype_kind(value.dtype) if isinstance(value, np.ndarray) else None


def _kind(a: Any, known: dict[str, str]) -> str | None:
    if isinstance(a, Var):
        return known.get(a.name)
    if isinstance(a, Const):
        return _const_kind(a.value)
    return None


def _dtype_of(expr: Any, known: dict[str, str]) -> str | None:
    """The kind of ``x.dtype`` or ``np.asarray(x).dtype`` for a value ``x`` of known kind."""
    if not (isinstance(expr, ast.Attribute) and expr.attr == "dtype"):
        return None
    value = expr.value
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and \
            value.func.attr == "asarray" and len(value.args) == 1 and not value.keywords:
        value = value.args[0]
    return known.get(value.id) if isinstance(value, ast.Name) else None


def _prim_kind(st: Stmt, known: dict[str, str], dtypes: dict[str, str]) -> str | None:
    rule = getattr(st.fn, "dtype_rule", None)
    kinds = [_kind(a, known) for a in st.args]
    if rule in ("bool", "index"):
        return INT
    if rule == "float":
        return FLOAT
    if rule == "same":
        return kinds[0] if kinds else None
    if rule == "keep":                        # a conversion: the dtype it is given
        return _converted(st, kinds, dtypes)
    if rule == "promote":
        if FLOAT in kinds:          # (a float written into an int array stays int: only a
            return FLOAT            # zeroing of a None gradient is left out for it)
        if kinds and all(k == INT for k in kinds) and st.fn.int_closed:
            return INT
    return None


def _converted(st: Stmt, kinds: list, dtypes: dict[str, str]) -> str | None:
    """The kind of ``x.astype(dtype)``, ``np.float64(x)``, ``np.full(shape, v, dtype)``."""
    if getattr(st.fn, "makes_float", False):
        return FLOAT
    dtype = st.params.get("dtype")
    if isinstance(dtype, Const):
        dtype = dtype.value
    if dtype is None:             # np.full follows its value; np.linspace is never integer
        if st.fn.default_kind == "float":
            return FLOAT
        return kinds[0] if st.fn.default_kind == "value" and kinds else None
    if isinstance(dtype, Var):
        return dtypes.get(dtype.name)
    return dtype_kind(dtype)


def _returned(block: Function, known: dict[str, str], count: int) -> list:
    """The kinds of the items a block returns (its result is a pack of them)."""
    made = next((s for s in block.body if isinstance(block.result, Var)
                 and s.target == block.result.name and s.kind == "pack"), None)
    if made is None:
        return [None] * count
    items = [_kind(a, known) for a in made.args]
    return (items + [None] * count)[:count]


def _meet(a: list, b: list) -> list:
    return [x if x == y else None for x, y in zip(a, b)]


def _branch(st: Stmt, known: dict[str, str]) -> list:
    count = st.params.get("outputs", 0)
    args = [_kind(a, known) for a in st.args[1:]]
    result: list | None = None
    for block in st.fn:
        params = dict(zip(block.params, args))
        _BLOCK_PARAMS[block] = params
        items = _returned(block, function_kinds(block, params), count)
        result = items if result is None else _meet(result, items)
    return result or []


def _loop(st: Stmt, known: dict[str, str]) -> list:
    """The kinds of a loop's outputs: a carried value keeps its kind when the body, given
    it, returns the same kind (iterated to a fixed point: kinds are only ever dropped)."""
    body, test = st.fn
    n = st.params["carried"]
    carried = [_kind(a, known) for a in st.args[:n]]
    consts = [_kind(a, known) for a in st.args[n:]]
    while True:
        params = dict(zip(body.params, [INT, *carried, *consts]))
        returned = _returned(body, function_kinds(body, params), n)
        settled = _meet(carried, returned)
        if settled == carried:
            break
        carried = settled
    _BLOCK_PARAMS[body] = params
    if test is not None:
        _BLOCK_PARAMS[test] = params
    return carried + ([INT] if st.params.get("stops") else [])


def value_facts(fn: Function, facts: dict[str, tuple] | None) -> dict[str, tuple]:
    """The shapes and dtypes known of ``fn``'s values: ``facts`` (a specialisation's, from a
    first call) with the Python floats, and, when specialised, what elementwise primitives
    make of known values."""
    known = {**_python_floats(fn), **(facts or {})}
    if facts:
        _elementwise_facts(fn, known)
    return known


def _python_floats(fn: Function) -> dict[str, tuple]:
    """What ``float()`` makes, and elementwise primitives of it and of numbers: a value of
    shape ``()`` that may be a Python float, which has no ``.shape``; the fact lets rules
    fold its shape in (known when specialised, exact in the generic code too)."""
    facts: dict[str, tuple] = {}
    for st in fn.body:
        if st.kind != "prim":
            continue
        if st.fn.makes_float:
            facts[st.target] = ((), float)
        elif st.fn.elementwise and any(isinstance(a, Var) for a in st.args) and all(
                a.name in facts if isinstance(a, Var) else
                isinstance(a, Const) and isinstance(a.value, (int, float)) for a in st.args):
            facts[st.target] = ((), float)
    return facts


def _elementwise_facts(fn: Function, facts: dict[str, tuple]) -> None:
    """Complete a specialisation's facts (in place) with the values a first call did not
    report (temporaries the generic code inlined) that elementwise primitives make of known
    values: their shapes broadcast, their dtype NumPy's for one element of each."""
    for st in fn.body:
        if st.kind != "prim" or not st.fn.elementwise or st.target in facts:
            continue
        shapes, ones = [], []
        for a in st.args:
            if isinstance(a, Const) and type(a.value) in (int, float, bool):
                shapes.append(())
                ones.append(a.value)
            elif isinstance(a, Var) and a.name in facts:
                shape, dtype = facts[a.name]
                shapes.append(shape)
                ones.append(1.0 if dtype is float else np.ones((), dtype))
            else:
                break
        else:
            try:
                with np.errstate(all="ignore"):
                    one = st.fn.fn(*ones, **st.params)
                facts[st.target] = (np.broadcast_shapes(*shapes),
                                    float if type(one) is float else np.asarray(one).dtype)
            except (TypeError, ValueError):
                continue
