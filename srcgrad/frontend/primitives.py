"""Primitives emitted: a NumPy call split by NumPy's own signature into the primitive's inputs
and its static parameters (shapes, axes, indices: literals, or static names computed by the
code), and a ``prim`` statement of the rule table.  The lowerer holds it as ``prims``: the
tables of :mod:`srcgrad.frontend.tables` and the other parts the lowerer holds call it there.
"""

from __future__ import annotations

import ast
from typing import Any, Protocol

import numpy as np

from srcgrad.errors import CompileError
from srcgrad.frontend.callees import bind_call, qualname
from srcgrad.frontend.statics import Statics
from srcgrad.frontend.structural import integers_only
from srcgrad.frontend.tables import constructs as T
from srcgrad.frontend.tables.arrays import int_arithmetic
from srcgrad.ir import Const, Pack, Stmt, Var, literal
from srcgrad.runtime.rules.primitives import NUMPY_BINDINGS, Primitive

__all__ = ["Primitives"]


class Operands(Protocol):
    """Lists given where NumPy takes arrays (the lowerer's ``lists``)."""

    def operands(self, f: Any, args: list, node: ast.AST) -> list: ...


class HelperTuples(Protocol):
    """Tuples returned by the user's helpers (the lowerer's ``user_calls``)."""

    def tuple_items(self, value: Any) -> Any: ...


class Host(Protocol):
    """What the lowering of primitives reads of, and asks of, the lowerer that holds it.  The
    names in scope change as lowering goes on: they are read here when needed, never kept."""

    scope: dict[str, Any]
    static: set[str]                   # SSA names of values with no gradient
    statics: Statics
    lists: Operands
    user_calls: HelperTuples

    def expr(self, node: ast.expr) -> Any: ...

    def materialize(self, value: Any, hint: str) -> Any: ...

    def emit(self, stmt: Stmt) -> Var: ...

    def fresh(self, base: str) -> str: ...

    def error(self, message: str, node: ast.AST) -> CompileError: ...


class Primitives:
    """NumPy calls and primitives lowered; the lowerer's ``prims``, the interface the tables
    and the other parts call."""

    def __init__(self, host: Host) -> None:
        self.host = host

    def carries(self, value: Any) -> bool:
        """Whether ``value`` may carry a gradient (anything but a constant or a static)."""
        if isinstance(value, Const):
            return False
        if isinstance(value, Pack):
            return any(self.carries(v) for v in value.items)
        if isinstance(value, Var):
            return value.name not in self.host.static
        return True                                # a pytree argument

    def numpy_call(self, f: Any, args: list, kwargs: dict, node: ast.AST) -> Any:
        host = self.host
        args = host.lists.operands(f, args, node)      # lists given as arrays: stacked
        if f is np.power and len(args) == 2 and not kwargs and isinstance(args[1], Const) \
                and type(args[1].value) in (int, float):      # pow(x, 2) is x ** 2
            base = host.materialize(args[0], "t")
            return self.prim(T.lookup("pow_scalar"), [base], {"p": args[1].value},
                             T.name_of(base, "pow"), node)
        special = T.SPECIAL_CALLS.get(f)
        if special is not None:
            return special(host, args, kwargs, node)
        prim = f if isinstance(f, Primitive) else NUMPY_BINDINGS[f][0] \
            if f in NUMPY_BINDINGS else None
        if prim is None:
            raise host.error(f"srcgrad has no derivative rule for {qualname(f)}", node)
        if prim.eager_only:
            raise host.error(prim.eager_only, node)
        if isinstance(f, Primitive):                # inputs, then keyword parameters
            inputs, params = args, {k: self.param(v) for k, v in kwargs.items()}
        elif isinstance(f, np.ufunc):
            if len(args) > f.nin or "out" in kwargs:
                raise host.error(f"{qualname(f)}() with an output argument writes into an "
                                 "array in place; srcgrad compiles the plain call "
                                 f"(y = {f.__name__}(...))", node)
            if kwargs:
                raise host.error(f"keyword arguments to {qualname(f)} are not supported", node)
            inputs, params = args, {}
        else:
            inputs, params = self.bind(f, prim, args, kwargs, node)
        inputs = [host.materialize(a, "t") for a in inputs]
        return self.prim(prim, inputs, params, T.call_name(prim, inputs), node)

    def bind(self, f: Any, prim: Primitive, args: list, kwargs: dict, node: ast.AST) -> tuple:
        """Split a NumPy call into inputs and static parameters, by NumPy's signature."""
        host = self.host
        bound = bind_call(host, f, args, kwargs, node)
        out = bound.get("out")
        if out is not None and not (isinstance(out, Const) and out.value is None) and not (
                isinstance(out, ast.Constant) and out.value is None):
            raise host.error(f"{qualname(f)}(..., out=...) writes into an array in place; "
                             "srcgrad compiles the call that returns a new array", node)
        items = list(bound.items())
        inputs = [host.expr(v) if isinstance(v, ast.AST) else v   # an input given by keyword
                  for _, v in items[:prim.nin]]
        known = prim.param_names()
        params = {}
        for name, value in items[prim.nin:]:
            if isinstance(value, ast.AST):
                value = self.param(value)
            elif isinstance(value, Pack):
                value = self.pack_param(value, node, integers_only(name))
            elif isinstance(value, Const) and literal(value.value):
                value = value.value                 # x.transpose((0, 2, 1)): the value itself
            if known is not None and name not in known:
                if isinstance(value, Const) and value.value is None:
                    continue
                raise host.error(f"{qualname(f)}(): argument {name!r} is not supported", node)
            params[name] = value
        return inputs, params

    def pack_param(self, pack: Pack, node: ast.AST, integers: bool = False) -> Any:
        """A tuple or list literal as a static parameter: its value, or a static name
        (``integers``: one NumPy takes as integers only, which carry no gradient)."""
        host = self.host
        if not integers and self.carries(pack):
            raise host.error("a shape, axis or index that carries a gradient is not compiled",
                             node)
        if all(isinstance(v, Const) and literal(v.value) for v in pack.items):
            items = [v.value for v in pack.items]
            return items if pack.is_list else tuple(items)
        target = host.fresh("shape")
        saved = host.scope.get("__pack__")
        host.scope["__pack__"] = pack
        try:
            expr, uses = host.statics.rename(ast.Name("__pack__", ast.Load()))
        finally:
            host.scope.pop("__pack__")
            if saved is not None:
                host.scope["__pack__"] = saved
        host.static.add(target)
        return host.emit(Stmt(target, "static", expr=expr, uses=uses))

    def param(self, node: ast.expr) -> Any:
        """A static parameter: a Python literal, a named constant (a Const), or a Var."""
        try:
            return ast.literal_eval(node)
        except (ValueError, SyntaxError):
            folded = int_arithmetic(node)           # x.reshape(5 * 4, 6)
            if folded is not None:
                return folded
            return self.static_param(self.host.expr(node), node)

    def static_param(self, value: Any, node: ast.expr) -> Any:
        """A lowered static argument (written ``node``) as a primitive's parameter."""
        if isinstance(value, Const):
            return value.value if literal(value.value) else value
        if isinstance(value, Pack):
            return self.host.statics.static_expr(node)
        return value

    def prim(self, f: Any, inputs: list, params: dict, hint: str, node: ast.AST) -> Var:
        host = self.host
        prim = f if isinstance(f, Primitive) else NUMPY_BINDINGS[f][0]
        inputs = [host.materialize(a, "t") for a in inputs]
        for a in inputs:
            if host.user_calls.tuple_items(a) is not None:
                raise host.error("a tuple returned by a helper is used as an array here; "
                                 "unpack it (a, b = helper(x)) or index it with a constant",
                                 node)
        uses = tuple(v.name for v in params.values() if isinstance(v, Var))
        for k, v in params.items():
            if isinstance(v, Const) and getattr(v, "expr", None) is None and not literal(
                    v.value):
                raise host.error(f"the parameter {k} of {prim.name} must be a literal or a "
                                 "named value", node)
        target = host.fresh(hint)
        return host.emit(Stmt(target, "prim", fn=prim, args=inputs, params=params, uses=uses))
