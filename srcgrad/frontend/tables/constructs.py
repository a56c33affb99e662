"""What Python and NumPy constructs lower to: operators, ``math``, methods, special calls.

The tables here are read by the lowering (:mod:`srcgrad.frontend.lower`,
:mod:`srcgrad.frontend.primitives`, :mod:`srcgrad.frontend.calls`);
the calls lowered to several primitives (:mod:`srcgrad.frontend.tables.arrays`) and those carrying a
value (:mod:`srcgrad.frontend.tables.values`) join ``SPECIAL_CALLS`` and ``VALUE_CALLS`` from their
modules.
"""

from __future__ import annotations

import ast
import builtins
import math
from typing import Any

import numpy as np

from srcgrad.frontend.callees import bind_call
from srcgrad.frontend.tables.arrays import ARRAY_CALLS, SpecialCalls
from srcgrad.frontend.tables.guards import GUARDS
from srcgrad.frontend.tables.sampling import SAMPLING_CALLS
from srcgrad.frontend.tables.values import VALUE_CALLS, array_options, cast_value, lower_astype
from srcgrad.ir import Const, Pack, Var, const_expr, constant, value_expr
from srcgrad.runtime.rules import stop_gradient
from srcgrad.runtime.rules.elementwise import MATH_PRIMITIVES
from srcgrad.runtime.rules.linalg import sublist_subscripts
from srcgrad.runtime.rules.lists import array_list
from srcgrad.runtime.rules.operators import OPERATORS
from srcgrad.runtime.rules.primitives import NO_GRADIENT, PRIMITIVES, Primitive
from srcgrad.runtime.rules.solvers import result_parts

__all__ = ["BINOPS", "UNARYOPS", "CMPOPS", "MATH", "BUILTIN_MATH", "EFFECTS", "NONDIFF_CALLS",
           "STATIC_WHEN_CONSTANT", "METHODS", "SPECIAL_CALLS", "VALUE_CALLS", "STOP_GRADIENT",
           "lookup", "constant", "const_expr", "value_expr", "name_of", "binop_name",
           "call_name", "method_special"]

# Python's operators as the rule table's primitives compute them (NumPy's ``~`` has none)
_RULED = {op: p.fn for op, p in OPERATORS.items() if PRIMITIVES.get(p.name) is p}
BINOPS = {op: f for op, f in _RULED.items() if issubclass(op, ast.operator)}
UNARYOPS = {op: f for op, f in _RULED.items() if issubclass(op, ast.unaryop)}
UNARYOPS.update({ast.Not: np.logical_not, ast.Invert: np.logical_not})   # negated masks
CMPOPS = {op: f for op, f in _RULED.items() if issubclass(op, ast.cmpop)}
_WORDS = {np.add: "plus", np.subtract: "minus", np.multiply: "times", np.divide: "over",
          np.matmul: "at", np.power: "pow", np.remainder: "mod", np.floor_divide: "div"}

# math functions run as Python runs them (their errors, a float), with NumPy's rules.
MATH = {**MATH_PRIMITIVES, math.floor: np.floor, math.ceil: np.ceil}
BUILTIN_MATH = {builtins.abs: np.abs, builtins.pow: np.power}
EFFECTS = {builtins.print}

_SHAPE = "only the shape, size or dtype of its arguments"
_CONSTANT = "piecewise constant: its derivative is zero wherever it exists"
NONDIFF_CALLS: dict[Any, str] = {
    builtins.len: _SHAPE, builtins.isinstance: "a type test", builtins.issubclass: "a type test",
    builtins.type: "a type", builtins.callable: "a type test", builtins.id: "an identity",
    builtins.range: "integers", builtins.int: _CONSTANT, builtins.bool: _CONSTANT,
    builtins.round: _CONSTANT, builtins.str: "text", builtins.repr: "text",
    builtins.format: "text", builtins.hash: "a hash", builtins.any: "a truth value",
    builtins.all: "a truth value",
    np.shape: _SHAPE, np.ndim: _SHAPE, np.size: _SHAPE, np.result_type: "a dtype",
    np.dtype: "a dtype", np.can_cast: "a dtype test", np.promote_types: "a dtype",
    np.zeros: "a constant array", np.ones: "a constant array", np.empty: "a constant array",
    np.eye: "a constant array", np.identity: "a constant array",
    np.zeros_like: _SHAPE, np.ones_like: _SHAPE, np.empty_like: _SHAPE,
    np.int8: _CONSTANT, np.int16: _CONSTANT, np.int32: _CONSTANT, np.int64: _CONSTANT,
    np.uint8: _CONSTANT, np.uint16: _CONSTANT, np.uint32: _CONSTANT, np.uint64: _CONSTANT,
    np.intp: _CONSTANT, np.bool_: _CONSTANT,
    math.isnan: "a test", math.isinf: "a test", math.isfinite: "a test",
    math.isclose: "a test", math.trunc: _CONSTANT,
    **NO_GRADIENT,                  # truth values, indices, rounding: the rule table's list
    np.isscalar: "a type test", np.issubdtype: "a dtype test", np.finfo: "a dtype's limits",
    np.iinfo: "a dtype's limits",
    np.tril_indices_from: _SHAPE, np.triu_indices_from: _SHAPE,
    np.diag_indices_from: _SHAPE,
    **GUARDS,                       # the helpers of compiled try and with blocks
}
"""Calls whose result provably carries no gradient, whatever their arguments (→ why): printed
as plain Python, never differentiated."""

STATIC_WHEN_CONSTANT: set[Any] = {
    builtins.enumerate, builtins.zip, builtins.dict, builtins.set, builtins.frozenset,
    builtins.sorted, builtins.reversed, builtins.map, builtins.filter, builtins.divmod,
    builtins.slice, builtins.chr, builtins.ord, builtins.complex, builtins.iter, builtins.next,
    np.arange, np.meshgrid, np.tri, np.indices, np.tril_indices, np.triu_indices,
    np.diag_indices, np.mask_indices, np.unravel_index, np.ravel_multi_index,
}
"""Calls that are plain Python when no argument carries a gradient, and refused otherwise (a
gradient could flow through them, which srcgrad does not model).  So are classes, random draws
(``np.random.*``, Generator methods) and calls of static values."""

# array methods: name -> (NumPy function, takes its arguments as one shape/axes tuple)
METHODS: dict[str, tuple[Any, bool]] = {
    "sum": (np.sum, False), "mean": (np.mean, False), "max": (np.max, False),
    "min": (np.min, False), "prod": (np.prod, False), "std": (np.std, False),
    "var": (np.var, False), "cumsum": (np.cumsum, False), "reshape": (np.reshape, True),
    "transpose": (np.transpose, True), "ravel": (np.ravel, False),
    "flatten": (np.ravel, False), "squeeze": (np.squeeze, False),
    "swapaxes": (np.swapaxes, False), "dot": (np.dot, False), "clip": (np.clip, False),
    "repeat": (np.repeat, False), "take": (np.take, False), "trace": (np.trace, False),
    "argmax": (np.argmax, False), "argmin": (np.argmin, False), "copy": (np.copy, False),
    "all": (np.all, False), "any": (np.any, False), "argsort": (np.argsort, False),
    "cumprod": (np.cumprod, False), "diagonal": (np.diagonal, False),
    "round": (np.round, False), "nonzero": (np.nonzero, False),
    "argpartition": (np.argpartition, False), "searchsorted": (np.searchsorted, False),
    "astype": (None, False), "item": (None, False),
}


def lookup(name: str) -> Primitive:
    return PRIMITIVES[name]


STOP_GRADIENT = stop_gradient


def name_of(value: Any, word: str) -> str:
    if isinstance(value, Var) and len(value.name) <= 12:
        return f"{value.name}_{word}"
    return word


def binop_name(a: Any, b: Any, fn: Any) -> str:
    word = _WORDS.get(fn, "op")
    left = a.name if isinstance(a, Var) else _literal_name(a)
    right = b.name if isinstance(b, Var) else _literal_name(b)
    if left and right and len(left) + len(right) <= 14:
        return f"{left}_{word}_{right}"
    return word


def _literal_name(c: Any) -> str | None:
    v = getattr(c, "value", None)
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return str(v).replace(".", "_").replace("-", "neg")
    return None


def call_name(prim: Primitive, inputs: list) -> str:
    word = prim.name if len(prim.name) <= 10 else prim.name.split("_")[0]
    first = inputs[0] if inputs else None
    if isinstance(first, Var) and len(first.name) <= 10:
        return f"{word}_{first.name}"
    return word


def method_special(lowerer: Any, name: str, receiver: Var, args: list, kwargs: dict,
                   node: ast.AST) -> Any:
    if name == "astype":
        if not args and "dtype" not in kwargs:
            raise lowerer.error("x.astype() needs a dtype", node)
        extra = [k for k in kwargs if k != "dtype"] + (["order, casting, ..."] if len(args) > 1
                                                       else [])
        if extra and not (extra == ["copy"] and lowerer.prims.param(kwargs["copy"]) is True):
            raise lowerer.error(f"x.astype(..., {extra[0]}=...) is not compiled: only the dtype "
                                "is modelled (copy=False may return the array itself)", node)
        dtype = args[0] if args else lowerer.prims.param(kwargs["dtype"])
        return lower_astype(lowerer, receiver, dtype, node)
    if name == "item":
        if args or kwargs:
            raise lowerer.error("x.item(index) is not compiled; index the array instead", node)
        return lowerer.prims.prim(PRIMITIVES["item"], [receiver], {}, f"{receiver.name}_item", node)
    raise lowerer.error(f"srcgrad cannot compile the array method .{name}()", node)


def _join(prim_name: str) -> Any:
    def lower_join(lowerer: Any, args: list, kwargs: dict, node: ast.AST) -> Any:
        seq = args[0] if args else None
        axis = lowerer.prims.param(kwargs["axis"]) if "axis" in kwargs else (
            args[1].value if len(args) > 1 else 0)
        if axis is None and prim_name == "concatenate" and isinstance(seq, Pack):
            seq = Pack([lowerer.prims.numpy_call(np.ravel, [a], {}, node) for a in seq.items])
            axis = 0                              # NumPy flattens every input first
        if lowerer.lists.is_runtime_list(seq):
            return lowerer.lists.join(prim_name, seq, axis, node)
        if not isinstance(seq, Pack):
            raise lowerer.error(f"np.{prim_name} is compiled on a list or a tuple of arrays",
                                node)
        return lowerer.prims.prim(PRIMITIVES[prim_name], seq.items, {"axis": axis}, prim_name, node)
    return lower_join


def _einsum(lowerer: Any, args: list, kwargs: dict, node: ast.AST) -> Any:
    """``np.einsum`` with a literal subscripts string or literal sublists; ``optimize``
    changes the order of the work, never the value, so it is accepted and dropped."""
    for key in kwargs:
        if key != "optimize":
            raise lowerer.error(f"np.einsum(..., {key}=...) is not compiled", node)
    if args and isinstance(args[0], Const) and isinstance(args[0].value, str):
        subscripts, operands = args[0].value, args[1:]
    else:
        spelled = list(args)
        for k in [*range(1, len(args), 2), *([len(args) - 1] if len(args) % 2 else [])]:
            spelled[k] = _sublist(args[k])
        if len(args) < 2 or any(spelled[k] is None for k in range(1, len(args), 2)) or (
                len(args) % 2 and spelled[-1] is None):
            raise lowerer.error("np.einsum is compiled with a literal subscripts string or "
                                "literal sublists of ints", node)
        subscripts, operands = sublist_subscripts(tuple(spelled))
    return lowerer.prims.prim(PRIMITIVES["einsum"], operands, {"subscripts": subscripts}, "einsum",
                              node)


def _sublist(value: Any) -> list | None:
    """A literal einsum sublist (``[0, 1]``, ``[Ellipsis, 1]``) as a list, else None."""
    items = value.items if isinstance(value, Pack) else None
    if items is None and isinstance(value, Const) and isinstance(value.value, (list, tuple)):
        items = [Const(v) for v in value.value]
    if items is None:
        return None
    out = [item.value if isinstance(item, Const) else None for item in items]
    ok = all(v is Ellipsis or isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 52
             for v in out)
    return out if ok else None


def _static_params(lowerer: Any, fun: Any, items: list, node: ast.AST) -> dict:
    """Keyword parameters of a call, as Python values (a run-time value is refused)."""
    params = {}
    for name, value in items:
        if isinstance(value, ast.AST):
            value = lowerer.prims.param(value)
        if isinstance(value, Const):
            value = value.value
        if isinstance(value, Var):
            raise lowerer.error(f"np.linalg.{fun.__name__}(): the argument {name!r} must be a "
                                "literal or a named constant", node)
        params[name] = value
    return params


def _tuple_result(fun: Any, nin: int) -> Any:
    """A NumPy function that returns a tuple (``eigh``, ``svd``, ``qr``, ``slogdet``,
    ``lstsq``): one primitive per element, packed as a tuple."""
    def lower(lowerer: Any, args: list, kwargs: dict, node: ast.AST) -> Any:
        items = list(bind_call(lowerer, fun, args, kwargs, node,
                               f"np.linalg.{fun.__name__}").items())
        try:
            parts, params, is_tuple = result_parts(fun, _static_params(lowerer, fun,
                                                                       items[nin:], node))
        except ValueError as exc:
            raise lowerer.error(str(exc), node) from None
        inputs = [value for _, value in items[:nin]]
        values = [lowerer.prims.prim(p, inputs, dict(params), p.name, node) for p in parts]
        return Pack(values) if is_tuple else values[0]
    return lower


def _multi_dot(lowerer: Any, args: list, kwargs: dict, node: ast.AST) -> Any:
    if kwargs or len(args) != 1 or not isinstance(args[0], Pack):
        raise lowerer.error("np.linalg.multi_dot is compiled on a list or tuple literal of "
                            "arrays, without out=", node)
    return lowerer.prims.prim(PRIMITIVES["multi_dot"], args[0].items, {}, "multi_dot", node)


def _polyval(lowerer: Any, args: list, kwargs: dict, node: ast.AST) -> Any:
    """``np.polyval(p, x)``; coefficients given as a list are stacked into an array first."""
    if kwargs or len(args) != 2:
        raise lowerer.error("np.polyval is compiled as np.polyval(p, x)", node)
    p, x = args
    if isinstance(p, Pack) and lowerer.statics.is_static(p):
        p = lowerer.statics.static_expr(node.args[0], hint="coefficients")
    elif isinstance(p, Pack):
        p = lowerer.prims.prim(PRIMITIVES["stack"], p.items, {"axis": 0}, "coefficients", node)
    return lowerer.prims.prim(PRIMITIVES["polyval"], [p, x], {}, "polyval", node)


def _array(lowerer: Any, args: list, kwargs: dict, node: ast.AST) -> Any:
    dtype = array_options(lowerer, args, kwargs, node)
    if dtype is not None:                          # np.array(x, dtype=…): built, then cast
        out = cast_value(lowerer, _array(lowerer, args[:1], {}, node), dtype, node)
        return lowerer.statics.static_expr(node, hint="array") if out is None else out
    value = args[0]
    if lowerer.lists.is_runtime_list(value):            # np.array([]) is array([]): not a stack
        return lowerer.prims.prim(array_list, [value], {}, "array", node)
    if isinstance(value, Pack) and not lowerer.statics.is_static(value):
        return lowerer.prims.prim(PRIMITIVES["stack"], value.items, {"axis": 0}, "array", node)
    if lowerer.statics.is_static(value):
        return lowerer.statics.static_expr(node, hint="array")
    return lowerer.prims.prim(np.copy, [value], {}, "array", node)


def _asarray(lowerer: Any, args: list, kwargs: dict, node: ast.AST) -> Any:
    """``np.asarray(a)`` of an array is ``a`` itself, not a copy: the result is recorded as
    sharing ``a``'s storage (a write into either shows in both)."""
    out = _array(lowerer, args, kwargs, node)
    if isinstance(out, Var) and args and isinstance(args[0], Var):
        lowerer.aliases.link(out.name, args[0])
    return out


_SPECIAL_CALLS = {np.concatenate: _join("concatenate"), np.stack: _join("stack"),
                 np.einsum: _einsum, np.array: _array, np.asarray: _asarray,
                 np.linalg.multi_dot: _multi_dot, np.polyval: _polyval,
                 np.linalg.eigh: _tuple_result(np.linalg.eigh, 1),
                 np.linalg.svd: _tuple_result(np.linalg.svd, 1),
                 np.linalg.qr: _tuple_result(np.linalg.qr, 1),
                 np.linalg.slogdet: _tuple_result(np.linalg.slogdet, 1),
                 np.linalg.lstsq: _tuple_result(np.linalg.lstsq, 2)}
SPECIAL_CALLS = SpecialCalls({**_SPECIAL_CALLS, **ARRAY_CALLS, **SAMPLING_CALLS})  # and SciPy's
