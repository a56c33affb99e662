"""Never differentiate code that is not running.

Two checks:

- :func:`same_code`: the ``def`` (or ``lambda``) parsed from the file is the code that runs.
  The parsed node is compiled on its own and its bytecode compared with the running code
  object's, recursively, tolerant of what compiling it alone changes (a free name read as a
  global rather than from a closure cell, a module's attribute read as a method, private-name
  mangling, line numbers, docstrings).
  A module edited on disk after import fails it.
- :class:`Snapshot`: the identity of every free value the compiled code bound when it was built
  (globals, closure cells, helpers, and each helper's own, and the callables it reached as
  attributes of objects: ``cfg.act``, ``self.act``), cheap to re-check before a call: any of
  them rebound since then makes :meth:`Snapshot.changed` name it, and the transform is
  rebuilt.  Data attributes (``cfg.scale``) are read at run time and need no check.
"""

from __future__ import annotations
import __future__

import ast
import builtins
import contextvars
import dis
import re
import types
from typing import Any

import numpy as np

__all__ = ["same_code", "Snapshot", "code_of_node", "RESOLVED", "resolved"]

RESOLVED: contextvars.ContextVar[list | None] = contextvars.ContextVar("resolved", default=None)
"""While a transform is built: ``(object, attribute, value)`` for each attribute the compiler
bound when building (``c.act`` after ``c = cfg``, a method looked up on an instance)."""


def resolved(owner: Any, attr: str, value: Any) -> None:
    """Record that the code being built bound ``owner.attr`` (to ``value``), or reads it
    when it runs (an array: its type is checked at every call, see ``Snapshot.arrays``)."""
    out = RESOLVED.get()
    if out is not None and not isinstance(owner, types.ModuleType) and (
            _bound_attribute(value) or isinstance(value, np.ndarray)):
        out.append((owner, attr, value))

_SKIP = {"RESUME", "PUSH_NULL", "PRECALL", "CACHE", "COPY_FREE_VARS", "MAKE_CELL", "NOP",
         "EXTENDED_ARG", "KW_NAMES"}
_FREE_LOADS = {"LOAD_GLOBAL", "LOAD_DEREF", "LOAD_NAME", "LOAD_CLASSDEREF",
               "LOAD_FROM_DICT_OR_DEREF", "LOAD_FROM_DICT_OR_GLOBALS"}
_JUMPS = set(dis.hasjrel) | set(dis.hasjabs)
_MANGLED = re.compile(r"^_[A-Za-z0-9_]*?[A-Za-z0-9](__\w*)$")


def _instructions(code: types.CodeType) -> list[tuple]:
    """The code's instructions, normalised: no bookkeeping, free loads alike, jumps by index."""
    raw = list(dis.get_instructions(code))
    index: dict[int, int] = {}
    k = 0
    for ins in raw:
        index[ins.offset] = k
        if ins.opname not in _SKIP:
            k += 1
    out: list[tuple] = []
    for ins in raw:
        if ins.opname in _SKIP:
            continue
        name, arg = ins.opname, ins.argval
        if name in _FREE_LOADS:
            name = "LOAD_FREE"
        elif name == "LOAD_METHOD":         # a method of an imported module: LOAD_ATTR
            name = "LOAD_ATTR"
        if ins.opcode in _JUMPS and isinstance(arg, int):
            arg = ("jump", index.get(arg, arg))
        elif isinstance(arg, types.CodeType):
            arg = ("code", arg)
        elif name == "LOAD_CONST":
            arg = ("const", type(arg).__name__, repr(arg))
        out.append((name, arg))
    return out


def _same_name(a: Any, b: Any) -> bool:
    if a == b:
        return True
    if isinstance(a, str) and isinstance(b, str):          # __x in a class is _Cls__x
        m = _MANGLED.match(b)
        return bool(m and m.group(1) == a) or bool((m := _MANGLED.match(a)) and
                                                  m.group(1) == b)
    return False


def _same(parsed: types.CodeType, running: types.CodeType, depth: int = 0) -> bool:
    if depth > 50:
        return True
    if parsed.co_argcount != running.co_argcount or \
            parsed.co_kwonlyargcount != running.co_kwonlyargcount or \
            (parsed.co_flags ^ running.co_flags) & (0x04 | 0x08 | 0x20 | 0x80 | 0x100 | 0x200):
        return False
    a, b = _instructions(parsed), _instructions(running)
    if len(a) != len(b):
        return False
    for (op1, arg1), (op2, arg2) in zip(a, b):
        if op1 != op2:
            return False
        if isinstance(arg1, tuple) and arg1 and arg1[0] == "code":
            if not (isinstance(arg2, tuple) and arg2[0] == "code" and
                    _same(arg1[1], arg2[1], depth + 1)):
                return False
        elif not _same_name(arg1, arg2):
            return False
    return True


_FUTURE = 0
for _feature in __future__.all_feature_names:
    _FUTURE |= getattr(__future__, _feature).compiler_flag


def code_of_node(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda, filename: str,
                 flags: int = 0) -> types.CodeType | None:
    """The code object of ``node`` compiled on its own (None when it cannot be, such as a
    ``nonlocal`` outside its enclosing function)."""
    try:
        if isinstance(node, ast.Lambda):
            tree: ast.AST = ast.Expression(node)
            mode = "eval"
        else:
            tree = ast.Module([node], type_ignores=[])
            mode = "exec"
        code = compile(ast.fix_missing_locations(tree), filename, mode, flags=flags & _FUTURE,
                       dont_inherit=True)
    except (SyntaxError, ValueError, TypeError):
        return None
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            return const
    return None


def same_code(node: ast.AST, code: types.CodeType, filename: str) -> bool | None:
    """Whether ``node`` compiles to ``code`` (None: it cannot be compiled alone to tell)."""
    parsed = code_of_node(node, filename, code.co_flags)   # its module's __future__ too
    if parsed is None:
        return None
    return _same(parsed, code)


# ------------------------------------------------------------------------- free values
def _free_names(code: types.CodeType) -> set[str]:
    """Names the code may read from its globals or closure (nested code included); attribute
    names (``exp`` of ``math.exp``) are not."""
    names = {op.argval for op in dis.get_instructions(code)
             if op.opname in ("LOAD_GLOBAL", "LOAD_NAME", "LOAD_DEREF", "LOAD_CLASSDEREF",
                              "LOAD_FROM_DICT_OR_GLOBALS", "LOAD_FROM_DICT_OR_DEREF")}
    names |= set(code.co_freevars)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _free_names(const) - set(code.co_varnames) - set(code.co_cellvars)
    return names


def _attribute_loads(code: types.CodeType, first: str | None) -> set[tuple[str, str]]:
    """``(name, attr)`` for each ``name.attr`` the code reads where ``name`` is a free name or
    ``first`` (the parameter a bound method's instance arrives in), nested code included."""
    loads = [op for op in dis.get_instructions(code) if op.opname not in _SKIP]
    pairs = set()
    for k, (a, b) in enumerate(zip(loads, loads[1:])):
        if b.opname not in ("LOAD_ATTR", "LOAD_METHOD"):
            continue
        if a.opname in _FREE_LOADS or (a.opname == "LOAD_FAST" and a.argval == first):
            pairs.add((a.argval, b.argval))
        elif a.opname == "CALL" and a.argval == 0 and k and loads[k - 1].opname in _FREE_LOADS:
            pairs.add((loads[k - 1].argval, b.argval))      # Cls().method: the class's
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            pairs |= {(n, attr) for n, attr in _attribute_loads(const, None)
                      if n not in const.co_varnames}
    return pairs


def _bound_attribute(value: Any) -> bool:
    """Whether the compiler binds this attribute's value when it builds (a callable or a
    module), rather than reading it at run time as it does data."""
    return callable(value) or isinstance(value, types.ModuleType)


_MISSING = object()


def _lookup(fn: types.FunctionType, name: str) -> Any:
    code = fn.__code__
    if name in code.co_freevars and fn.__closure__:
        try:
            return fn.__closure__[code.co_freevars.index(name)].cell_contents
        except ValueError:                      # an empty cell
            return _MISSING
    value = fn.__globals__.get(name, _MISSING)
    if value is _MISSING:
        value = getattr(builtins, name, _MISSING)
    return value


def _function(value: Any) -> types.FunctionType | None:
    if isinstance(value, types.FunctionType):
        return value
    wrapped = getattr(value, "__wrapped__", None)     # a srcgrad transform: its function
    if wrapped is not None and (type(value).__module__ or "").startswith("srcgrad."):
        return _function(wrapped)
    if isinstance(value, types.MethodType) and isinstance(value.__func__, types.FunctionType):
        return value.__func__
    return None


def _unswapped(value: Any) -> Any:
    """What a NumPy stand-in of an eager run (:mod:`srcgrad.transforms.eager_lists`), shown by the
    module while that run lasts, stands for: no rebinding (``value`` itself otherwise)."""
    try:
        return getattr(value, "srcgrad_stands_in_for", value)
    except Exception:  # noqa: BLE001 - an object whose attributes raise: itself
        return value


class Snapshot:
    """The identities of the free values of ``fn`` and of the user functions it reaches."""

    def __init__(self, fn: Any, limit: int = 64) -> None:
        self.functions: list[tuple[Any, types.CodeType]] = []
        self.cells: list[tuple[Any, Any, str]] = []         # (cell, value, name)
        self.names: list[tuple[dict, str, Any]] = []        # (namespace, name, value)
        self.attributes: list[tuple[Any, str, Any]] = []    # (object, attribute, value)
        self.arrays: list[tuple[Any, str, Any]] = []   # attributes read as data when it runs
        self.defaults: list[tuple] = []   # (function, defaults, kw defaults, a copy of them)
        seen: set[int] = set()
        todo = [(f, getattr(fn, "__self__", None)) for f in [_function(fn)] if f is not None]
        while todo and len(seen) < limit:
            f, instance = todo.pop()
            if id(f) in seen:
                continue
            seen.add(id(f))
            self.functions.append((f, f.__code__))
            kw = f.__kwdefaults__
            self.defaults.append((f, f.__defaults__, kw, None if kw is None else dict(kw)))
            for value in (*(f.__defaults__ or ()), *(f.__kwdefaults__ or {}).values()):
                inner = _function(value)                  # def f(a, act=helper)
                if inner is not None and not _is_library(inner):
                    todo.append((inner, getattr(value, "__self__", None)))
            for name in sorted(_free_names(f.__code__)):
                self._record(f, name)
                inner = _function(_lookup(f, name))
                if inner is not None and not _is_library(inner):
                    todo.append((inner, getattr(_lookup(f, name), "__self__", None)))
            first = f.__code__.co_varnames[0] if instance is not None and \
                f.__code__.co_argcount else None
            for name, attr in sorted(_attribute_loads(f.__code__, first)):
                owner = instance if name == first else _lookup(f, name)
                self._record_attribute(owner, attr, todo, instance=isinstance(owner, type))

    def watch(self, attributes: list) -> None:
        """Also check attributes the compiler bound when it built (see :data:`RESOLVED`)."""
        seen = {(id(o), a) for o, a, _ in self.attributes + self.arrays}
        for owner, attr, value in attributes:
            if (id(owner), attr) not in seen:
                seen.add((id(owner), attr))
                kept = self.arrays if isinstance(value, np.ndarray) else self.attributes
                kept.append((owner, attr, value))

    def _record_attribute(self, owner: Any, attr: str, todo: list,
                          instance: bool = False) -> None:
        """``owner.attr`` when the compiler binds it; ``instance``: a method reached on a
        class is followed with the class as its object (``Cls().method``)."""
        if owner is _MISSING or isinstance(owner, types.ModuleType) or isinstance(
                owner, type) and _is_library(owner):
            return                              # modules and library classes: as they are
        try:
            value = getattr(owner, attr, _MISSING)
        except Exception:                       # a property that raises: nothing bound
            return
        if value is _MISSING or not _bound_attribute(value):
            return
        self.attributes.append((owner, attr, value))
        inner = _function(value)
        if inner is not None and not _is_library(inner):
            todo.append((inner, getattr(value, "__self__", owner if instance else None)))

    def _record(self, f: types.FunctionType, name: str) -> None:
        code = f.__code__
        if name in code.co_freevars and f.__closure__:
            cell = f.__closure__[code.co_freevars.index(name)]
            self.cells.append((cell, _contents(cell), name))
            return
        value = f.__globals__.get(name, _MISSING)
        self.names.append((f.__globals__, name, value))
        if value is _MISSING:                     # a builtin, unless a global shadows it
            self.names.append((vars(builtins), name, getattr(builtins, name, _MISSING)))

    def changed(self) -> str | None:
        """The first free name whose value was rebound since the snapshot, or None."""
        for namespace, name, value in self.names:
            now = namespace.get(name, _MISSING)
            if now is not value and _unswapped(now) is not _unswapped(value):
                return repr(name)
        for cell, value, name in self.cells:
            if _contents(cell) is not value:
                return repr(name)
        for owner, attr, value in self.attributes:
            now = _attribute(owner, attr)
            if now is not value and not _same_method(now, value):
                return f"the attribute {attr!r} of {type(owner).__name__}"
        for f, code in self.functions:
            if f.__code__ is not code:
                return f"the code of {f.__qualname__}"
        for f, defaults, kw, copied in self.defaults:
            if f.__defaults__ is not defaults or f.__kwdefaults__ is not kw or kw is not None \
                    and (kw.keys() != copied.keys() or any(kw[k] is not v
                                                           for k, v in copied.items())):
                return f"the defaults of {f.__qualname__}"
        return None


def _attribute(owner: Any, attr: str) -> Any:
    try:
        return getattr(owner, attr, _MISSING)
    except Exception:
        return _MISSING


def _same_method(a: Any, b: Any) -> bool:
    """A bound method is a new object at each lookup: the same function on the same object."""
    return isinstance(a, types.MethodType) and isinstance(b, types.MethodType) and \
        a.__func__ is b.__func__ and a.__self__ is b.__self__


def _contents(cell: Any) -> Any:
    try:
        return cell.cell_contents
    except ValueError:                          # an empty cell
        return _MISSING


def _is_library(fn: Any) -> bool:
    module = getattr(fn, "__module__", "") or ""
    return module.split(".")[0] in ("numpy", "scipy", "srcgrad", "builtins", "math")
