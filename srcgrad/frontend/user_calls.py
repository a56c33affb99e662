"""Calls of the user's own functions, methods and lambdas.

A call of another user function becomes a ``call`` statement (that function is transformed in
its turn, and its vjp called in the adjoint); a method is called as its function with the
object in front; a callee given a tuple, list or pytree, and a lambda, is inlined instead.  A
helper that returns a tuple returns it from one place, always of the same length: the adjoint
fills the items nobody reads with zeros.  What a helper returns (one value, a tuple, a list
built at run time, a tuple holding tuples or lists: lowered in place) is read off its lowered
IR (:mod:`srcgrad.frontend.helper_results`), not off the ``return`` statement, which cannot tell
``return pair`` from ``return x``.

``model.loss(x)`` on an object known when compiling (a global, a closure variable, the object
of the bound method differentiated, ``self`` in a method lowered so) is lowered in place with
``self`` bound to that object, and so is a helper with ``*args``, keyword-only parameters or
``**kwargs``, or with a function as a default (:mod:`srcgrad.frontend.user_methods`).  A body
lowered in place is lowered by the lowerer itself (:mod:`srcgrad.frontend.inline`).
"""

from __future__ import annotations

import ast
import inspect
import types
from typing import Any, Protocol

from srcgrad.errors import CompileError
from srcgrad.frontend.callbacks import holds_function, passed_on, returns_function
from srcgrad.frontend.callees import bind_call, hint, is_library, qualname
from srcgrad.frontend.dead_results import discards_results
from srcgrad.frontend.helper_results import LIST, NESTED, Kind, Unfollowed, result_kind
from srcgrad.frontend.inline import default_const, inline_call, lambda_call
from srcgrad.frontend.lists import Lists
from srcgrad.frontend.object_writes import refuse_handed
from srcgrad.frontend.objects import ArgumentObjects
from srcgrad.frontend.parse import (
    Env,
    Flat,
    parse_function,
    plain_signature,
    returned_tuple,
    returns_of,
)
from srcgrad.frontend.sharing import Sharing
from srcgrad.frontend.statics import Statics
from srcgrad.frontend.tables import constructs as T
from srcgrad.frontend.user_methods import static_default, takes_function
from srcgrad.ir import Closure, Const, Pack, Stmt, Tree, Var

__all__ = ["UserCalls"]


class Host(Protocol):
    """What the lowering of user calls reads of, and asks of, the lowerer that holds it.  A
    body lowered in place is lowered by the lowerer itself: :mod:`srcgrad.frontend.inline`
    and the signature binder are handed the host whole."""

    scope: dict[str, Any]
    env: Env
    body: list
    source_names: dict[str, str]
    free: dict[str, Any]               # names the generated module binds when it loads
    runtime_lists: set[str]
    param_names: set[str]              # the SSA names of the function's parameters
    sharing: Sharing
    statics: Statics
    lists: Lists
    objects: ArgumentObjects           # objects passed as arguments

    def expr(self, node: ast.expr) -> Any: ...

    def materialize(self, value: Any, hint: str) -> Any: ...

    def emit(self, stmt: Stmt) -> Var: ...

    def fresh(self, base: str) -> str: ...

    def fresh_internal(self, base: str) -> str: ...

    def error(self, message: str, node: ast.AST) -> CompileError: ...


class UserCalls:
    """The lowering of calls of user functions, methods and lambdas; the lowerer's
    ``user_calls``."""

    def __init__(self, host: Host) -> None:
        self.host = host

    def lambda_call(self, fn: ast.Lambda | ast.FunctionDef, node: ast.Call,
                    closure: Closure | None = None) -> Any:
        host = self.host
        closure = closure or next((v for v in host.scope.values() if isinstance(v, Closure)
                                   and v.node is fn), None)    # a nested def or lambda bound
        return lambda_call(host, fn, node, closure)

    def user_call(self, fn: Const, node: ast.Call) -> Any:
        host = self.host
        values = [host.expr(a) for a in node.args]
        keywords = {k.arg: host.expr(k.value) for k in node.keywords}
        if holds_function([*values, *keywords.values()]) or returns_function(fn.value):
            # helper(f, x) with f known, or a helper returning a function: lowered in place
            return passed_on(host, values, keywords, node, lambda v, k: inline_call(
                host, fn.value, v, k, node))
        if any(isinstance(v, (Pack, Tree)) or host.lists.is_runtime_list(v) or
               host.objects.is_object(v)                 # an object: its class known
               for v in [*values, *keywords.values()]) or _nested_tuple(fn.value) or \
                discards_results(host, node, fn.value):               # out, _ = layer(x)
            return inline_call(host, fn.value, values, keywords, node)   # helper([a, b])
        callee = fn.value
        if isinstance(callee, types.MethodType) and not isinstance(node.func, ast.Attribute):
            raise host.error("srcgrad compiles a method called on its object "
                             "(obj.method(x))", node)
        args = [host.materialize(v, "t") for v in values]    # a lambda passed on: refused
        returns = self.returned_kind(getattr(callee, "__func__", callee), node)
        if returns == NESTED:                  # a tuple holding tuples or lists
            if not isinstance(callee, types.FunctionType):
                raise host.error(f"{qualname(callee)} returns a tuple holding tuples or "
                                 "lists; srcgrad compiles that for a plain function, not a "
                                 "method (return the items flat)", node)
            return inline_call(host, callee, values, keywords, node)
        if isinstance(callee, types.MethodType):          # model.forward(x), Cls.make(x)
            receiver = T.constant(callee.__self__, host.statics.rename(node.func.value)[0])
            callee = callee.__func__
            args = [receiver, *args]
            plain = host.fresh_internal(f"{hint(callee)}_function")
            host.free[plain] = callee                  # called with its object first
            node = ast.copy_location(ast.Call(ast.Name(plain, ast.Load()), node.args,
                                              node.keywords), node)
        for a in args:
            if host.lists.is_runtime_list(a):
                raise host.error(f"passing a list to {callee.__name__}() is not compiled yet "
                                 "(pass np.stack of it, or the arrays one by one)", node)
        refuse_handed(host, callee, node)        # zero(o.W): the caller's array
        signature = inspect.signature(callee)
        try:
            bound = signature.bind(*args, **{k: host.materialize(v, "t")
                                            for k, v in keywords.items()})
        except TypeError as exc:
            raise host.error(f"{callee.__name__}(): {exc}", node) from None
        bound.apply_defaults()
        ordered = [v if isinstance(v, (Var, Const)) else default_const(host, v)
                   for v in bound.arguments.values()]
        label = node.func.id if isinstance(node.func, ast.Name) else callee.__name__
        label = label if isinstance(label, str) and label.isidentifier() else "helper"
        name = host.fresh(f"{label}_out")
        params = {"label": label, "returns": returns if isinstance(returns, int) else None}
        if params["returns"] is not None:           # the adjoint fills unused items with zeros
            params["outputs"] = params["returns"]
        out = host.emit(Stmt(name, "call", fn=callee, args=ordered, expr=host.statics.rename(
            node.func)[0], params=params))
        if returns == LIST:                        # its items are list reads
            host.runtime_lists.add(out.name)
        return out

    def returned_kind(self, callee: Any, node: ast.AST) -> Kind:
        """What ``callee`` returns (see :func:`result_kind`), read off its lowered IR; from
        its ``return`` statements while it is being lowered (recursion, refused later)."""
        host = self.host
        try:
            fn_node = parse_function(callee).node
        except CompileError:
            return None                      # refused when its vjp is compiled
        count = self.returned_items(callee, fn_node, node)
        ir = host.sharing.callee_ir(callee) if isinstance(callee, types.FunctionType) else None
        if ir is None:
            return count
        try:
            return result_kind(ir)
        except Unfollowed as exc:
            raise host.error(f"{qualname(callee)} {exc}", node) from None

    def returned_items(self, callee: Any, fn_node: ast.AST, node: ast.AST) -> int | None:
        """How many items the tuple literal ``callee`` returns (None: it returns no tuple
        literal); refuses tuples returned from more than one place."""
        host = self.host
        count = returned_tuple(fn_node)
        if count is not None and len(returns_of(fn_node)) > 1:
            raise host.error(f"{qualname(callee)} returns a tuple from more than one place; "
                             "srcgrad compiles a helper returning a tuple with one return "
                             "(assign the items in the branches, return them once)", node)
        if count == -1:
            raise host.error(f"{qualname(callee)} returns a tuple in one place and another "
                             "value (or a tuple of another length) in another; srcgrad "
                             "compiles helpers that always return the same kind", node)
        return count

    def tuple_items(self, value: Any) -> int | None:
        """The number of items of a tuple a helper returned into ``value`` (else None)."""
        host = self.host
        if not isinstance(value, Var):
            return None
        made_by = next((st for st in reversed(host.body) if st.target == value.name), None)
        if made_by is None or made_by.kind != "call":
            return None
        return made_by.params.get("returns")

    def method_call(self, receiver: Const, bound: types.MethodType, node: ast.Call) -> Any:
        """A user method called on an object (or a classmethod on a class) known when
        compiling: its body lowered in place, ``self`` (``cls``) bound to that object."""
        host = self.host
        if any(isinstance(a, ast.Starred) for a in node.args) or any(
                k.arg is None for k in node.keywords):
            raise host.error("srcgrad cannot compile *args/**kwargs in a call", node)
        owner = bound.__self__
        if owner is not receiver.value:             # a classmethod called on an instance
            receiver = T.constant(owner, ast.Call(ast.Name("type", ast.Load()),
                                                  [T.const_expr(receiver)], []))
        values = [receiver, *[host.expr(a) for a in node.args]]
        keywords = {k.arg: host.expr(k.value) for k in node.keywords}
        return self.inline_flat(bound.__func__, values, keywords, node)

    def new_instance(self, node: ast.expr) -> Const | None:
        """``Cls()`` of a user class without ``__init__`` or ``__new__`` of its own, as the
        object of a method call (``Cls().loss(x)``): an instance made when compiling stands
        for it (it has no state of its own; the compiler refuses assigning attributes)."""
        host = self.host
        if not isinstance(node, ast.Call) or node.args or node.keywords:
            return None
        base = node.func.value if isinstance(node.func, ast.Attribute) else node.func
        if not isinstance(base, ast.Name) or base.id in host.scope:
            return None                      # x.copy().sum(): a method of a local's value
        try:
            cls = host.expr(node.func)
        except CompileError:
            return None
        if not (isinstance(cls, Const) and type(cls.value) is type) or is_library(cls.value):
            return None
        if cls.value.__init__ is not object.__init__ or cls.value.__new__ is not object.__new__:
            return None
        return T.constant(cls.value(), host.statics.rename(node)[0])

    def helper_call(self, fn: Const, node: ast.Call) -> Any:
        """A user function called: a ``call`` statement (:meth:`user_call`), or lowered in
        place when it takes ``*args``, keyword-only parameters or ``**kwargs``, or has a
        function as a default (``act=np.tanh``: bound where it is called)."""
        host = self.host
        f = fn.value
        func = f.__func__ if isinstance(f, types.MethodType) else f
        try:
            signature = inspect.signature(func)
        except (TypeError, ValueError):
            return self.user_call(fn, node)
        if any(isinstance(a, ast.Starred) for a in node.args) or any(
                k.arg is None for k in node.keywords):
            raise host.error("srcgrad cannot compile *args/**kwargs in a call", node)
        functions = any(takes_function(p.default) for p in signature.parameters.values())
        if plain_signature(signature) and not functions:
            return self.user_call(fn, node)
        values = [host.expr(a) for a in node.args]
        keywords = {k.arg: host.expr(k.value) for k in node.keywords}
        if isinstance(f, types.MethodType):                   # Cls.make(x) as a name
            values.insert(0, T.constant(f.__self__, ast.Attribute(
                host.statics.rename(node.func)[0], "__self__", ast.Load())))
        return self.inline_flat(func, values, keywords, node)

    def inline_flat(self, func: Any, values: list, keywords: dict, node: ast.Call) -> Any:
        """``func(*values, **keywords)`` lowered in place; ``*args`` arrive as one tuple,
        keyword-only parameters as positional ones, ``**kwargs`` (never read) left out."""
        return passed_on(self.host, values, keywords, node,
                         lambda v, k: self._flat_call(func, v, k, node))

    def _flat_call(self, func: Any, values: list, keywords: dict, node: ast.Call) -> Any:
        host = self.host
        signature = inspect.signature(func)
        if plain_signature(signature):
            return inline_call(host, func, values, keywords, node)
        bound = bind_call(host, func, values, keywords, node, name=qualname(func))
        flat = []
        for p in signature.parameters.values():
            if p.kind is inspect.Parameter.VAR_KEYWORD:
                continue
            if p.kind is inspect.Parameter.VAR_POSITIONAL:
                flat.append(Pack(list(bound.get(p.name, ()))))
            elif p.name in bound:
                flat.append(bound[p.name])
            else:
                flat.append(Const(p.default))
        return inline_call(host, Flat(func), flat, {}, node)

    def callable_default(self, fn: Var, node: ast.Call) -> Const:
        """``_r(x)`` where ``_r`` is a parameter whose default is a function
        (``def f(a, _r=np.sum)``): that function, bound when compiling.  The transform runs
        another function passed for it on the eager engine (:mod:`srcgrad.transforms.grad`); a
        helper given one is lowered in place (:meth:`helper_call`)."""
        host = self.host
        user = host.source_names.get(fn.name)
        if isinstance(node.func, ast.Name) and user == node.func.id and \
                fn.name in host.param_names:
            default = static_default(host.env.fn, user)
            if default is not None:
                return T.constant(default, ast.Name(fn.name, ast.Load()))
        raise host.error("srcgrad compiles calls of functions it can see when compiling (a "
                         "global, a default, or a function passed as an argument: the code "
                         "is then built at the call)", node.func)


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
