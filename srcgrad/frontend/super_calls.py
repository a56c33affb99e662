"""``super().method(...)`` in a method lowered in place: the method resolved when compiling.

A subclass's ``__init__`` calls ``super().__init__(name)``; its ``__call__`` may call
``super().__call__(x)``.  Zero-argument ``super()`` needs the ``__class__`` cell of the method
it is written in, which generated code has not got; so the call is resolved here, as Python
resolves it: the next class after the method's own in the MRO of the object's class (known
when compiling: the object is made in the function, an argument object, or a global) that
defines the method.  A user's function is lowered in place with ``self`` bound to the object;
``object.__init__()`` does nothing; anything else is refused, naming it.
"""

from __future__ import annotations

import ast
import types
from typing import Any

from srcgrad.frontend.callees import is_library
from srcgrad.frontend.local_objects import Record
from srcgrad.ir import Const

__all__ = ["super_method", "is_super"]


def is_super(node: ast.expr, host: Any) -> bool:
    """Whether ``node`` is a call of the builtin ``super``."""
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
        node.func.id == "super" and "super" not in host.scope


def _class_of(host: Any, receiver: Any) -> type | None:
    if isinstance(receiver, Record):
        return receiver.cls
    if isinstance(receiver, Const):
        return type(receiver.value)
    shape = host.objects.shape_of(receiver)
    return shape.cls if shape is not None and shape.items is None else None


def super_method(host: Any, func: ast.Attribute, call: ast.Call) -> tuple[Any, Any] | None:
    """``(the object, the function)`` that ``super().attr`` resolves to for the ``call``
    (the function None: ``object.__init__()``, which does nothing); None when ``func`` is not
    an attribute of ``super()``."""
    if not is_super(func.value, host):
        return None
    made = func.value
    owner = host.env.closure.get("__class__")
    node = host.src.node
    if made.args or made.keywords or not isinstance(owner, type) or \
            isinstance(node, ast.Lambda) or not node.args.args:
        raise host.error("srcgrad compiles super() without arguments, in a method of a class",
                         made)
    receiver = host.scope.get(node.args.args[0].arg)
    cls = _class_of(host, receiver)
    if cls is None or owner not in cls.__mro__:
        raise host.error("srcgrad compiles super() in a method called on an object whose "
                         "class it knows when compiling", made)
    mro = cls.__mro__
    for base in mro[mro.index(owner) + 1:]:
        found = vars(base).get(func.attr)
        if found is None:
            continue
        if base is object and func.attr == "__init__" and not call.args and not call.keywords:
            return receiver, None
        if isinstance(found, types.FunctionType) and not is_library(found):
            return receiver, found
        raise host.error(f"super().{func.attr} is {base.__qualname__}.{func.attr}, which "
                         "srcgrad does not compile (a method written in Python in the "
                         "user's code is)", call)
    raise host.error(f"super() of {owner.__qualname__} has no attribute {func.attr!r} "
                     "(Python raises AttributeError)", call)
