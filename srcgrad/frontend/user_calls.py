"""Calls of the user's own functions, methods and lambdas.

A call of another user function becomes a ``call`` statement (that function is transformed in
its turn, and its vjp called in the adjoint); a method is called as its function with the
object in front; a callee given a tuple, list or pytree, and a lambda, is inlined instead.  A
helper that returns a tuple returns it from one place, always of the same length: the adjoint
fills the items nobody reads with zeros.  What a helper returns (one value, a tuple, a list
built at run time, a tuple holding tuples or lists: lowered in place) is read off its lowered
IR (:mod:`srcgrad.frontend.helper_results`), not off the ``return`` statement, which cannot tell
``return pair`` from ``return x``.
"""

from __future__ import annotations

import ast
import inspect
import types
from typing import Any

from srcgrad.errors import CompileError
from srcgrad.frontend.callees import hint, qualname
from srcgrad.frontend.helper_results import LIST, NESTED, Kind, Unfollowed, result_kind
from srcgrad.frontend.inline import default_const, inline_call, lambda_call
from srcgrad.frontend.parse import parse_function, returned_tuple, returns_of
from srcgrad.frontend.tables import constructs as T
from srcgrad.ir import Closure, Const, Pack, Stmt, Tree, Var

__all__ = ["UserCalls"]


class UserCalls:
    """The lowering of calls of user functions (mixed into the Lowerer, through Calls)."""

    def lambda_call(self, fn: ast.Lambda | ast.FunctionDef, node: ast.Call) -> Any:
        closure = next((v for v in self.scope.values() if isinstance(v, Closure) and
                        v.node is fn), None)        # a nested def or a lambda bound to a name
        return lambda_call(self, fn, node, closure)

    def user_call(self, fn: Const, node: ast.Call) -> Any:
        values = [self.expr(a) for a in node.args]
        keywords = {k.arg: self.expr(k.value) for k in node.keywords}
        if any(isinstance(v, (Pack, Tree)) or self.is_runtime_list(v)
               for v in [*values, *keywords.values()]) or _nested_tuple(fn.value):
            return inline_call(self, fn.value, values, keywords, node)   # helper([a, b])
        callee = fn.value
        if isinstance(callee, types.MethodType) and not isinstance(node.func, ast.Attribute):
            raise self.error("srcgrad compiles a method called on its object "
                             "(obj.method(x))", node)
        args = [self.materialize(v, "t") for v in values]    # a lambda passed on: refused
        returns = self.returned_kind(getattr(callee, "__func__", callee), node)
        if returns == NESTED:                  # a tuple holding tuples or lists
            if not isinstance(callee, types.FunctionType):
                raise self.error(f"{qualname(callee)} returns a tuple holding tuples or "
                                 "lists; srcgrad compiles that for a plain function, not a "
                                 "method (return the items flat)", node)
            return inline_call(self, callee, values, keywords, node)
        if isinstance(callee, types.MethodType):          # model.forward(x), Cls.make(x)
            receiver = T.constant(callee.__self__, self.rename(node.func.value)[0])
            callee = callee.__func__
            args = [receiver, *args]
            plain = self.fresh_internal(f"{hint(callee)}_function")
            self.free[plain] = callee                  # called with its object first
            node = ast.copy_location(ast.Call(ast.Name(plain, ast.Load()), node.args,
                                              node.keywords), node)
        for a in args:
            if self.is_runtime_list(a):
                raise self.error(f"passing a list to {callee.__name__}() is not compiled yet "
                                 "(pass np.stack of it, or the arrays one by one)", node)
        signature = inspect.signature(callee)
        try:
            bound = signature.bind(*args, **{k: self.materialize(v, "t")
                                            for k, v in keywords.items()})
        except TypeError as exc:
            raise self.error(f"{callee.__name__}(): {exc}", node) from None
        bound.apply_defaults()
        ordered = [v if isinstance(v, (Var, Const)) else default_const(self, v)
                   for v in bound.arguments.values()]
        label = node.func.id if isinstance(node.func, ast.Name) else callee.__name__
        label = label if isinstance(label, str) and label.isidentifier() else "helper"
        name = self.fresh(f"{label}_out")
        params = {"label": label, "returns": returns if isinstance(returns, int) else None}
        if params["returns"] is not None:           # the adjoint fills unused items with zeros
            params["outputs"] = params["returns"]
        out = self.emit(Stmt(name, "call", fn=callee, args=ordered, expr=self.rename(
            node.func)[0], params=params))
        if returns == LIST:                        # its items are list reads
            self.lists.add(out.name)
        return out

    def returned_kind(self, callee: Any, node: ast.AST) -> Kind:
        """What ``callee`` returns (see :func:`result_kind`), read off its lowered IR; from
        its ``return`` statements while it is being lowered (recursion, refused later)."""
        try:
            fn_node = parse_function(callee).node
        except CompileError:
            return None                      # refused when its vjp is compiled
        count = self.returned_items(callee, fn_node, node)
        ir = self.sharing.callee_ir(callee) if isinstance(callee, types.FunctionType) else None
        if ir is None:
            return count
        try:
            return result_kind(ir)
        except Unfollowed as exc:
            raise self.error(f"{qualname(callee)} {exc}", node) from None

    def returned_items(self, callee: Any, fn_node: ast.AST, node: ast.AST) -> int | None:
        """How many items the tuple literal ``callee`` returns (None: it returns no tuple
        literal); refuses tuples returned from more than one place."""
        count = returned_tuple(fn_node)
        if count is not None and len(returns_of(fn_node)) > 1:
            raise self.error(f"{qualname(callee)} returns a tuple from more than one place; "
                             "srcgrad compiles a helper returning a tuple with one return "
                             "(assign the items in the branches, return them once)", node)
        if count == -1:
            raise self.error(f"{qualname(callee)} returns a tuple in one place and another "
                             "value (or a tuple of another length) in another; srcgrad "
                             "compiles helpers that always return the same kind", node)
        return count

    def tuple_items(self, value: Any) -> int | None:
        """The number of items of a tuple a helper returned into ``value`` (else None)."""
        if not isinstance(value, Var):
            return None
        made_by = next((st for st in reversed(self.body) if st.target == value.name), None)
        if made_by is None or made_by.kind != "call":
            return None
        return made_by.params.get("returns")


def _nested_tuple(callee: Any) -> bool:
    """Whether ``callee`` returns a tuple literal holding a tuple or list literal
    (``return a, (b, c)``): lowered in place, so that the caller unpacks the structure."""
    if not isinstance(callee, types.FunctionType):
        return False
    try:
        fn_node = parse_function(callee).node
    except CompileError:
        return False
    return any(isinstance(v, (ast.Tuple, ast.List)) and any(
        isinstance(e, (ast.Tuple, ast.List)) for e in v.elts) for v in returns_of(fn_node))
