"""User objects in the code compiled: calling one (``model(x)``, its ``__call__``), handing one
known when compiling to a branch or loop body as it is (not as a run-time value), an object
passed as an argument whose class the build was made for, and the fields of a differentiated
dataclass or namedtuple argument.

An argument that is an instance of a user class (not an array, number, string or container)
makes the transform build code for it (:mod:`srcgrad.transforms.argument_objects`): the
lowerer is told its :class:`ObjectShape`, its methods are lowered in place (as a global's
are), its arrays and floats are read when the code runs, as values with no gradient, and its
ints, strings, flags and tuples of them are the values the code is built for.  The code is
keyed by the shape (class, attribute kinds, those values), so another object builds again.
Objects made in the function are :mod:`srcgrad.frontend.local_objects`' records.
"""

from __future__ import annotations

import ast
import inspect
import types
from typing import Any

import numpy as np

from srcgrad.errors import CompileError
from srcgrad.frontend import local_objects
from srcgrad.frontend.callees import is_library
from srcgrad.frontend.freshness import resolved
from srcgrad.frontend.local_objects import Record, srcgrads_own
from srcgrad.ir import Const, Pack, Stmt, Tree, Var

__all__ = ["is_user_object", "handed_as_is", "callable_object", "ObjectShape", "object_shape",
           "ArgumentObjects", "NeedsArgumentTypes", "Record"]

_PLAIN = (np.ndarray, np.generic, int, float, complex, str, bytes, bool, list, tuple, dict,
          set, frozenset, slice, type(None), type(Ellipsis))


def is_user_object(value: Any) -> bool:
    """An instance of a class of the user's code (not a class, module, function, array,
    number, string, container or library object)."""
    if isinstance(value, (type, types.ModuleType, types.FunctionType, types.MethodType,
                          types.BuiltinFunctionType, *_PLAIN)):
        return False
    return not is_library(type(value)) and not srcgrads_own(type(value))


def handed_as_is(value: Any) -> bool:
    """A value in scope that a branch or loop body is given as it is: an object known when
    compiling (its methods are lowered in place there too)."""
    return isinstance(value, Const) and is_user_object(value.value)


def callable_object(value: Any) -> types.MethodType | None:
    """``value.__call__`` when ``value`` is a user object whose class defines it in Python."""
    if not is_user_object(value):
        return None
    call = inspect.getattr_static(type(value), "__call__", None)
    if not isinstance(call, types.FunctionType) or is_library(call):
        return None
    resolved(value, "__call__", value.__call__)          # bound now: watched
    return types.MethodType(call, value)


class NeedsArgumentTypes(CompileError):
    """A refusal of an attribute or method of a parameter, met before the arguments' types
    are known: the transform builds the code at the call instead, for the objects passed."""


class ObjectShape:
    """What the code built for an argument object assumes of it: its class (and, for a list
    or tuple of objects, ``items``: each one's shape), and the kind of each of its attributes
    (another object's shape, an array's dtype kind, or a plain value's type)."""

    def __init__(self, cls: type, attrs: dict[str, Any], items: list | None = None) -> None:
        self.cls, self.attrs, self.items = cls, attrs, items

    def __repr__(self) -> str:
        name = f"{self.cls.__module__}.{self.cls.__qualname__}#{id(self.cls):x}"
        if self.items is not None:
            return f"{name}{self.items!r}"
        return f"{name}({sorted(self.attrs.items())!r})"


def object_shape(value: Any, depth: int = 4) -> ObjectShape | None:
    """The shape of an argument that is a user object, a namedtuple not differentiated, or a
    non-empty list or tuple of user objects; None for anything else."""
    if depth == 0:
        return None
    if isinstance(value, (list, tuple)) and value and not hasattr(value, "_fields") and all(
            is_user_object(v) for v in value):
        return ObjectShape(type(value), {}, [object_shape(v, depth - 1) for v in value])
    if not (is_user_object(value) or isinstance(value, tuple) and hasattr(value, "_fields")):
        return None
    attrs = dict(getattr(value, "__dict__", {}))
    if hasattr(value, "_fields"):
        attrs = dict(zip(value._fields, value))
    return ObjectShape(type(value), {k: _kind(v, depth - 1) for k, v in attrs.items()})


def _kind(value: Any, depth: int) -> Any:
    shape = object_shape(value, depth)
    if shape is not None:
        return shape
    if _settled(value):                  # a count, a name, a flag: compiled in, guarded
        return Const(value)
    if type(value) is np.ndarray:
        return f"array[{value.dtype.kind}]"
    if isinstance(value, np.ndarray) or srcgrads_own(type(value)) and \
            type(value).__module__ != "builtins":          # np.matrix, a Tensor: refused
        return _Unread(type(value))
    return type(value).__name__




class ArgumentObjects:
    """The argument objects of the function lowered (by SSA name, with their shapes), their
    attributes read and their methods called; the lowerer's ``objects``.  A branch or loop
    body is handed the shapes of the objects it is passed (``handed``, by parameter)."""

    def __init__(self, host: Any) -> None:
        self.host = host
        self.shapes: dict[str, ObjectShape] = {}
        self.handed: dict[str, ObjectShape] = {}
        self.foreign: dict[str, Any] = {}       # values read from their attributes: kinds

    def uses_made(self, body: list[ast.stmt]) -> bool:
        """Whether ``body`` reads a name bound to an object made in the function (or a list
        or tuple of them): a loop over it is unrolled, so that the object's state follows."""
        scope = self.host.scope
        return any(isinstance(n, ast.Name) and _holds_record(scope.get(n.id))
                   for n in ast.walk(ast.Module(body=list(body), type_ignores=[])))

    def known_branch(self, s: ast.If, found: list[ast.stmt] | None) -> list[ast.stmt] | None:
        """The branch ``s`` takes, when ``found`` (another rule's answer) or when its test is
        known when compiling and a branch uses an object made in the function (a block
        could not carry its state); None: lowered as a branch."""
        if found is not None or not self.uses_made([ast.Expr(s.test), *s.body, *s.orelse]) or any(
                isinstance(n, (ast.Break, ast.Continue, ast.Return))
                for n in ast.walk(ast.Module(body=s.body + s.orelse, type_ignores=[]))):
            return found
        value = local_objects.known_test(self.host, s.test)
        if value is local_objects.UNKNOWN:
            return None
        return s.body if value else s.orelse

    def is_object(self, value: Any) -> bool:
        """An argument object, or an object made in the function: its methods are lowered
        in place, with the object bound to ``self``."""
        return isinstance(value, Record) or self.shape_of(value) is not None

    def shape_of(self, value: Any) -> ObjectShape | None:
        if not isinstance(value, Var):
            return None
        host = self.host
        shape = self.shapes.get(value.name)
        if shape is None and value.name in host.param_names:
            shape = self.handed.get(host.source_names.get(value.name, value.name))
        return shape

    def foreign_kind(self, value: Any, depth: int = 4) -> Any:
        """The kind of a value read from an argument object's attribute (a branch or loop
        body's parameter given one too), else None."""
        if not isinstance(value, Var):
            return None
        kind = self.foreign.get(value.name)
        if kind is None and value.name in self.host.param_names:
            kind = self.foreign.get(self.host.source_names.get(value.name, value.name))
        return kind if kind is not None or depth == 0 else self._view_kind(value.name, depth)

    def _view_kind(self, name: str, depth: int) -> Any:
        """``"view"`` when ``name`` was read as a part of such a value (``o.M[0]``)."""
        made = next((st for st in reversed(self.host.body) if st.target == name), None)
        node = made.expr if made is not None and made.kind == "static" else None
        through = False
        while isinstance(node, (ast.Subscript, ast.Attribute)):
            through |= isinstance(node, ast.Attribute)
            node = node.value
        if not isinstance(node, ast.Name) or node.id == name:
            return None
        root = Var(node.id)
        if self.foreign_kind(root, depth - 1) is not None or through and \
                self.shape_of(root) is not None:
            return "view"
        return None

    def rename(self, old: str, new: str) -> None:
        """The value ``old`` is called ``new`` from now on (its shape goes along)."""
        if old in self.shapes:
            self.shapes[new] = self.shapes[old]
        if old in self.foreign:
            self.foreign[new] = self.foreign[old]

    def handed_to(self, params: list[str]) -> dict[str, ObjectShape]:
        """The shapes of the objects among a block's parameters (by the user's names)."""
        scope = self.host.scope
        return {p: shape for p in params if (shape := self.shape_of(scope.get(p))) is not None}

    def foreign_to(self, params: list[str]) -> dict[str, Any]:
        """The kinds of the values read from objects' attributes among a block's parameters
        (by the user's names)."""
        scope = self.host.scope
        return {p: kind for p in params if (kind := self.foreign_kind(scope.get(p))) is not None}

    def bind(self, param: str, user: str, shape: ObjectShape) -> None:
        """The parameter ``param`` (the user's ``user``) is an object of ``shape``: in scope
        as a value with no gradient, or a list of objects as a list of its items."""
        host = self.host
        host.static.add(param)
        host.scope[user] = self._hold(Var(param), shape, user)

    def _hold(self, var: Var, shape: ObjectShape, hint: str) -> Any:
        if shape.items is None:
            self.shapes[var.name] = shape
            return var
        items = []
        for i, item in enumerate(shape.items):
            expr = ast.Subscript(ast.Name(var.name, ast.Load()), ast.Constant(i), ast.Load())
            target = self.host.fresh(f"{hint}_{i}")
            self.host.static.add(target)
            items.append(self._hold(self.host.emit(Stmt(target, "static", expr=expr,
                                                         uses=(var.name,))), item, target))
        return Pack(items, is_list=shape.cls is list)

    def attribute(self, base: Var, node: ast.Attribute) -> Any:
        """``obj.attr`` of an argument object: read when the code runs, with no gradient (an
        object's shape goes with it); None when ``base`` is no such object."""
        host = self.host
        shape = self.shape_of(base)
        if shape is None or shape.items is not None:
            return None
        kind = shape.attrs.get(node.attr)
        if kind is None:
            found = inspect.getattr_static(shape.cls, node.attr, _MISSING)
            if found is _MISSING:
                raise host.error(f"{ast.unparse(node.value)} (a {shape.cls.__qualname__}) has "
                                 f"no attribute {node.attr!r}", node)
            if callable(found) or isinstance(found, (staticmethod, classmethod, property)):
                raise host.error(f"srcgrad compiles the method {node.attr}() of an argument "
                                 "object where it is called, and no property", node)
        if isinstance(kind, Const):
            return kind
        if isinstance(kind, _Unread):
            raise host.error(f"{ast.unparse(node)} is a {kind.cls.__qualname__}, whose "
                             "operators are not NumPy's on plain arrays; srcgrad reads plain "
                             "arrays, numbers and strings of an argument object", node)
        value = host.statics.static_expr(ast.Attribute(ast.Name(base.name, ast.Load()),
                                                       node.attr, ast.Load()), hint=node.attr)
        self.foreign[value.name] = kind                 # no write into it is compiled
        return self._hold(value, kind, node.attr) if isinstance(kind, ObjectShape) else value

    def sequence(self, node: ast.expr) -> tuple[list, bool] | None:
        """The items of ``obj.layers``, a list or tuple of objects held by an argument
        object (a loop over it is unrolled), else None."""
        if not isinstance(node, ast.Attribute):
            return None
        owner = self.host.statics.peek(node.value)
        if isinstance(owner, Record) and isinstance(owner.attrs.get(node.attr), Pack):
            return list(owner.attrs[node.attr].items), False    # self.layers, made here
        shape = self.shape_of(owner)
        kind = shape.attrs.get(node.attr) if shape is not None else None
        if not isinstance(kind, ObjectShape) or kind.items is None:
            return None
        return list(self.host.expr(node).items), False

    def note_meta(self, tree: Any, structure: Any) -> None:
        """Keep on each dataclass node of a differentiated argument its meta fields (those
        registered as not differentiated): values the code is built for."""
        if not isinstance(tree, Tree) or not isinstance(structure, tuple):
            return
        if len(structure) == 4 and isinstance(structure[3], tuple) and len(structure[3]) == 2:
            node, aux = structure[3]
            if getattr(node, "meta", ()) and isinstance(aux, tuple):
                tree.meta = dict(zip(node.meta, aux))
        for child, sub in zip(tree.children.values(), structure[2]):
            self.note_meta(child, sub)

    def field(self, tree: Tree, node: ast.Attribute) -> Any:
        """``p.W`` of a differentiated dataclass or namedtuple argument: that leaf (or
        subtree); a meta field the value the code was built for."""
        host, cls = self.host, tree.kind
        meta = getattr(tree, "meta", {})
        if node.attr in meta and _settled(meta[node.attr]):
            return Const(meta[node.attr])
        keys = getattr(cls, "_fields", None)
        key = keys.index(node.attr) if keys is not None and node.attr in keys else node.attr
        if key in tree.children and (keys is not None or isinstance(key, str)):
            return tree.children[key]
        raise host.error(f"srcgrad reads the fields of a {cls.__qualname__} argument; "
                         f".{node.attr} is not one of them", node)

    def settled(self, node: ast.Attribute) -> Any:
        """The value of ``obj.attr`` the code is built for (an int, a string ...), read
        without emitting anything; None when it is no such attribute."""
        owner = self.host.statics.peek(node.value)
        if isinstance(owner, Record):                    # an object made in the function
            kind = owner.attrs.get(node.attr)
            return kind.value if isinstance(kind, Const) and _settled(kind.value) else None
        shape = self.shape_of(owner)
        kind = shape.attrs.get(node.attr) if shape is not None else None
        return kind.value if isinstance(kind, Const) else None

    def method(self, value: Any, attr: str) -> types.FunctionType | None:
        """The function ``attr`` of an argument object's class (defined by ``def`` in the
        user's code, not shadowed by an attribute of the object), else None."""
        if isinstance(value, Record):                    # an object made in the function
            return local_objects.method(value, attr)
        if isinstance(value, Tree) and isinstance(value.kind, type) and \
                value.kind not in (list, tuple):        # a method of a dataclass argument
            found = inspect.getattr_static(value.kind, attr, None)
            return found if isinstance(found, types.FunctionType) and \
                not is_library(found) else None
        shape = self.shape_of(value)
        if shape is None or shape.items is not None or attr in shape.attrs:
            return None
        found = inspect.getattr_static(shape.cls, attr, None)
        if isinstance(found, types.FunctionType) and not is_library(found):
            return found
        return None

    def call(self, receiver: Var, func: types.FunctionType, node: ast.Call) -> Any:
        """``obj.method(...)`` (or ``obj(...)``: its ``__call__``) lowered in place, ``self``
        bound to the object."""
        host = self.host
        if any(isinstance(a, ast.Starred) for a in node.args) or any(
                k.arg is None for k in node.keywords):
            raise host.error("srcgrad cannot compile *args/**kwargs in a call", node)
        values = [receiver, *[host.expr(a) for a in node.args]]
        keywords = {k.arg: host.expr(k.value) for k in node.keywords}
        return host.user_calls.inline_flat(func, values, keywords, node)

    def defer(self, value: Any, error: CompileError, name: str | None = None) -> CompileError:
        """``error``, about the attribute or method ``name`` of ``value``: deferred to the call
        (where the arguments' types are known) when ``value`` is a parameter or an item of one
        (``layers[k]``), the types are not known yet and ``name`` is no ndarray's (an array's
        ``.tolist()`` is refused for every run)."""
        host = self.host
        if name is not None and hasattr(np.ndarray, name):
            return error
        if host.treeless and isinstance(value, Var) and self._of_parameter(value.name, 8):
            return NeedsArgumentTypes(error.message, error.where)
        return error

    def _of_parameter(self, name: str, depth: int) -> bool:
        """Whether ``name`` is a parameter, a view of one, or a plain value read from one
        (``layers[k]``, ``obj.inner``)."""
        host = self.host
        if name in host.param_names or host.aliases.roots(name) & host.param_names:
            return True
        made = next((st for st in reversed(host.body) if st.target == name), None)
        return depth > 0 and made is not None and made.kind == "static" and any(
            self._of_parameter(used, depth - 1) for used in made.uses)


_MISSING = object()


class _Unread:
    """An attribute srcgrad does not read: an ndarray subclass or one of srcgrad's Tensors."""

    def __init__(self, cls: type) -> None:
        self.cls = cls

    def __repr__(self) -> str:
        return f"unread {self.cls.__module__}.{self.cls.__qualname__}"


def _holds_record(value: Any) -> bool:
    if isinstance(value, Pack):
        return any(_holds_record(v) for v in value.items)
    return isinstance(value, Record)


def _settled(value: Any) -> bool:
    """An int, string, bool or None (or a tuple of them): an attribute the code is built for
    (its value is part of the object's shape, so another value builds again)."""
    if isinstance(value, tuple) and type(value) is tuple:
        return all(_settled(v) for v in value)
    return type(value) in (int, str, bool) or value is None
