"""The functional idioms, lowered when compiling: ``map``, ``zip``, ``functools.reduce`` and
``functools.partial`` over sequences of known length and functions known when compiling.

``zip(xs, ys)`` and ``map(f, xs)`` give their items (:class:`Iterator`: a tuple of them); each
``f(x)`` is a call of a known function, lowered as any call is (a helper, a primitive, a
lambda's body).  ``reduce(f, xs, init)`` folds the calls when compiling.  ``partial(f, a, k=b)``
is a :class:`Bound`: a closure whose call is ``f(a, *more, k=b, **kw)``.

A map or zip object is lazy and consumed once.  Its items are lowered where it is made, so one
bound to a name is compiled only when the next statement reads that name once (not in a loop
or a function defined there): nothing can change between, and nothing reads it again.
"""

from __future__ import annotations

import ast
import builtins
import functools
import itertools
from typing import Any, Protocol

from srcgrad.errors import CompileError
from srcgrad.frontend.inline import bindings_of
from srcgrad.frontend.objects import NeedsArgumentTypes
from srcgrad.frontend.parse import Source
from srcgrad.ir import Closure, Const, Pack, Tree, Var

__all__ = ["Iterator", "Bound", "functional_call", "call_value", "call_bound", "bind_name",
           "FUNCTIONAL"]

FUNCTIONAL = {
    builtins.map: "a function known when compiling over lists or tuples of known length: "
                  "its calls lowered (else static when its arguments are)",
    builtins.zip: "of lists or tuples of known length: their items (else static when its "
                  "arguments are)",
}
"""What the supported-constructs table says of ``map`` and ``zip``."""


class Statics(Protocol):
    def is_static(self, value: Any) -> bool: ...


class CallLowering(Protocol):
    def lower(self, node: ast.Call) -> Any: ...


class Host(Protocol):
    """What the functional idioms read of, and ask of, the lowerer."""

    scope: dict[str, Any]
    src: Source
    line: int
    treeless: bool                     # compiled before the arguments' structure is known
    param_names: set[str]
    source_names: dict[str, str]
    wrt_users: frozenset[str]          # the differentiated parameters (empty: a helper's)
    statics: Statics
    calls: CallLowering

    def expr(self, node: ast.expr) -> Any: ...

    def error(self, message: str, node: ast.AST) -> CompileError: ...


class Iterator(Pack):
    """The items of a ``map`` or ``zip`` object, lowered where it is made."""


class Bound(Closure):
    """``functools.partial(f, *args, **keywords)``: its node is a lambda of no parameters
    whose body is the call ``f(*args, **keywords)`` on names bound in ``bindings``."""


def functional_call(host: Host, f: Any, node: ast.Call) -> Any:
    """``zip``, ``map``, ``functools.reduce`` or ``functools.partial`` lowered; None for any
    other function, or arguments these are not lowered for (the call is then lowered, or
    refused, as before)."""
    if f is functools.partial:
        return _partial(host, node)
    if f not in (builtins.zip, builtins.map, functools.reduce) or node.keywords:
        return None
    values = [host.expr(a) for a in node.args]
    _wait_for_structure(host, f, values, node)
    if f is builtins.zip:
        seqs = [_items(v) for v in values]
        if not values or any(s is None for s in seqs):
            return None
        _consumed_at_once(host, node, "zip")
        return Iterator([Pack(list(row)) for row in zip(*seqs)])
    if len(values) >= 2 and isinstance(values[0], Var) and host.treeless and \
            values[0].name in host.param_names:
        raise NeedsArgumentTypes(f"srcgrad builds {f.__name__}() of a function passed as an "
                                 "argument at the call, for that function",
                                 host.src.where(node))
    if len(values) < 2 or not _callable(values[0]):
        return None
    seqs = [_items(v) for v in (values[1:] if f is builtins.map else values[1:2])]
    if any(s is None for s in seqs):
        return None
    if f is builtins.map:
        _consumed_at_once(host, node, "map")
        return Iterator([call_value(host, values[0], list(row), node) for row in zip(*seqs)])
    if len(values) > 3:
        return None
    items = list(seqs[0]) if len(values) == 2 else [values[2], *seqs[0]]
    if not items:
        raise host.error("reduce() of an empty sequence with no initial value", node)
    acc = items[0]
    for item in items[1:]:
        acc = call_value(host, values[0], [acc, item], node)
    return acc


def _wait_for_structure(host: Host, f: Any, values: list, node: ast.AST) -> None:
    """Before the arguments are seen, a parameter given to ``f`` (a list or tuple whose
    length the code is built for) makes the code wait for them, where it is differentiated
    or a helper's (built at the call, for its structure)."""
    if not host.treeless:
        return
    for v in values:
        if isinstance(v, Var) and v.name in host.param_names and (
                host.source_names.get(v.name) in host.wrt_users or not host.wrt_users):
            raise NeedsArgumentTypes(f"srcgrad lowers {f.__name__}() of lists or tuples of "
                                     "known length (a list or tuple argument differentiated, "
                                     "in wrt); here it is given an array or a value known "
                                     "only when the code runs", host.src.where(node))


_CONSUMERS = {"list", "tuple", "sum", "zip", "map", "reduce", "enumerate", "sorted"}


def _consumed_at_once(host: Host, node: ast.Call, what: str) -> None:
    """Refuse a map or zip object that is not consumed where it is made (assigned, unpacked,
    looped over, spelled out, or given to one of :data:`_CONSUMERS`): one read again, or
    handed to a function that might iterate it twice, would see the items Python no longer
    gives."""
    node = getattr(node, "spelled_from", node)          # zip(*pairs) as the user wrote it
    parent = next((p for p in ast.walk(host.src.node) for c in ast.iter_child_nodes(p)
                   if c is node), None)
    if isinstance(parent, (ast.Assign, ast.Starred)) or \
            isinstance(parent, (ast.For, ast.comprehension)) and parent.iter is node:
        return
    if isinstance(parent, ast.Call) and node in parent.args:
        func = parent.func
        name = func.id if isinstance(func, ast.Name) and func.id not in host.scope else \
            func.attr if isinstance(func, ast.Attribute) and func.attr == "reduce" else None
        if name in _CONSUMERS:
            return
    raise host.error(f"srcgrad compiles a {what} object where it is consumed at once "
                     "(assigned, unpacked, looped over, or given to list(), tuple(), sum(), "
                     "zip(), map() or functools.reduce()): a map or zip object is lazy and "
                     "read once", node)


def _items(value: Any) -> list | None:
    if isinstance(value, Pack):
        return list(value.items)
    if isinstance(value, Tree) and value.kind != "dict":
        return list(value.children.values())
    return None


def _callable(value: Any) -> bool:
    return isinstance(value, Closure) or isinstance(value, Const) and callable(value.value)


def _partial(host: Host, node: ast.Call) -> Bound | None:
    if not node.args:
        return None
    fn = host.expr(node.args[0])
    if not _callable(fn):
        return None
    bindings: dict[str, Any] = {}

    def name(value: Any, label: str) -> ast.Name:
        key = f"{label} {next(_KEYS)}"         # a space: no user name can be it
        bindings[key] = value
        return ast.copy_location(ast.Name(key, ast.Load()), node)

    call = ast.Call(name(fn, "partial"), [name(host.expr(a), "arg") for a in node.args[1:]],
                    [ast.keyword(k.arg, name(host.expr(k.value), k.arg)) for k in node.keywords])
    lam = ast.Lambda(ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[],
                                   kw_defaults=[], kwarg=None, defaults=[]), call)
    for n in ast.walk(lam):
        ast.copy_location(n, node)
    bound = Bound(lam)
    bound.bindings = bindings
    return bound


def call_bound(host: Host, fn: Bound, node: ast.Call) -> Any:
    """A call of ``partial(f, *args, **kw)``: ``f(*args, *more, **{**kw, **given})``."""
    template = fn.node.body
    given = {k.arg for k in node.keywords}
    call = ast.copy_location(ast.Call(template.func, [*template.args, *node.args], [
        k for k in template.keywords if k.arg not in given] + list(node.keywords)), node)
    return _with(host, bindings_of(fn), call)


def call_value(host: Host, fn: Any, values: list, node: ast.AST) -> Any:
    """``fn(*values)`` for a function and values lowered already."""
    bindings = {f"function {next(_KEYS)}": fn}
    args = []
    for v in values:
        key = f"item {next(_KEYS)}"
        bindings[key] = v
        args.append(ast.Name(key, ast.Load()))
    call = ast.Call(ast.Name(next(iter(bindings)), ast.Load()), args, [])
    for n in ast.walk(call):
        ast.copy_location(n, node)
    return _with(host, bindings, call)


def _with(host: Host, bindings: dict, call: ast.Call) -> Any:
    """``call`` lowered with ``bindings`` in scope (those not there already), then unbound."""
    added = [k for k in bindings if k not in host.scope]
    host.scope.update({k: bindings[k] for k in added})
    try:
        return host.calls.lower(call)
    finally:
        for k in added:
            host.scope.pop(k, None)


def bind_name(host: Host, name: str, value: Any, target: ast.AST) -> None:
    """``name = value``: what a closure bound so reads comes into scope with it (a loop or
    branch that calls it is handed those too); a map or zip object is refused unless the next
    statement reads it once."""
    host.scope.update(bindings_of(value))
    if isinstance(value, Iterator) and name in host.src.user_names() and \
            not _read_once_next(host, name):          # (a loop's own name reads it once)
        raise host.error(f"{name!r} is a map or zip object, consumed once and lazily; srcgrad "
                         "compiles one bound to a name when the next statement reads it once "
                         "(not in a loop, lambda or nested function): use it there, or make "
                         "it a list", target)


def _read_once_next(host: Host, name: str) -> bool:
    node = host.src.node
    reads = [n for n in ast.walk(node) if isinstance(n, ast.Name) and n.id == name and
             isinstance(n.ctx, ast.Load)]
    if len(reads) != 1:
        return False
    for body in _bodies(node):
        for i, st in enumerate(body[:-1]):
            if st.lineno == host.line and isinstance(st, ast.Assign) and any(
                    isinstance(t, ast.Name) and t.id == name for t in st.targets):
                return _plainly_read(body[i + 1], reads[0])
    return False


def _bodies(node: ast.AST) -> list[list[ast.stmt]]:
    return [getattr(n, f) for n in ast.walk(node) for f in ("body", "orelse", "finalbody")
            if isinstance(getattr(n, f, None), list) and getattr(n, f) and
            isinstance(getattr(n, f)[0], ast.stmt)]


def _plainly_read(st: ast.stmt, read: ast.Name) -> bool:
    """Whether ``read`` is in ``st`` and evaluated once there."""
    if isinstance(st, (ast.For, ast.While, ast.FunctionDef, ast.ClassDef, ast.With)):
        return isinstance(st, ast.For) and any(n is read for n in ast.walk(st.iter))
    again = (ast.Lambda, ast.FunctionDef, ast.ListComp, ast.SetComp, ast.DictComp,
             ast.GeneratorExp)
    for n in ast.walk(st):
        if isinstance(n, again) and any(m is read for m in ast.walk(n)):
            first = n.generators[0].iter if isinstance(n, (ast.ListComp, ast.SetComp,
                                                           ast.DictComp, ast.GeneratorExp)) \
                else None
            return first is not None and any(m is read for m in ast.walk(first))
    return any(n is read for n in ast.walk(st))


_KEYS = itertools.count()
