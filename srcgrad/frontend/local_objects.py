"""Objects made in the function compiled (``layer = Dense(W, b)``): followed when compiling.

An instance of a user class made where the code runs straight through (not in a branch or a
loop body lowered as a block) is a :class:`Record`: its class and the values of its attributes,
as the code has set them so far.  ``__init__`` is lowered in place with ``self`` bound to it,
``self.attr = value`` sets the attribute in the record (the object is fresh and local: nothing
else can see the write), reading an attribute gives the value last written, and its methods
are lowered in place.  Every name bound to the object holds the same record, so a write through
one is seen through the others, as in Python.

The record exists only while compiling: an object used as one run-time value (returned, passed
to code srcgrad does not lower in place, put in a list built at run time, carried into a loop
or branch, printed in a plain-Python expression) is refused, as its state could not follow.
"""

from __future__ import annotations

import ast
import inspect
import types
from typing import Any

from srcgrad.errors import CompileError
from srcgrad.frontend.callees import is_library
from srcgrad.frontend.parse import parse_function
from srcgrad.ir import GENERATED, Const, Pack, Var

__all__ = ["Record", "constructible", "construct", "read", "write", "method", "refuse_value",
           "implicit_return", "receiver_key", "srcgrads_own", "known_test", "UNKNOWN"]


class Record:
    """An object made in the function: its class and its attributes' values (IR values)."""

    def __init__(self, cls: type) -> None:
        self.cls = cls
        self.attrs: dict[str, Any] = {}

    def __repr__(self) -> str:
        return f"<a {self.cls.__qualname__} made in the function>"


_PLAIN_HOOKS = ("__new__", "__setattr__", "__getattribute__", "__getattr__", "__delattr__",
                "__init_subclass__", "__class_getitem__")


def constructible(cls: Any) -> bool:
    """Whether ``Cls(...)`` is followed when compiling: a user class (not a library's) made
    by ``object.__new__``, with no attribute hooks, slots or descriptors of its own, whose
    ``__init__`` (if any) is a function srcgrad can read."""
    if not isinstance(cls, type) or type(cls) is not type or is_library(cls) or \
            srcgrads_own(cls) or not all(
                k is object or k.__module__ != "builtins" for k in cls.__mro__):
        return False
    own = [k for k in cls.__mro__ if k is not object]
    if any(hook in vars(k) for k in own for hook in _PLAIN_HOOKS) or any(
            "__slots__" in vars(k) for k in own):
        return False
    if any(isinstance(v, (property, types.MemberDescriptorType)) for k in cls.__mro__
           for v in vars(k).values()):
        return False
    init = cls.__init__
    if init is object.__init__:
        return True
    if not isinstance(init, types.FunctionType) or is_library(init):
        return False
    try:
        parse_function(init)
    except CompileError:
        return False
    return True


def srcgrads_own(cls: type) -> bool:
    """A class of Python itself, of srcgrad, or of code srcgrad generated: never the user's."""
    module = getattr(cls, "__module__", None) or "builtins"
    return module == "builtins" or module.partition(".")[0] == "srcgrad" or \
        module.startswith(GENERATED)


def construct(host: Any, cls: type, node: ast.Call) -> Record:
    """``Cls(...)``: a record, ``__init__`` lowered in place with ``self`` bound to it."""
    record = Record(cls)
    if cls.__init__ is object.__init__:
        if node.args or node.keywords:
            raise host.error(f"{cls.__qualname__}() takes no arguments", node)
        return record
    if any(isinstance(a, ast.Starred) for a in node.args) or any(
            k.arg is None for k in node.keywords):
        raise host.error("srcgrad cannot compile *args/**kwargs in a call", node)
    values = [record, *[host.expr(a) for a in node.args]]
    keywords = {k.arg: host.expr(k.value) for k in node.keywords}
    host.user_calls.inline_flat(cls.__init__, values, keywords, node)
    return record


def read(host: Any, record: Record, node: ast.Attribute) -> Any:
    """``obj.attr``: the value last written, or a class attribute that is plain data."""
    if node.attr in record.attrs:
        return record.attrs[node.attr]
    found = inspect.getattr_static(record.cls, node.attr, _MISSING)
    if found is _MISSING:
        raise host.error(f"{ast.unparse(node.value)} (a {record.cls.__qualname__} made in the "
                         f"function) has no attribute {node.attr!r} here", node)
    if isinstance(found, (types.FunctionType, staticmethod, classmethod)) or callable(found):
        raise host.error(f"srcgrad compiles the method {node.attr}() of an object made in "
                         "the function where it is called", node)
    return Const(found)


def write(host: Any, target: ast.Attribute, value: Any) -> bool:
    """``obj.attr = value`` of an object made in the function: set in its record (False:
    ``obj`` is no such object)."""
    owner = host.expr(target.value) if isinstance(target.value, (ast.Name, ast.Attribute)) \
        else None
    if not isinstance(owner, Record):
        return False
    _keep_names(host, value)
    owner.attrs[target.attr] = value
    return True


def _keep_names(host: Any, value: Any) -> None:
    """The values an object holds keep their names: a value the code has not named yet
    would otherwise take the name it is next assigned to (``y = obj.v``), under the object."""
    if isinstance(value, Var):
        host.source_names.setdefault(value.name, value.name)
    for item in getattr(value, "items", None) if isinstance(value, Pack) else ():
        _keep_names(host, item)


def method(record: Any, attr: str) -> types.FunctionType | None:
    """The function ``attr`` of a record's class (None: an attribute of its own, or none)."""
    if not isinstance(record, Record) or attr in record.attrs:
        return None
    found = inspect.getattr_static(record.cls, attr, None)
    return found if isinstance(found, types.FunctionType) and not is_library(found) else None


def refuse_value(host: Any, value: Any, node: ast.AST) -> None:
    """Refuse an object made in the function used as one run-time value."""
    if isinstance(value, Record):
        raise host.error(f"an object made in the function ({value.cls.__qualname__}) is used "
                         "here as a run-time value (returned, passed to code srcgrad does not "
                         "lower in place, stored in a list built at run time, or carried into a "
                         "loop or branch); srcgrad follows its state only where the code runs "
                         "straight through", node)


def receiver_key(callee: Any, values: list) -> Any:
    """What marks ``callee`` as being lowered in place: a method with the object it runs on
    (``Module.__call__`` of one layer may call it of another; of the same one it recurses)."""
    first = values[0] if values else None
    if isinstance(first, Record):
        return (callee, id(first))
    return (callee, first.name) if isinstance(first, Var) else callee


def implicit_return(callee: Any, fn: ast.AST) -> list[ast.stmt]:
    """``return None`` at the end of an ``__init__`` lowered in place that has none (Python
    returns None from it; the lowering reads a function's value off its last return)."""
    name = getattr(getattr(callee, "fn", callee), "__name__", None)
    body = getattr(fn, "body", None)
    if name != "__init__" or not isinstance(body, list) or not body or \
            isinstance(body[-1], ast.Return):
        return []
    end = ast.Return(ast.Constant(None))
    for n in ast.walk(end):
        ast.copy_location(n, body[-1])
    return [end]


def known_test(host: Any, node: ast.expr) -> Any:
    """The value of a test made of constants, names bound to them, ``len`` of structures and
    settled attributes of argument objects (``i < len(params) - 1`` in an unrolled loop);
    :data:`UNKNOWN` for anything else."""
    try:
        return _value(host, node)
    except _Unknown:
        return UNKNOWN


class _Unknown(Exception):
    pass


UNKNOWN = object()
_BINOPS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b,
           ast.Mult: lambda a, b: a * b, ast.FloorDiv: lambda a, b: a // b,
           ast.Mod: lambda a, b: a % b}
_COMPARE = {ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b,
            ast.Lt: lambda a, b: a < b, ast.LtE: lambda a, b: a <= b,
            ast.Gt: lambda a, b: a > b, ast.GtE: lambda a, b: a >= b,
            ast.Is: lambda a, b: a is b, ast.IsNot: lambda a, b: a is not b}


def _value(host: Any, node: ast.expr) -> Any:
    if isinstance(node, ast.Constant) and _plain(node.value):
        return node.value
    if isinstance(node, ast.Name):
        value = host.scope.get(node.id)
        if isinstance(value, Const) and _plain(value.value):
            return value.value
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
            node.func.id == "len" and node.func.id not in host.scope and \
            len(node.args) == 1 and not node.keywords and isinstance(node.args[0], ast.Name):
        value = host.scope.get(node.args[0].id)
        items = getattr(value, "children", None) if value is not None and hasattr(
            value, "children") else getattr(value, "items", None)
        if isinstance(items, (dict, list)):
            return len(items)
    elif isinstance(node, ast.Attribute):
        value = host.objects.settled(node)
        if value is not None:
            return value
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.Not, ast.USub)):
        inner = _value(host, node.operand)
        return not inner if isinstance(node.op, ast.Not) else -inner
    elif isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        return _BINOPS[type(node.op)](_value(host, node.left), _value(host, node.right))
    elif isinstance(node, ast.Compare) and all(type(op) in _COMPARE for op in node.ops):
        left = _value(host, node.left)
        for op, right in zip(node.ops, node.comparators):
            right = _value(host, right)
            if not _COMPARE[type(op)](left, right):
                return False
            left = right
        return True
    elif isinstance(node, ast.BoolOp):
        values = [_value(host, v) for v in node.values]
        return all(values) if isinstance(node.op, ast.And) else any(values)
    raise _Unknown


def _plain(value: Any) -> bool:
    return type(value) in (int, float, bool, str) or value is None


_MISSING = object()
