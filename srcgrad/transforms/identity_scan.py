"""The NumPy objects an eager run must show as themselves: those its code compares by identity.

While a function runs on the eager engine, its module sees NumPy through stand-ins
(:mod:`srcgrad.transforms.eager_lists`).  A stand-in is another object, so ``act is np.tanh``
— ``act`` taken from a list, an attribute or a default made before the run — would be False
where NumPy's own run has True: another branch, a wrong gradient.  This module reads (never
runs) the source of the module's functions and classes, finds their ``is`` / ``is not``
comparisons, and names the NumPy objects that must stay themselves during the run:

- those a comparison names (``act is np.tanh``, ``f is not relu`` of ``from numpy import``);
- when an operand cannot be read from the source (``a is b``, ``type(f) is t``): every NumPy
  callable the code handles as a value instead of calling it (``layer(x, np.tanh)``,
  ``acts = [np.sin]``), since that value may be what is compared;
- all of them, when such a comparison meets a ``getattr`` of a NumPy module (or of a value
  the source does not name).  A function without source (a dataclass's generated
  ``__eq__``) that compares by identity keeps the NumPy callables its code names.

Only functions are kept; modules, classes and objects such as ``np.r_`` never are: the
stand-ins of ``np.ndarray`` and ``np.ufunc`` are what make ``isinstance`` answer for the run's
Arrays as NumPy answers for their values.
"""

from __future__ import annotations

import ast
import dis
import inspect
import textwrap
import types
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["ALL", "identity_kept", "library_function"]

ALL = None
""":func:`identity_kept`'s answer when every NumPy object must stay itself."""

_LIBRARIES = (np.__name__, "scipy", "math")


@dataclass(frozen=True)
class _Reading:
    """What one function's source says: dotted names compared by identity, whether some
    compared operand is unreadable, NumPy-looking names used as values, dynamic lookups."""

    compared: frozenset[tuple[str, ...]]
    unreadable: bool
    values: frozenset[tuple[str, ...]]
    looked_up: frozenset[tuple[str, ...]]            # what getattr is called on


_READINGS: dict[types.CodeType, _Reading] = {}


def _dotted(node: ast.AST) -> tuple[str, ...] | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return (node.id, *reversed(parts))


def _read_tree(tree: ast.AST) -> _Reading:
    compared: set[tuple[str, ...]] = set()
    values: set[tuple[str, ...]] = set()
    looked_up: set[tuple[str, ...]] = set()
    unreadable = False
    inner: set[int] = set()                    # callees and the inner links of a dotted chain
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            inner.add(id(node.func))
            if isinstance(node.func, ast.Name) and node.func.id == "getattr" and node.args:
                looked_up.add(_dotted(node.args[0]) or ("",))
        elif isinstance(node, ast.Attribute):
            inner.add(id(node.value))
        elif isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            for k, op in enumerate(node.ops):
                if not isinstance(op, (ast.Is, ast.IsNot)):
                    continue
                pair = operands[k], operands[k + 1]
                if any(isinstance(o, ast.Constant) for o in pair):
                    continue                               # x is None: no NumPy object
                for operand in pair:
                    name = _dotted(operand)
                    if name is None:
                        unreadable = True
                    else:
                        compared.add(name)
    for node in ast.walk(tree):
        if isinstance(node, (ast.Name, ast.Attribute)) and id(node) not in inner:
            name = _dotted(node)
            if name is not None:
                values.add(name)
    return _Reading(frozenset(compared), unreadable, frozenset(values), frozenset(looked_up))


def _has_identity_test(code: types.CodeType) -> bool:
    if any(i.opname == "IS_OP" for i in dis.get_instructions(code)):
        return True
    return any(isinstance(c, types.CodeType) and _has_identity_test(c) for c in code.co_consts)


def _names(code: types.CodeType) -> set[str]:
    """The global and attribute names a code object (and the code inside it) reads."""
    found = set(code.co_names)
    for inner in code.co_consts:
        if isinstance(inner, types.CodeType):
            found |= _names(inner)
    return found


def _reading(fun: types.FunctionType) -> _Reading:
    code = fun.__code__
    known = _READINGS.get(code)
    if known is not None:
        return known
    try:
        tree: ast.AST = ast.parse(textwrap.dedent(inspect.getsource(fun)))
    except (OSError, TypeError, SyntaxError, IndentationError):
        tree = None
    if tree is not None:
        reading = _read_tree(tree)
    elif _has_identity_test(code):             # no source (a dataclass's __eq__): its names
        names = _names(code)
        reading = _Reading(frozenset(), True, frozenset(
            {(n,) for n in names} | {(m, n) for m in names for n in names}), frozenset())
    else:
        reading = _Reading(frozenset(), False, frozenset(), frozenset())
    _READINGS[code] = reading
    return reading


def _functions(namespace: dict, fun: Any) -> list[types.FunctionType]:
    """The functions whose code reads ``namespace``: the module's own and its classes'
    methods, with the one being run."""
    found = [fun] if isinstance(fun, types.FunctionType) else []
    for value in list(namespace.values()):
        if isinstance(value, type) and value.__module__ == namespace.get("__name__"):
            for member in vars(value).values():
                member = getattr(member, "__func__", getattr(member, "fget", member))
                if isinstance(member, types.FunctionType) and member.__globals__ is namespace:
                    found.append(member)
        elif isinstance(value, types.FunctionType) and value.__globals__ is namespace:
            found.append(value)
    return found


def _library_object(namespace: dict, name: tuple[str, ...]) -> Any:
    """What a dotted name of the source is, when it is a NumPy, SciPy or math object reached
    through modules only (None otherwise: nothing but modules is looked into)."""
    if name[0] not in namespace:
        return None
    value = namespace[name[0]]
    for attr in name[1:]:
        if not isinstance(value, types.ModuleType) or \
                value.__name__.split(".")[0] not in _LIBRARIES:
            return None
        try:
            value = getattr(value, attr)
        except Exception:                  # noqa: BLE001 - a library's lazy or removed name
            return None
    module = value.__name__ if isinstance(value, types.ModuleType) else \
        getattr(value, "__module__", None) or type(value).__module__
    return value if (module or "").split(".")[0] in _LIBRARIES else None


def identity_kept(namespace: dict, fun: Any) -> frozenset[int] | None:
    """The ids of the NumPy objects an eager run of ``fun`` shows as themselves in the module
    whose globals are ``namespace`` (:data:`ALL`: every one of them)."""
    readings = [_reading(f) for f in _functions(namespace, fun)]
    unreadable = any(r.unreadable for r in readings)
    if unreadable and any(
            isinstance(_library_object(namespace, n), types.ModuleType) or n == ("",)
            for r in readings for n in r.looked_up):
        return ALL
    names = {n for r in readings for n in r.compared}
    if unreadable:
        names |= {n for r in readings for n in r.values}
    kept = (_library_object(namespace, n) for n in names)
    return frozenset(id(k) for k in kept if k is not None and _keepable(k))


def _keepable(value: Any) -> bool:
    """A function (not a module, a class or an object such as ``np.r_``): what code compares
    by identity, and what stays itself for it."""
    return callable(value) and not isinstance(value, (types.ModuleType, type))


def library_function(value: Any) -> bool:
    """Whether ``value`` is a NumPy, SciPy or math function, all of which stay themselves
    in a run that keeps :data:`ALL`."""
    module = getattr(value, "__module__", None) or type(value).__module__
    return _keepable(value) and (module or "").split(".")[0] in _LIBRARIES
