"""Generated modules as input of the compiler: their helpers known for what they are.

A generated module defines its own copy of every helper it calls, so that its source runs
alone.  When a transform's generated function is transformed again (``grad`` of a ``jvp``),
the front end meets those copies: :func:`original` gives back the rule table's object each
one was printed from (a primitive, or a ``@helper`` on shapes), so that a copy is lowered
exactly as the original would be, never as an unknown user function.
"""

from __future__ import annotations

import ast
import weakref
from typing import Any

from srcgrad.ir import is_generated

__all__ = ["register", "original", "is_generated", "split_free", "add_original", "free_of",
           "set_node_factory", "node_primitive"]

_COPIES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


_TRANSFORMS: dict[Any, Any] = {}      # a transform's generated function -> its primitive


def add_original(fn: Any, prim: Any) -> None:
    """Record that copies of the generated function ``fn`` stand for the primitive ``prim``
    (a compiled ``grad`` called inside a function that is differentiated again)."""
    _TRANSFORMS[fn] = prim


def _originals() -> dict[Any, Any]:
    """The rule table's primitives and helpers by the plain function their source is."""
    from srcgrad.runtime import rules
    from srcgrad.runtime.rules import primitives
    out: dict[Any, Any] = {p.fn: p for p in primitives.PRIMITIVES.values()}
    out.update(_TRANSFORMS)
    for module in (rules, primitives):
        for value in vars(module).values():
            source = getattr(value, "helper_source", None)
            if source is not None:
                out[source] = value
    return out


_FREE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def register(namespace: dict, helpers: dict[str, Any], free: dict[str, Any]) -> None:
    """Record what each helper copy of a loaded generated module stands for, and the user's
    names its functions read (bound when it was loaded: a module that embeds one of its
    functions binds them too)."""
    for value in namespace.values():
        if is_generated(value) and callable(value):
            try:
                _FREE[value] = dict(free)
            except TypeError:
                pass
    table = _originals()
    for name, fn in helpers.items():
        copy = namespace.get(name)
        target = table.get(fn)
        if copy is not None and target is not None:
            try:
                _COPIES[copy] = target
            except TypeError:               # not weak-referenceable: a class, say
                pass


def original(f: Any) -> Any:
    """The primitive or helper a generated module's copy stands for (else ``f`` itself)."""
    try:
        return _COPIES.get(f, f)
    except TypeError:
        return f


def split_free(free: dict[str, Any], functions: list, embedded: set[str]
               ) -> tuple[dict[str, Any], dict[str, Any]]:
    """A module's free names without the helper copies of a generated module it was compiled
    from, and those copies as helpers to define (their source printed, not bound); names
    its code never reads are left out (a transform a wrapper called, now embedded)."""
    read = {n.id for f in functions for n in ast.walk(f) if isinstance(n, ast.Name)}
    kept, helpers = {}, {}
    for name, value in free.items():
        if name not in read and name not in embedded:
            continue
        target = original(value)
        if target is value:
            kept[name] = value
        elif hasattr(target, "helper_source"):
            helpers[name] = target.helper_source
        elif hasattr(target, "fn") and name == getattr(target.fn, "__name__", None):
            helpers[name] = target.fn
    return kept, helpers


def free_of(fn: Any) -> dict[str, Any]:
    """The user's names the generated function ``fn`` (and its module) reads."""
    try:
        return _FREE.get(fn, {})
    except TypeError:
        return {}


_FACTORY: list[Any] = []


def set_node_factory(factory: Any) -> None:
    """Install how a compiled ``grad`` called inside compiled code becomes one primitive
    (:func:`srcgrad.transforms.jvp.node_primitive`, installed when it is imported)."""
    _FACTORY[:] = [factory]


def node_primitive(transform: Any) -> Any:
    """The primitive standing for a call of the compiled gradient ``transform``."""
    if not _FACTORY:
        from srcgrad.errors import CompileError
        raise CompileError("higher-order derivatives need srcgrad.transforms.jvp (import srcgrad)")
    return _FACTORY[0](transform)
