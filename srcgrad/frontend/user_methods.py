"""Calls of the user's methods and of functions with ``*args``, keyword-only parameters or
``**kwargs``, and functions passed as defaults.

``model.loss(x)`` on an object known when compiling (a global, a closure variable, the object
of the bound method differentiated, ``self`` in a method lowered so) is lowered in place with
``self`` bound to that object: its data attributes are read when the code runs, its methods
are followed the same way.  So is a classmethod (``cls`` bound to the class).  A helper with
``*args`` gets them as one tuple.  ``def f(a, _r=np.sum)`` calls ``np.sum`` (bound when
compiling; the transform and the snapshot of :mod:`srcgrad.frontend.freshness` watch it).
"""

from __future__ import annotations

import ast
import inspect
import types
from typing import Any

import numpy as np

from srcgrad.errors import CompileError
from srcgrad.frontend.callees import bind_call, is_library, qualname
from srcgrad.frontend.freshness import resolved
from srcgrad.frontend.inline import inline_call
from srcgrad.frontend.parse import Flat, plain_signature
from srcgrad.frontend.tables import constructs as T
from srcgrad.frontend.user_calls import UserCalls
from srcgrad.ir import Const, Pack, Var

__all__ = ["Methods", "user_method", "static_default"]


class Methods(UserCalls):
    """The lowering of calls of user methods and of helpers lowered in place (mixed into the
    Lowerer, through Calls)."""

    def method_call(self, receiver: Const, bound: types.MethodType, node: ast.Call) -> Any:
        """A user method called on an object (or a classmethod on a class) known when
        compiling: its body lowered in place, ``self`` (``cls``) bound to that object."""
        if any(isinstance(a, ast.Starred) for a in node.args) or any(
                k.arg is None for k in node.keywords):
            raise self.error("srcgrad cannot compile *args/**kwargs in a call", node)
        owner = bound.__self__
        if owner is not receiver.value:             # a classmethod called on an instance
            receiver = T.constant(owner, ast.Call(ast.Name("type", ast.Load()),
                                                  [T.const_expr(receiver)], []))
        values = [receiver, *[self.expr(a) for a in node.args]]
        keywords = {k.arg: self.expr(k.value) for k in node.keywords}
        return self.inline_flat(bound.__func__, values, keywords, node)

    def new_instance(self, node: ast.expr) -> Const | None:
        """``Cls()`` of a user class without ``__init__`` or ``__new__`` of its own, as the
        object of a method call (``Cls().loss(x)``): an instance made when compiling stands
        for it (it has no state of its own; the compiler refuses assigning attributes)."""
        if not isinstance(node, ast.Call) or node.args or node.keywords:
            return None
        base = node.func.value if isinstance(node.func, ast.Attribute) else node.func
        if not isinstance(base, ast.Name) or base.id in self.scope:
            return None                      # x.copy().sum(): a method of a local's value
        try:
            cls = self.expr(node.func)
        except CompileError:
            return None
        if not (isinstance(cls, Const) and type(cls.value) is type) or is_library(cls.value):
            return None
        if cls.value.__init__ is not object.__init__ or cls.value.__new__ is not object.__new__:
            return None
        return T.constant(cls.value(), self.rename(node)[0])

    def helper_call(self, fn: Const, node: ast.Call) -> Any:
        """A user function called: a ``call`` statement (:meth:`user_call`), or lowered in
        place when it takes ``*args``, keyword-only parameters or ``**kwargs``, or has a
        function as a default (``act=np.tanh``: bound where it is called)."""
        f = fn.value
        func = f.__func__ if isinstance(f, types.MethodType) else f
        try:
            signature = inspect.signature(func)
        except (TypeError, ValueError):
            return self.user_call(fn, node)
        if any(isinstance(a, ast.Starred) for a in node.args) or any(
                k.arg is None for k in node.keywords):
            raise self.error("srcgrad cannot compile *args/**kwargs in a call", node)
        functions = any(_static_default(p.default) for p in signature.parameters.values())
        if plain_signature(signature) and not functions:
            return self.user_call(fn, node)
        values = [self.expr(a) for a in node.args]
        keywords = {k.arg: self.expr(k.value) for k in node.keywords}
        if isinstance(f, types.MethodType):                   # Cls.make(x) as a name
            values.insert(0, T.constant(f.__self__, ast.Attribute(
                self.rename(node.func)[0], "__self__", ast.Load())))
        return self.inline_flat(func, values, keywords, node)

    def inline_flat(self, func: Any, values: list, keywords: dict, node: ast.Call) -> Any:
        """``func(*values, **keywords)`` lowered in place; ``*args`` arrive as one tuple,
        keyword-only parameters as positional ones, ``**kwargs`` (never read) left out."""
        signature = inspect.signature(func)
        if plain_signature(signature):
            return inline_call(self, func, values, keywords, node)
        bound = bind_call(self, func, values, keywords, node, name=qualname(func))
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
        return inline_call(self, Flat(func), flat, {}, node)

    def callable_default(self, fn: Var, node: ast.Call) -> Const:
        """``_r(x)`` where ``_r`` is a parameter whose default is a function
        (``def f(a, _r=np.sum)``): that function, bound when compiling.  The transform runs
        another function passed for it on the eager engine (:mod:`srcgrad.transforms.grad`); a
        helper
        given one is lowered in place (:meth:`helper_call`)."""
        user = self.source_names.get(fn.name)
        if isinstance(node.func, ast.Name) and user == node.func.id and \
                fn.name in getattr(self, "param_names", ()):
            default = static_default(self.env.fn, user)
            if default is not None:
                return T.constant(default, ast.Name(fn.name, ast.Load()))
        raise self.error("srcgrad compiles calls of functions it can see when compiling",
                         node.func)


def user_method(obj: Any, attr: str) -> types.MethodType | None:
    """``obj.attr`` when it is a user function bound to ``obj`` (a method) or to its class
    (a classmethod); None for anything else (data, library objects, modules)."""
    if isinstance(obj, types.ModuleType) or is_library(type(obj)) and not isinstance(obj, type):
        return None
    try:
        value = getattr(obj, attr)
    except Exception:  # noqa: BLE001 - a property that raises: not a method
        return None
    if isinstance(value, types.MethodType) and isinstance(value.__func__, types.FunctionType) \
            and (value.__self__ is obj or value.__self__ is type(obj)) and \
            not is_library(value.__func__):
        resolved(obj, attr, value)                         # bound now: watched
        return value
    return None


def static_default(fn: Any, name: str) -> Any:
    """The default of ``fn``'s parameter ``name`` when it is a function bound when compiling
    (``_r=np.sum``), else None."""
    try:
        default = inspect.signature(fn).parameters[name].default
    except (TypeError, ValueError, KeyError):
        return None
    return default if _static_default(default) else None


def _static_default(value: Any) -> bool:
    return callable(value) and value is not inspect.Parameter.empty and not isinstance(
        value, np.ndarray)
