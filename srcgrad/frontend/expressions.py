"""Expressions lowered: names, constants, operators, attributes, subscripts, and the static
values (shapes, counts, indices) that are printed as plain Python.

Values while lowering are :class:`~srcgrad.ir.Var` (an SSA name), :class:`~srcgrad.ir.Const`,
:class:`Pack` (a tuple or list literal not yet built) or :class:`Tree` (a pytree argument).
"""

from __future__ import annotations

import ast
import builtins
import copy
import math
import types
from typing import Any

import numpy as np

from srcgrad.errors import NoFallback, describe
from srcgrad.frontend.freshness import resolved
from srcgrad.frontend.subscripts import Subscripts
from srcgrad.frontend.tables import constructs as T
from srcgrad.ir import Closure, Const, Pack, Stmt, Tree, Var, bind_values
from srcgrad.runtime.eager.subclasses import subclass_error

__all__ = ["Expressions", "Pack", "Tree", "Closure"]   # the values re-exported from srcgrad.ir

class Expressions(Subscripts):
    """The lowering of expressions (mixed into the Lowerer)."""

    def expr(self, node: ast.expr) -> Any:
        method = getattr(self, "expr_" + type(node).__name__, None)
        if method is None:
            raise self.error(f"srcgrad cannot compile {describe(node)} yet", node)
        return method(node)

    def expr_Lambda(self, node: ast.Lambda) -> Closure:
        return Closure(node)

    def expr_IfExp(self, node: ast.IfExp) -> Any:
        return self.if_expression(node)

    def expr_Constant(self, node: ast.Constant) -> Const:
        return Const(node.value)

    def expr_Name(self, node: ast.Name) -> Any:
        if node.id in self.scope:
            return self.scope[node.id]
        try:
            value = self.env.resolve(node.id)
        except Exception:
            raise self.error(f"name {node.id!r} is not defined", node) from None
        return T.constant(value, ast.Name(self.global_name(node.id, value, node), ast.Load()))

    def expr_Tuple(self, node: ast.Tuple) -> Pack:
        return Pack([self.expr(e) for e in node.elts])

    def expr_List(self, node: ast.List) -> Pack:
        return Pack([self.expr(e) for e in node.elts], is_list=True)

    def expr_ListComp(self, node: ast.ListComp) -> Var:
        return self.comprehension(node)

    expr_GeneratorExp = expr_ListComp

    def expr_Attribute(self, node: ast.Attribute) -> Any:
        base = self.expr(node.value)
        if isinstance(base, Const):
            try:
                value = getattr(base.value, node.attr)
            except AttributeError:
                raise self.error(f"{ast.unparse(node.value)} has no attribute "
                                 f"{node.attr!r}", node) from None
            if base.value is math and isinstance(value, float):
                return Const(value)                          # math.pi prints as a number
            error = _subclass_in(value, f"{ast.unparse(node)}, read by the function")
            if error is not None:              # np.matrix: its * would be read as NumPy's
                raise NoFallback(str(error), self.src.where(node))
            resolved(base.value, node.attr, value)     # bound now: watched; an array: checked
            if _live_state(base.value, value):
                return self.static_expr(node, hint=node.attr)   # read when the code runs
            return T.constant(value, ast.Attribute(T.const_expr(base), node.attr, ast.Load()))
        if isinstance(base, Pack):
            raise self.error(f"a tuple has no attribute {node.attr!r}", node)
        if not isinstance(base, Var):
            raise self.error(f"srcgrad cannot compile the attribute .{node.attr} of "
                             f"{describe(node.value).lower()} here", node)
        if node.attr in ("shape", "ndim", "dtype", "size"):
            return self.static_expr(node, hint=f"{base.name}_{node.attr}")
        if isinstance(base, Var) and base.name in self.static:
            return self.static_expr(node, hint=f"{base.name}_{node.attr}")   # no gradient
        if node.attr == "T":
            return self.prim(np.transpose, [base], {}, f"{base.name}_T", node)
        owner = ast.unparse(node.value)
        raise self.error(f"srcgrad cannot compile {owner}.{node.attr}: .{node.attr} is not an "
                         f"ndarray attribute it compiles, and {owner} is known only when the "
                         "code runs (an attribute of an object passed as an argument is not "
                         "compiled; make the object a global or closure variable)", node)

    def expr_BinOp(self, node: ast.BinOp) -> Any:
        return self.binop(node.op, node.left, node.right, node)

    def binop(self, op: ast.operator, left: ast.expr, right: ast.expr, node: ast.AST) -> Any:
        a, b = self.expr(left), self.expr(right)
        if isinstance(a, Pack) and isinstance(b, Pack) and isinstance(op, ast.Add):
            return Pack(a.items + b.items, is_list=a.is_list)     # tuples and list literals
        if isinstance(op, ast.Mult) and (isinstance(a, Pack) or isinstance(b, Pack)):
            pack, count = (a, b) if isinstance(a, Pack) else (b, a)
            if isinstance(count, Const) and type(count.value) is int:
                return Pack(pack.items * count.value, is_list=pack.is_list)
            if not (self.is_static(a) and self.is_static(b)):
                raise self.error("srcgrad repeats a tuple or list by a literal count only",
                                 node)
        if (isinstance(a, Pack) or isinstance(b, Pack)) and not (
                self.is_static(a) and self.is_static(b)):
            raise self.error(f"srcgrad cannot compile {describe(op)} on a tuple or list", node)
        if self.is_list(a) or self.is_list(b):
            if not (self.is_static(a) and self.is_static(b)):
                raise self.error(f"srcgrad cannot compile {describe(op)} on lists built at "
                                 "run time (build them with append)", node)
        if self.is_static(a) and self.is_static(b):
            return self.static_expr(node if isinstance(node, ast.BinOp)
                                    else ast.BinOp(left, op, right))
        fn = T.BINOPS.get(type(op))
        if fn is None:
            raise self.error(f"srcgrad cannot differentiate the operator {describe(op)}", node)
        a, b = self.materialize(a, "t"), self.materialize(b, "t")
        if fn is np.power and isinstance(b, Const) and isinstance(b.value, (int, float)) \
                and not isinstance(b.value, bool):
            return self.prim(T.lookup("pow_scalar"), [a], {"p": b.value},
                             T.name_of(a, "pow"), node)
        return self.prim(fn, [a, b], {}, T.binop_name(a, b, fn), node)

    def expr_UnaryOp(self, node: ast.UnaryOp) -> Any:
        a = self.expr(node.operand)
        if isinstance(a, Const) and type(a.value) in (int, float) and \
                isinstance(node.op, (ast.USub, ast.UAdd)):
            return Const(-a.value if isinstance(node.op, ast.USub) else a.value)   # -1
        if self.is_static(a):
            return self.static_expr(node)
        fn = T.UNARYOPS.get(type(node.op))
        if fn is None:
            raise self.error(f"srcgrad cannot differentiate {describe(node.op)}", node)
        return self.prim(fn, [a], {}, T.name_of(a, "neg"), node)

    def expr_Compare(self, node: ast.Compare) -> Any:
        if len(node.ops) != 1:
            raise self.error("srcgrad compiles one comparison at a time (a < b, not a < b < c)",
                             node)
        a, b = self.expr(node.left), self.expr(node.comparators[0])
        if isinstance(b, Tree) and b.kind == "dict" and isinstance(node.ops[0], (ast.In,
                                                                                 ast.NotIn)):
            key = self.dict_key(node.left)               # 'k' in d: the keys are known
            return Const((key in b.children) == isinstance(node.ops[0], ast.In))
        if self.is_static(a) and self.is_static(b):
            return self.static_expr(node)
        fn = T.CMPOPS.get(type(node.ops[0]))
        if fn is None:
            raise self.error(f"srcgrad cannot compile the comparison {describe(node.ops[0])}",
                             node)
        return self.prim(fn, [a, b], {}, "mask", node)

    def expr_BoolOp(self, node: ast.BoolOp) -> Any:
        mark = len(self.body)
        values = [self.expr(v.operand if _is_not(v) else v) for v in node.values]
        if all(self.is_static(v) for v in values):
            del self.body[mark:]
            return self.static_expr(node)
        if all(_truth_test(n) or self.is_static(v) for n, v in zip(node.values, values)):
            # comparisons and `not`: truth values with no gradient; Python's own `and`/`or`
            # runs on them (NumPy raises for an array of several elements, as it would)
            del self.body[mark:]
            return self.static_expr(node, hint="test")
        raise self.error("`and`/`or` of a value that carries a gradient is not compiled "
                         "(it returns one of its operands); use np.logical_and/"
                         "np.logical_or, or compare first (s > 0.1 and s < 2.0)", node)

    # ------------------------------------------------------------------------ static
    def global_name(self, name: str, value: Any, node: ast.AST | None = None) -> str:
        """The generated module's name for the user's global ``name`` (holding ``value``),
        bound when the module loads.  It is ``name`` itself unless the generated code needs
        that name for something of its own (a helper, ``np``, a builtin it calls, the shape
        guard's ``dispatch``): then a fresh one, so that no user name can shadow the code's."""
        if name == "np" and value is np or getattr(builtins, name, _MISSING) is value:
            return name                       # what the module has under that name already
        alias = self.global_aliases.get(name)
        if alias is None:
            keep = name not in self.reserved or name == "math" and value is math
            alias = self.global_aliases[name] = name if keep else self.fresh_internal(name)
            self.used.add(alias)              # no later name of the generated code takes it
        bind_values(self.free, {alias: value}, self.src.where(node or self.src.node))
        return alias

    def note_global(self, name: str) -> str:
        """A user global read by code printed verbatim: its name in the generated module,
        bound when the module loads (``name`` itself for what is not a global: a local of
        the generated code, or ``slice``)."""
        try:
            value = self.env.resolve(name)
        except Exception:  # noqa: BLE001 - a local of the generated code, or slice
            return name
        return self.global_name(name, value)

    def is_static(self, value: Any) -> bool:
        if isinstance(value, Const):
            return not isinstance(value.value, np.ndarray)
        if isinstance(value, Pack):
            return all(self.is_static(v) for v in value.items)
        return isinstance(value, Var) and value.name in self.static

    def static_expr(self, node: ast.expr, hint: str = "value") -> Var:
        expr, uses = self.rename(node)
        target = self.fresh(hint)
        self.static.add(target)
        self.note_known(target, node)
        return self.emit(Stmt(target, "static", expr=expr, uses=uses))

    def rename(self, node: ast.AST) -> tuple[ast.AST, tuple[str, ...]]:
        """``node`` with the user's names replaced by their SSA names (and values)."""
        uses: list[str] = []
        lowerer = self

        class Renamer(ast.NodeTransformer):
            def visit_Name(self, n: ast.Name) -> ast.AST:
                value = lowerer.scope.get(n.id)
                if isinstance(value, Var):
                    uses.append(value.name)
                    return ast.copy_location(ast.Name(value.name, n.ctx), n)
                if isinstance(value, Const):
                    return ast.copy_location(T.const_expr(value), n)
                if isinstance(value, Pack):
                    return ast.copy_location(self.pack(value), n)
                if isinstance(value, Closure):
                    raise lowerer.error(f"the lambda {n.id!r} is compiled only where it is "
                                        "called", n)
                if isinstance(value, Tree):       # len(xs) of a pytree argument
                    if value.root is None:
                        uses.extend(v.name for _, v in value.leaves())
                        return ast.copy_location(value.literal(), n)
                    uses.append(value.root.name)
                    return ast.copy_location(ast.Name(value.root.name, n.ctx), n)
                return ast.copy_location(ast.Name(lowerer.note_global(n.id), n.ctx), n)

            def pack(self, value: Pack) -> ast.expr:
                items = []
                for v in value.items:
                    if isinstance(v, Pack):
                        items.append(self.pack(v))
                    elif isinstance(v, Const):
                        items.append(T.const_expr(v))
                    elif isinstance(v, Var):
                        uses.append(v.name)
                        items.append(ast.Name(v.name, ast.Load()))
                    else:
                        raise lowerer.error("srcgrad cannot use a pytree inside a list here",
                                            node)
                kind = ast.List if value.is_list else ast.Tuple
                return kind(items, ast.Load())
        new = Renamer().visit(_copy(node))
        return new, tuple(dict.fromkeys(uses))


_MISSING = object()


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
    if callable(value) or isinstance(value, (types.ModuleType, type, np.dtype)) or value is None:
        return False
    module = owner.__name__ if isinstance(owner, types.ModuleType) else ""
    return module.split(".")[0] not in ("numpy", "math", "scipy")


def _copy(node: ast.AST) -> ast.AST:
    return copy.deepcopy(node)


def _subclass_in(value: Any, where: str, depth: int = 3) -> Exception | None:
    """The refusal of an ndarray subclass that ``value`` is or holds (in lists, tuples and
    dicts, a few levels down), or None."""
    error = subclass_error(value, where)
    if error is not None or depth == 0:
        return error
    items = value.values() if isinstance(value, dict) else \
        value if isinstance(value, (list, tuple)) else ()
    return next((e for e in (_subclass_in(v, where, depth - 1) for v in items) if e), None)
