"""Writes into state the function did not make: refused.

An argument object's attributes (and a global's or closure's object's) are read when the code
runs, as values with no gradient; the code models no write into them.  So a subscript or slice
assignment, an in-place operator or a mutating method whose container is reached through such
an object's attribute (``o.d["k"] = v``, ``o.W[:] = 0``, ``self.hs[t] = h``, ``o.lst.append(v)``,
or ``W = o.W; W *= 2``) is refused here, naming its line: the compiled code would either drop
the write (a wrong gradient) or change the caller's object.  Objects made in the function
(:mod:`srcgrad.frontend.local_objects`) are not concerned.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
import types
from typing import Any

import numpy as np

from srcgrad.frontend.callees import is_library
from srcgrad.frontend.local_objects import Record
from srcgrad.frontend.objects import ObjectShape, is_user_object
from srcgrad.ir import Const, Pack, Var, hashable

__all__ = ["reaches_foreign", "refuse_write", "refuse_method", "refuse_out_into",
           "refuse_statement", "refuse_passed", "refuse_handed",
           "READING_METHODS"]

READING_METHODS = frozenset({
    # ndarray methods that return a new value and change nothing
    "all", "any", "argmax", "argmin", "argsort", "astype", "clip", "conj", "conjugate", "copy",
    "cumprod", "cumsum", "diagonal", "dot", "flatten", "item", "max", "mean", "min",
    "nonzero", "prod", "ravel", "repeat", "reshape", "round", "squeeze", "std", "sum",
    "swapaxes", "take", "tolist", "trace", "transpose", "var", "view",
    # dict / list / str methods that read
    "get", "keys", "values", "items", "count", "index", "__getitem__", "__len__",
    "__contains__"})
"""Methods of a value read from an object the function did not make that the code may call:
an allow-list (any other method may change the caller's value)."""


def _resolve(host: Any, node: ast.expr) -> Any:
    """The compile-time value of ``node`` (a name, an attribute of an object made in the
    function, a constant item of a tuple or list of known structure), emitting nothing;
    None when it is none of these."""
    if isinstance(node, ast.Name):
        return host.scope[node.id] if node.id in host.scope else _global(host, node.id)
    if isinstance(node, ast.Attribute):
        owner = _resolve(host, node.value)
        if isinstance(owner, Record):
            return owner.attrs.get(node.attr)
        if isinstance(owner, Const) and not isinstance(owner.value, Record):
            found = getattr(owner.value, node.attr, None)
            return Const(found) if found is not None else None
        return None
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and \
            type(node.slice.value) is int:
        owner = _resolve(host, node.value)
        if isinstance(owner, Pack) and -len(owner.items) <= node.slice.value < len(owner.items):
            return owner.items[node.slice.value]
    return None


def _global(host: Any, name: str) -> Any:
    """The value of a global or closure name, or None."""
    try:
        return Const(host.env.resolve(name))
    except Exception:  # noqa: BLE001 - no such name: nothing is written through it
        return None


def _foreign_owner(host: Any, value: Any) -> bool:
    """An object the function did not make: an argument object or a known (global) one."""
    if isinstance(value, Var):
        return host.objects.shape_of(value) is not None or \
            host.objects.foreign_kind(value) is not None
    return isinstance(value, Const) and is_user_object(value.value)


_IMMUTABLE = (int, float, complex, str, bytes, bool, type(None), np.generic)
_IMMUTABLE_KINDS = frozenset(t.__name__ for t in _IMMUTABLE[:-1])


def _immutable(host: Any, owner: Any, attr: str) -> bool:
    """Whether ``owner.attr`` is a value no method or operator can change in place."""
    if isinstance(owner, Const):
        value = getattr(owner.value, attr, None)
        return isinstance(value, _IMMUTABLE) or type(value) is tuple and all(
            isinstance(v, _IMMUTABLE) for v in value)
    shape = host.objects.shape_of(owner)
    kind = shape.attrs.get(attr) if shape is not None and shape.items is None else None
    return isinstance(kind, Const) or isinstance(kind, str) and kind in _IMMUTABLE_KINDS


def reaches_foreign(host: Any, node: ast.expr) -> bool:
    """Whether the value of ``node`` is (part of) state reached through an attribute of an
    object the function did not make, or a name bound to such a value."""
    while True:
        value = _resolve(host, node)
        if host.objects.foreign_kind(value) is not None:
            return True
        if isinstance(node, ast.Attribute):
            owner = _resolve(host, node.value)
            if _foreign_owner(host, owner) and not _immutable(host, owner, node.attr):
                return True
        elif not isinstance(node, ast.Subscript):
            return False
        node = node.value


def refuse_write(host: Any, container: ast.expr, node: ast.AST, what: str) -> None:
    """Refuse ``what`` (a write into ``container``) when the container is state of an object
    the function did not make."""
    if reaches_foreign(host, container):
        message = (f"{host.src.where(node)}: {what} writes into {ast.unparse(container)}, "
                   "state of an object not made in the function (an argument's, a global's or "
                   "a closure's); srcgrad does not compile writes into such state (make a copy "
                   "in the function and write into that)")
        host.iteration.raise_at_run_time(node, message)      # on the path that writes



def refuse_method(host: Any, node: ast.Call) -> None:
    """Refuse ``x.m(...)`` when ``x`` is such state and ``m`` is not a method known to only
    read (or when it writes an ``out=``)."""
    func = node.func
    if isinstance(func, ast.Attribute) and func.attr not in READING_METHODS and \
            not _user_method(host, func):
        refuse_write(host, func.value, node, f".{func.attr}()")
    refuse_out_into(host, node)


def refuse_out_into(host: Any, node: ast.Call) -> None:
    """Refuse a call whose ``out=`` is such state."""
    for k in node.keywords:
        if k.arg == "out":
            targets = k.value.elts if isinstance(k.value, ast.Tuple) else [k.value]
            for t in targets:
                refuse_write(host, t, node, "out=")


def _user_method(host: Any, func: ast.Attribute) -> bool:
    """Whether ``func`` is a method of the user's class of an object (lowered in place, its
    own writes checked there)."""
    owner, cls = _resolve(host, func.value), None
    if isinstance(owner, Var) and host.objects.shape_of(owner) is not None:
        cls = host.objects.shape_of(owner).cls
    elif isinstance(owner, Record):
        cls = owner.cls
    elif isinstance(owner, Const) and is_user_object(owner.value):
        cls = type(owner.value)
    elif isinstance(func.value, ast.Attribute):
        base = _resolve(host, func.value.value)
        shape = host.objects.shape_of(base) if isinstance(base, Var) else None
        kind = shape.attrs.get(func.value.attr) if shape is not None else None
        cls = kind.cls if isinstance(kind, ObjectShape) and kind.items is None else None
    found = inspect.getattr_static(cls, func.attr, None) if cls is not None else None
    return isinstance(found, types.FunctionType) and not is_library(found)


_MUTABLE_TYPES = ("list", "dict", "set", "bytearray", "view")   # a view: maybe an array


def refuse_statement(host: Any, s: ast.stmt) -> None:
    """Refuse an assignment, in-place operator or method call statement ``s`` that writes
    into state of an object the function did not make."""
    if isinstance(s, (ast.Assign, ast.AnnAssign)):
        targets = s.targets if isinstance(s, ast.Assign) else [s.target]
        for n in (n for t in targets for n in ast.walk(t)):
            if isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Store):
                refuse_write(host, n.value, n, "this assignment")
    elif isinstance(s, ast.AugAssign):
        target = s.target
        if isinstance(target, (ast.Subscript, ast.Attribute)):
            refuse_write(host, target.value, target, "this in-place operator")
        elif isinstance(target, ast.Name) and target.id in host.scope:
            kind = host.objects.foreign_kind(host.scope[target.id])
            if kind is not None and (not isinstance(kind, str) or kind.startswith("array")
                                     or kind in _MUTABLE_TYPES):
                host.iteration.raise_at_run_time(target, (
                    f"{host.src.where(target)}: {target.id} holds state of an object not made "
                    "in the function (an argument's, a global's or a closure's), which this "
                    "in-place operator would change; write a new value instead"))
    elif isinstance(s, ast.Expr) and isinstance(s.value, ast.Call):
        refuse_method(host, s.value)


_NUMPY_WRITERS = frozenset(
    getattr(m, n) for m, names in ((np, ("put", "copyto", "place", "putmask", "fill_diagonal",
                                         "put_along_axis")), (np.random, ("shuffle",)))
    for n in names if hasattr(m, n))


def refuse_passed(host: Any, f: Any, node: ast.Call) -> None:
    """Refuse a call run as plain Python (``f``: a function of the user's, or a NumPy
    function that writes into its argument) that is handed such state: it may change it."""
    writer = f in _NUMPY_WRITERS if hashable(f) else False
    writer |= isinstance(getattr(f, "__self__", None), np.ufunc) and \
        getattr(f, "__name__", "") == "at"
    writer |= f is None and isinstance(node.func, ast.Attribute) and node.func.attr == "shuffle"
    if not (writer or isinstance(f, types.FunctionType) and not is_library(f)):
        return
    for arg in [*node.args, *(k.value for k in node.keywords)]:
        arg = arg.value if isinstance(arg, ast.Starred) else arg
        refuse_write(host, arg, node, f"{ast.unparse(node.func)}() (run as plain Python)")


def refuse_handed(host: Any, callee: Any, node: ast.Call) -> None:
    """Refuse handing such state to a helper of the user's that may write into what it is
    given (its own code is compiled, or run as plain Python, apart from the caller's)."""
    args = [a.value if isinstance(a, ast.Starred) else a for a in node.args]
    args += [k.value for k in node.keywords]
    if any(reaches_foreign(host, a) for a in args) and _may_write(callee):
        for a in args:
            refuse_write(host, a, node, f"calling {ast.unparse(node.func)}() (which may write "
                         "into its arguments)")


def _may_write(callee: Any) -> bool:
    """Whether the source of ``callee`` writes into a parameter (a subscript or in-place
    store, ``del``, a method not known to only read, or passes it on to another call);
    True when it cannot be read."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(callee)))
    except (OSError, TypeError, SyntaxError):
        return True
    fn = tree.body[0]
    params = {a.arg for a in ast.walk(fn.args) if isinstance(a, ast.arg)} \
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) else set()
    for n in ast.walk(tree):
        if isinstance(n, (ast.AugAssign, ast.Delete)) or isinstance(n, ast.Subscript) and \
                isinstance(n.ctx, ast.Store):
            return True
        if isinstance(n, ast.Call):
            func = n.func
            if isinstance(func, ast.Attribute) and func.attr not in READING_METHODS and \
                    isinstance(func.value, ast.Name) and func.value.id in params:
                return True
            if any(k.arg == "out" for k in n.keywords):
                return True
            base = func.value if isinstance(func, ast.Attribute) else func
            if not (isinstance(base, ast.Name) and base.id in ("np", "numpy", "math")) and \
                    any(isinstance(a, ast.Name) and a.id in params for a in n.args):
                return True
    return False
