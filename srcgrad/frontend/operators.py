"""Operators and attributes lowered: ``a + b``, ``-a``, ``a < b``, ``a and b``, ``x.T``,
``np.pi``, ``model.W``.

An operator on arrays becomes the primitive of the rule table; on static values (shapes,
counts) it is printed as plain Python; on tuple and list literals it builds the literal
(``a + b``, ``a * 3``).  ``and``/``or`` are compiled on truth values only.  An attribute of
an object known when compiling is read when compiling when it cannot change (functions,
modules, classes, library constants) and when the code runs otherwise (``cfg.scale``).
"""

from __future__ import annotations

import ast
import math
import types
from typing import Any, Protocol

import numpy as np

from srcgrad.errors import CompileError, NoFallback, describe
from srcgrad.frontend.callbacks import holds_function
from srcgrad.frontend.freshness import resolved
from srcgrad.frontend.lists import Lists
from srcgrad.frontend.local_objects import Record
from srcgrad.frontend.local_objects import read as read_record
from srcgrad.frontend.objects import ArgumentObjects, is_user_object
from srcgrad.frontend.parse import Source
from srcgrad.frontend.primitives import Primitives
from srcgrad.frontend.randomness import Randomness
from srcgrad.frontend.statics import Statics
from srcgrad.frontend.tables import constructs as T
from srcgrad.ir import Const, Pack, Stmt, Tree, Var
from srcgrad.runtime.subclasses import subclass_error

__all__ = ["Operators"]


class Keys(Protocol):
    """The keys of dicts known when compiling (``'k' in d``)."""

    def key(self, node: ast.expr) -> Any: ...


class KnownInts(Protocol):
    def known_int(self, node: ast.expr) -> int | None: ...


class Host(Protocol):
    """What the lowering of operators reads of, and asks of, the lowerer that holds it."""

    src: Source
    body: list[Stmt]
    static: set[str]                   # SSA names of values with no gradient
    dicts: Keys
    prims: Primitives
    statics: Statics
    lists: Lists
    iteration: KnownInts
    objects: ArgumentObjects           # objects passed as arguments
    randomness: Randomness             # the draws lowered

    def expr(self, node: ast.expr) -> Any: ...

    def materialize(self, value: Any, hint: str) -> Any: ...

    def error(self, message: str, node: ast.AST) -> CompileError: ...


class Operators:
    """The lowering of operators and attributes; the lowerer's ``operators``."""

    def __init__(self, host: Host) -> None:
        self.host = host

    def attribute(self, node: ast.Attribute) -> Any:
        host = self.host
        base = host.expr(node.value)
        if isinstance(base, Const):
            try:
                value = getattr(base.value, node.attr)
            except AttributeError:
                raise host.error(f"{ast.unparse(node.value)} has no attribute "
                                 f"{node.attr!r}", node) from None
            if base.value is math and isinstance(value, float):
                return Const(value)                          # math.pi prints as a number
            error = _subclass_in(value, f"{ast.unparse(node)}, read by the function")
            if error is not None:              # np.matrix: its * would be read as NumPy's
                raise NoFallback(str(error), host.src.where(node))
            resolved(base.value, node.attr, value)     # bound now: watched; an array: checked
            if _live_state(base.value, value):
                return host.statics.static_expr(node, hint=node.attr)   # read when the code runs
            return T.constant(value, ast.Attribute(T.const_expr(base), node.attr, ast.Load()))
        if isinstance(base, Tree) and isinstance(base.kind, type):   # p.W of a dataclass
            return host.objects.field(base, node)
        if isinstance(base, Record):                    # of an object made in the function
            return read_record(host, base, node)
        if isinstance(base, Pack):
            raise host.error(f"a tuple has no attribute {node.attr!r}", node)
        if not isinstance(base, Var):
            raise host.error(f"srcgrad cannot compile the attribute .{node.attr} of "
                             f"{describe(node.value).lower()} here", node)
        read = host.objects.attribute(base, node)     # of an object passed as an argument
        if read is not None:
            return read
        if node.attr in ("shape", "ndim", "dtype", "size"):
            return host.statics.static_expr(node, hint=f"{base.name}_{node.attr}")
        if isinstance(base, Var) and base.name in host.static:
            return host.statics.static_expr(node, hint=f"{base.name}_{node.attr}")   # no gradient
        if node.attr == "T":
            return host.prims.prim(np.transpose, [base], {}, f"{base.name}_T", node)
        owner = ast.unparse(node.value)
        raise host.objects.defer(base, host.error(
            f"srcgrad cannot compile {owner}.{node.attr}: .{node.attr} is not an ndarray "
            f"attribute it compiles, and {owner} is a value computed when the code runs",
            node), node.attr)

    def binop(self, op: ast.operator, left: ast.expr, right: ast.expr, node: ast.AST) -> Any:
        host = self.host
        a, b = host.expr(left), host.expr(right)
        if isinstance(a, Pack) and isinstance(b, Pack) and isinstance(op, ast.Add):
            return Pack(a.items + b.items, is_list=a.is_list)     # tuples and list literals
        if isinstance(op, ast.Mult) and (isinstance(a, Pack) or isinstance(b, Pack)):
            pack, count = (a, b) if isinstance(a, Pack) else (b, a)
            known = host.iteration.known_int(right if pack is a else left)
            if known is not None and holds_function([pack]):     # [np.tanh] * (len(ws) - 1)
                count = Const(known)
            if isinstance(count, Const) and type(count.value) is int:
                return Pack(pack.items * count.value, is_list=pack.is_list)
            if not (host.statics.is_static(a) and host.statics.is_static(b)):
                raise host.error("srcgrad repeats a tuple or list by a literal count only",
                                 node)
        if (isinstance(a, Pack) or isinstance(b, Pack)) and not (
                host.statics.is_static(a) and host.statics.is_static(b)):
            raise host.error(f"srcgrad cannot compile {describe(op)} on a tuple or list", node)
        if host.lists.is_list(a) or host.lists.is_list(b):
            if not (host.statics.is_static(a) and host.statics.is_static(b)):
                raise host.error(f"srcgrad cannot compile {describe(op)} on lists built at "
                                 "run time (build them with append)", node)
        if host.statics.is_static(a) and host.statics.is_static(b):
            return host.statics.static_expr(node if isinstance(node, ast.BinOp)
                                            else ast.BinOp(left, op, right))
        fn = T.BINOPS.get(type(op))
        if fn is None:
            raise host.error(f"srcgrad cannot differentiate the operator {describe(op)}", node)
        a, b = host.materialize(a, "t"), host.materialize(b, "t")
        if fn is np.power and isinstance(b, Const) and isinstance(b.value, (int, float)) \
                and not isinstance(b.value, bool):
            return host.prims.prim(T.lookup("pow_scalar"), [a], {"p": b.value},
                                   T.name_of(a, "pow"), node)
        return host.prims.prim(fn, [a, b], {}, T.binop_name(a, b, fn), node)

    def unary(self, node: ast.UnaryOp) -> Any:
        host = self.host
        a = host.expr(node.operand)
        if isinstance(a, Const) and type(a.value) in (int, float) and \
                isinstance(node.op, (ast.USub, ast.UAdd)):
            return Const(-a.value if isinstance(node.op, ast.USub) else a.value)   # -1
        if host.statics.is_static(a):
            return host.statics.static_expr(node)
        fn = T.UNARYOPS.get(type(node.op))
        if fn is None:
            raise host.error(f"srcgrad cannot differentiate {describe(node.op)}", node)
        return host.prims.prim(fn, [a], {}, T.name_of(a, "neg"), node)

    def compare(self, node: ast.Compare) -> Any:
        host = self.host
        if len(node.ops) != 1:
            raise host.error("srcgrad compiles one comparison at a time (a < b, not a < b < c)",
                             node)
        a, b = host.expr(node.left), host.expr(node.comparators[0])
        if isinstance(b, Tree) and b.kind == "dict" and isinstance(node.ops[0], (ast.In,
                                                                                 ast.NotIn)):
            key = host.dicts.key(node.left)               # 'k' in d: the keys are known
            return Const((key in b.children) == isinstance(node.ops[0], ast.In))
        if host.statics.is_static(a) and host.statics.is_static(b):
            return host.statics.static_expr(node)
        fn = T.CMPOPS.get(type(node.ops[0]))
        if fn is None:
            raise host.error(f"srcgrad cannot compile the comparison {describe(node.ops[0])}",
                             node)
        return host.prims.prim(fn, [a, b], {}, "mask", node)

    def bool_op(self, node: ast.BoolOp) -> Any:
        host = self.host
        mark, drawn = len(host.body), dict(host.randomness.lowered)
        values = [host.expr(v.operand if _is_not(v) else v) for v in node.values]
        if all(host.statics.is_static(v) for v in values):
            del host.body[mark:]
            host.randomness.lowered = drawn         # its draws: lowered again, as they run
            return host.statics.static_expr(node)
        if all(_truth_test(n) or host.statics.is_static(v) for n, v in zip(node.values, values)):
            # comparisons and `not`: truth values with no gradient; Python's own `and`/`or`
            # runs on them (NumPy raises for an array of several elements, as it would)
            del host.body[mark:]
            host.randomness.lowered = drawn
            return host.statics.static_expr(node, hint="test")
        raise host.error("`and`/`or` of a value that carries a gradient is not compiled "
                         "(it returns one of its operands); use np.logical_and/"
                         "np.logical_or, or compare first (s > 0.1 and s < 2.0)", node)

    # ------------------------------------------------------------------------ static


def _truth_test(node: ast.expr) -> bool:
    """A comparison, a ``not``, or ``and``/``or`` of those: a value with no gradient."""
    if isinstance(node, ast.BoolOp):
        return all(_truth_test(v) for v in node.values)
    return isinstance(node, ast.Compare) or _is_not(node)


def _is_not(node: ast.expr) -> bool:
    return isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not)


def _live_state(owner: Any, value: Any) -> bool:
    """Whether ``owner.attr`` is data that may be rebound after compiling (``cfg.scale``,
    ``model.W``): read at run time, never folded.  Functions, classes, modules and library
    constants (``np.pi``, ``np.float64``) are what they were."""
    if callable(value) or isinstance(value, (types.ModuleType, type, np.dtype)) or \
            value is None or is_user_object(value):          # an object: its class is what counts
        return False
    module = owner.__name__ if isinstance(owner, types.ModuleType) else ""
    return module.split(".")[0] not in ("numpy", "math", "scipy")


def _subclass_in(value: Any, where: str, depth: int = 3) -> Exception | None:
    """The refusal of an ndarray subclass that ``value`` is or holds (in lists, tuples and
    dicts, a few levels down), or None."""
    error = subclass_error(value, where)
    if error is not None or depth == 0:
        return error
    items = value.values() if isinstance(value, dict) else \
        value if isinstance(value, (list, tuple)) else ()
    return next((e for e in (_subclass_in(v, where, depth - 1) for v in items) if e), None)
