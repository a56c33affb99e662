"""What Python and NumPy constructs lower to: operators, ``math``, methods, special calls."""

from __future__ import annotations

import ast
import builtins
import math
from typing import Any

import numpy as np

from srcgrad.ir import Const, Var
from srcgrad.runtime.primitives import PRIMITIVES, Primitive
from srcgrad.runtime.rules import stop_gradient

BINOPS = {ast.Add: np.add, ast.Sub: np.subtract, ast.Mult: np.multiply, ast.Div: np.divide,
          ast.MatMult: np.matmul, ast.Pow: np.power, ast.Mod: np.remainder,
          ast.FloorDiv: np.floor_divide}
UNARYOPS = {ast.USub: np.negative, ast.UAdd: np.positive, ast.Not: np.logical_not,
            ast.Invert: np.logical_not}
CMPOPS = {ast.Lt: np.less, ast.LtE: np.less_equal, ast.Gt: np.greater, ast.GtE: np.greater_equal,
          ast.Eq: np.equal, ast.NotEq: np.not_equal}
_WORDS = {np.add: "plus", np.subtract: "minus", np.multiply: "times", np.divide: "over",
          np.matmul: "at", np.power: "pow", np.remainder: "mod", np.floor_divide: "div"}

MATH = {math.exp: np.exp, math.log: np.log, math.sqrt: np.sqrt, math.sin: np.sin,
        math.cos: np.cos, math.tan: np.tan, math.tanh: np.tanh, math.sinh: np.sinh,
        math.cosh: np.cosh, math.asin: np.arcsin, math.acos: np.arccos, math.atan: np.arctan,
        math.atan2: np.arctan2, math.hypot: np.hypot, math.log1p: np.log1p,
        math.expm1: np.expm1, math.log10: np.log10, math.log2: np.log2, math.fabs: np.fabs,
        math.pow: np.power, math.asinh: np.arcsinh, math.acosh: np.arccosh,
        math.atanh: np.arctanh, math.floor: np.floor, math.ceil: np.ceil}
BUILTIN_MATH = {builtins.abs: np.abs, builtins.pow: np.power}
STATIC_BUILTINS = {builtins.len, builtins.int, builtins.range, builtins.isinstance,
                   builtins.type, builtins.bool, builtins.str, builtins.round, builtins.tuple,
                   builtins.list, builtins.dict, builtins.enumerate, builtins.zip,
                   np.shape, np.ndim, np.size, np.result_type, np.dtype}
EFFECTS = {builtins.print}
CONSTRUCTORS = {np.zeros, np.ones, np.empty, np.full, np.zeros_like, np.ones_like,
                np.empty_like, np.full_like, np.eye, np.identity, np.arange, np.linspace,
                np.logspace, np.meshgrid, np.float32, np.float64, np.int64, np.int32}

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
    "astype": (None, False), "item": (None, False),
}


def lookup(name: str) -> Primitive:
    return PRIMITIVES[name]


STOP_GRADIENT = stop_gradient


def constant(value: Any, expr: ast.expr) -> Const:
    """A compile-time value, printed as the user wrote it (``np.pi``, ``W0``, ``rng``)."""
    c = Const(value)
    object.__setattr__(c, "expr", expr)
    return c


def const_expr(c: Const) -> ast.expr:
    """How a constant prints: its own expression, or a literal."""
    expr = getattr(c, "expr", None)
    if expr is not None:
        return expr
    return value_expr(c.value)


def value_expr(value: Any, leaf: Any = None) -> ast.expr:
    """A Python value as an expression (slices as ``slice(...)`` calls); ``leaf(v)`` may give
    the expression of values it knows (the compiler's symbols)."""
    node = leaf(value) if leaf is not None else None
    if node is not None:
        return node
    if isinstance(value, (tuple, list)):
        items = [value_expr(v, leaf) for v in value]
        return ast.Tuple(items, ast.Load()) if isinstance(value, tuple) else ast.List(
            items, ast.Load())
    if isinstance(value, slice):                 # slice(1, None), not slice(1, None, None)
        parts = [value.start, value.stop] + ([value.step] if value.step is not None else [])
        return ast.Call(ast.Name("slice", ast.Load()), [value_expr(p, leaf) for p in parts], [])
    if value is Ellipsis:
        return ast.Constant(Ellipsis)
    if isinstance(value, (np.floating, np.integer, np.bool_)):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return ast.parse(f"float({str(value)!r})", mode="eval").body
    if isinstance(value, np.dtype) or isinstance(value, type) and issubclass(value, np.generic):
        return ast.Attribute(ast.Name("np", ast.Load()), np.dtype(value).name, ast.Load())
    if isinstance(value, (int, float, bool, str, complex)) or value is None:
        return ast.Constant(value)
    raise TypeError(f"no literal for {type(value).__name__}")


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
        dtype = args[0] if args else lowerer.param(kwargs["dtype"])
        if isinstance(dtype, Const):
            dtype = dtype.value
        return lowerer.prim(PRIMITIVES["cast"], [receiver], {"dtype": np.dtype(dtype)},
                            f"{receiver.name}_cast", node)
    if name == "item":
        return lowerer.prim(PRIMITIVES["item"], [receiver], {}, f"{receiver.name}_item", node)
    raise lowerer.error(f"srcgrad cannot compile the array method .{name}()", node)


def _join(prim_name: str) -> Any:
    def lower_join(lowerer: Any, args: list, kwargs: dict, node: ast.AST) -> Any:
        from srcgrad.expressions import Pack
        seq = args[0] if args else None
        axis = lowerer.param(kwargs["axis"]) if "axis" in kwargs else (
            args[1].value if len(args) > 1 else 0)
        if lowerer.is_runtime_list(seq):
            return lowerer.join_list(prim_name, seq, axis, node)
        if not isinstance(seq, Pack):
            raise lowerer.error(f"np.{prim_name} is compiled on a list or a tuple of arrays",
                                node)
        return lowerer.prim(PRIMITIVES[prim_name], seq.items, {"axis": axis}, prim_name, node)
    return lower_join


def _einsum(lowerer: Any, args: list, kwargs: dict, node: ast.AST) -> Any:
    if not args or not isinstance(args[0], Const) or not isinstance(args[0].value, str):
        raise lowerer.error("np.einsum is compiled with a literal subscripts string", node)
    return lowerer.prim(PRIMITIVES["einsum"], args[1:], {"subscripts": args[0].value}, "einsum",
                        node)


def _array(lowerer: Any, args: list, kwargs: dict, node: ast.AST) -> Any:
    from srcgrad.expressions import Pack
    value = args[0]
    if lowerer.is_runtime_list(value):
        return lowerer.join_list("stack", value, 0, node)
    if isinstance(value, Pack) and not lowerer.is_static(value):
        return lowerer.prim(PRIMITIVES["stack"], value.items, {"axis": 0}, "array", node)
    if lowerer.is_static(value):
        return lowerer.static_expr(node, hint="array")
    return lowerer.prim(np.copy, [value], {}, "array", node)


SPECIAL_CALLS = {np.concatenate: _join("concatenate"), np.stack: _join("stack"),
                 np.einsum: _einsum, np.array: _array, np.asarray: _array}
