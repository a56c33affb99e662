"""Calls lowered: NumPy and ``math`` functions, array methods, user functions, primitives.

A NumPy call is split by NumPy's own signature into the primitive's inputs and its static
parameters; a call of another user function becomes a ``call`` statement (that function is
transformed in its turn); anything without a rule raises a CompileError naming it.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import types
from typing import Any

import numpy as np

from srcgrad import lowering_tables as T
from srcgrad.expressions import Pack
from srcgrad.ir import Const, Stmt, Var
from srcgrad.runtime.primitives import NUMPY_BINDINGS, Primitive

__all__ = ["Calls"]


class Calls:
    """The lowering of calls (mixed into the Lowerer)."""

    def expr_Call(self, node: ast.Call) -> Any:
        if isinstance(node.func, ast.Attribute):
            receiver = self.expr(node.func.value)
            if isinstance(receiver, Var) and receiver.name not in self.static:
                return self.method(receiver, node.func.attr, node)
        fn = self.expr(node.func)
        if not isinstance(fn, Const):
            raise self.error("srcgrad compiles calls of functions it can see when compiling",
                             node.func)
        return self.call(fn, node)

    # ------------------------------------------------------------------------ calls
    def call(self, fn: Const, node: ast.Call) -> Any:
        f = fn.value
        if any(isinstance(a, ast.Starred) for a in node.args) or any(
                k.arg is None for k in node.keywords):
            raise self.error("srcgrad cannot compile *args/**kwargs in a call", node)
        if f is builtins.sum:
            return self.builtin_sum(node)
        if f is builtins.max or f is builtins.min:
            return self.builtin_extremum(f, node)
        if f is T.STOP_GRADIENT:
            return self.prim(T.lookup("stop_gradient"), [self.expr(node.args[0])], {},
                             "stopped", node)
        if f in T.EFFECTS:
            raise self.error(f"{getattr(f, '__name__', f)}() is used for its value", node)
        if f in T.MATH or f in T.BUILTIN_MATH:
            target = T.MATH.get(f) or T.BUILTIN_MATH[f]
            args = [self.expr(a) for a in node.args]
            if all(self.is_static(a) for a in args):
                return self.static_expr(node)
            return self.numpy_call(target, args, {}, node)
        if f in T.STATIC_BUILTINS or _is_static_callable(f):
            return self.static_expr(node, hint=getattr(f, "__name__", "value"))
        if isinstance(f, Primitive) or f in NUMPY_BINDINGS or isinstance(f, np.ufunc) or \
                f in T.SPECIAL_CALLS:
            args = [self.expr(a) for a in node.args]
            kwargs = {k.arg: k.value for k in node.keywords}
            return self.numpy_call(f, args, kwargs, node)
        if isinstance(f, (types.FunctionType, types.MethodType)):
            return self.user_call(fn, node)
        raise self.error(f"srcgrad has no derivative rule for {_qualname(f)}; register one "
                         "with srcgrad.defvjp", node)

    def builtin_extremum(self, f: Any, node: ast.Call) -> Any:
        """``max(a, b, …)``/``min(…)`` of values, or of one list or tuple literal: the
        elementwise ``np.maximum``/``np.minimum``, one pair at a time."""
        if node.keywords:
            raise self.error(f"{f.__name__}() with keyword arguments is not compiled", node)
        args = [self.expr(a) for a in node.args]
        if len(args) == 1 and isinstance(args[0], Pack):
            args = args[0].items
        if len(args) < 2:
            raise self.error(f"{f.__name__}() is compiled for two or more values (or a list "
                             "literal of them)", node)
        if all(self.is_static(a) for a in args):
            return self.static_expr(node, hint=f.__name__)
        pairwise = np.maximum if f is builtins.max else np.minimum
        result = args[0]
        for other in args[1:]:
            result = self.numpy_call(pairwise, [result, other], {}, node)
        return result

    def numpy_call(self, f: Any, args: list, kwargs: dict, node: ast.AST) -> Any:
        special = T.SPECIAL_CALLS.get(f)
        if special is not None:
            return special(self, args, kwargs, node)
        prim = f if isinstance(f, Primitive) else NUMPY_BINDINGS[f][0] \
            if f in NUMPY_BINDINGS else None
        if prim is None:
            raise self.error(f"srcgrad has no derivative rule for {_qualname(f)}", node)
        if isinstance(f, Primitive):                # inputs, then keyword parameters
            inputs, params = args, {k: self.param(v) for k, v in kwargs.items()}
        elif isinstance(f, np.ufunc):
            if kwargs:
                raise self.error(f"keyword arguments to {_qualname(f)} are not supported", node)
            inputs, params = args, {}
        else:
            inputs, params = self.bind(f, prim, args, kwargs, node)
        inputs = [self.materialize(a, "t") for a in inputs]
        return self.prim(prim, inputs, params, T.call_name(prim, inputs), node)

    def bind(self, f: Any, prim: Primitive, args: list, kwargs: dict, node: ast.AST) -> tuple:
        """Split a NumPy call into inputs and static parameters, by NumPy's signature."""
        try:
            bound = inspect.signature(f).bind(*args, **kwargs).arguments
        except TypeError as exc:
            raise self.error(f"{_qualname(f)}(): {exc}", node) from None
        items = list(bound.items())
        inputs = [v for _, v in items[:prim.nin]]
        known = prim.param_names()
        params = {}
        for name, value in items[prim.nin:]:
            if isinstance(value, ast.AST):
                value = self.param(value)
            if known is not None and name not in known:
                if isinstance(value, Const) and value.value is None:
                    continue
                raise self.error(f"{_qualname(f)}(): argument {name!r} is not supported", node)
            params[name] = value
        return inputs, params

    def param(self, node: ast.expr) -> Any:
        """A static parameter: a Python literal, a named constant (a Const), or a Var."""
        try:
            return ast.literal_eval(node)
        except (ValueError, SyntaxError):
            value = self.expr(node)
            if isinstance(value, Const):
                return value.value if _literal(value.value) else value
            if isinstance(value, Pack):
                return self.static_expr(node)
            return value

    def method(self, receiver: Var, name: str, node: ast.Call) -> Any:
        if self.is_runtime_list(receiver):
            raise self.error(f"srcgrad compiles a list's .append as a statement of its own; "
                             f"list.{name}() here is not compiled", node)
        spec = T.METHODS.get(name)
        if spec is None:
            raise self.error(f"srcgrad cannot compile the array method .{name}()", node)
        f, varargs = spec
        args = [self.param(a) if i or varargs else self.expr(a) for i, a in enumerate(node.args)]
        if varargs and len(node.args) > 1:
            args = [tuple(args)]                   # x.reshape(2, 3) is np.reshape(x, (2, 3))
        kwargs = {k.arg: k.value for k in node.keywords}
        if f is None:                               # .astype(dtype), .item(), .copy()
            return T.method_special(self, name, receiver, args, kwargs, node)
        return self.numpy_call(f, [receiver, *[_as_const(a) for a in args]], kwargs, node)

    def user_call(self, fn: Const, node: ast.Call) -> Any:
        args = [self.materialize(self.expr(a), "t") for a in node.args]
        callee = fn.value
        for a in args:
            if self.is_runtime_list(a):
                raise self.error(f"passing a list to {callee.__name__}() is not compiled yet "
                                 "(pass np.stack of it, or the arrays one by one)", node)
        signature = inspect.signature(callee)
        try:
            bound = signature.bind(*args, **{k.arg: self.materialize(self.expr(k.value), "t")
                                            for k in node.keywords})
        except TypeError as exc:
            raise self.error(f"{callee.__name__}(): {exc}", node) from None
        bound.apply_defaults()
        ordered = [v if isinstance(v, (Var, Const)) else Const(v) for v in bound.arguments.values()]
        label = node.func.id if isinstance(node.func, ast.Name) else callee.__name__
        name = self.fresh(f"{label}_out")
        return self.emit(Stmt(name, "call", fn=callee, args=ordered, expr=self.rename(
            node.func)[0], params={"label": label}))

    # ------------------------------------------------------------------- primitives
    def prim(self, f: Any, inputs: list, params: dict, hint: str, node: ast.AST) -> Var:
        prim = f if isinstance(f, Primitive) else NUMPY_BINDINGS[f][0]
        inputs = [self.materialize(a, "t") for a in inputs]
        uses = tuple(v.name for v in params.values() if isinstance(v, Var))
        for k, v in params.items():
            if isinstance(v, Const) and getattr(v, "expr", None) is None and not _literal(
                    v.value):
                raise self.error(f"the parameter {k} of {prim.name} must be a literal or a "
                                 "named value", node)
        target = self.fresh(hint)
        return self.emit(Stmt(target, "prim", fn=prim, args=inputs, params=params, uses=uses))


def _literal(value: Any) -> bool:
    try:
        T.value_expr(value)
    except TypeError:
        return False
    return True


def _as_const(value: Any) -> Any:
    return value if isinstance(value, (Var, Const, Pack)) else Const(value)


def _is_static_callable(f: Any) -> bool:
    module = getattr(f, "__module__", "") or ""
    owner = getattr(f, "__self__", None)
    return (f in T.CONSTRUCTORS or module.startswith("numpy.random")
            or isinstance(owner, np.random.Generator) or isinstance(f, type))


def _qualname(f: Any) -> str:
    module = getattr(f, "__module__", None) or ("numpy" if isinstance(f, np.ufunc) else "")
    name = getattr(f, "__qualname__", None) or getattr(f, "__name__", repr(f))
    return f"{module}.{name}" if module else name
