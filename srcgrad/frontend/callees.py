"""What a call calls, and with what arguments.

The kind of a callee decides how a call is lowered: a Python function of NumPy, SciPy, another
installed library or the standard library is never transformed as the user's code; a random
draw or a srcgrad transform is recognised by what it is, not by its name.  :func:`bind_call`
is the one place a call's arguments are matched to a NumPy function's signature (the lowering
of NumPy calls, of the calls lowered to several primitives and of the calls carrying a value
all use it), so that a mismatch is the same CompileError everywhere.
"""

from __future__ import annotations

import ast
import inspect
import pathlib
import sys
import sysconfig
from typing import Any

import numpy as np

from srcgrad.ir import is_generated
from srcgrad.runtime.rules.scipy_coverage import public_name

__all__ = ["bind_call", "qualname", "hint", "table_get", "is_random", "draws", "is_library",
           "is_transform", "LIBRARIES"]


def bind_call(lowerer: Any, f: Any, args: list | tuple, keywords: dict, node: ast.AST,
              name: str | None = None, signature: inspect.Signature | None = None
              ) -> dict[str, Any]:
    """``f``'s arguments by parameter name, bound by its own signature (or ``signature``).

    ``args`` and ``keywords`` are what the call passes, lowered or as AST nodes: binding does
    not look at them.  Arguments NumPy would reject (a missing one, one too many, an unknown
    keyword) are a CompileError naming ``name`` (the function as messages show it,
    :func:`qualname` by default) and the call.
    """
    try:
        sig = signature or inspect.signature(f)
        return dict(sig.bind(*args, **keywords).arguments)
    except (TypeError, ValueError) as exc:
        raise lowerer.error(f"{name or qualname(f)}(): {exc}", node) from None


def qualname(f: Any) -> str:
    """``numpy.linalg.solve``: a callee's module and name, as refusals show it."""
    public = public_name(f)                   # scipy.special.entr, scipy.linalg.inv
    if public is not None:
        return public
    module = getattr(f, "__module__", None) or ("numpy" if isinstance(f, np.ufunc) else "")
    name = getattr(f, "__qualname__", None) or getattr(f, "__name__", repr(f))
    if is_generated(f):
        return f"{name} (a helper of srcgrad's generated code, inside a derivative rule)"
    return f"{module}.{name}" if module else name


def hint(f: Any) -> str:
    """A name for the value a call of ``f`` makes."""
    name = getattr(f, "__name__", None)
    return name if isinstance(name, str) and name.isidentifier() else "value"


def table_get(table: Any, f: Any) -> Any:
    """``table[f]`` for a dict (True for a member of a set), None when absent or unhashable."""
    try:
        return table.get(f) if isinstance(table, dict) else (True if f in table else None)
    except TypeError:                               # unhashable
        return None


def is_random(f: Any) -> bool:
    """A random draw: NumPy's ``np.random`` functions and Generator/RandomState methods."""
    module = getattr(f, "__module__", "") or ""
    owner = getattr(f, "__self__", None)
    return (module.startswith("numpy.random") or isinstance(
        owner, (np.random.Generator, np.random.RandomState, np.random.BitGenerator)))


def draws(node: ast.Call) -> bool:
    """``rng.normal(...)`` of a run-time value ``rng``: named like a Generator's draw."""
    return isinstance(node.func, ast.Attribute) and not node.func.attr.startswith("_") and \
        callable(getattr(np.random.Generator, node.func.attr, None))


LIBRARIES = frozenset({"numpy", "scipy", "autograd", "jax", "jaxlib", "torch", "pandas",
                       "sklearn", "matplotlib", "networkx", "sympy", "numba"})
"""Packages whose Python functions are never transformed as the user's code: a call of one
that no table covers is refused by name.  So is a function of any module installed in
``site-packages`` or of the standard library (:func:`is_library`)."""

_STDLIB = pathlib.Path(sysconfig.get_paths()["stdlib"]).resolve()


def is_library(f: Any) -> bool:
    """A Python function of NumPy, SciPy, another installed library or the standard library:
    srcgrad has no rule for it, and its source is not the user's to transform."""
    module = getattr(getattr(f, "__func__", f), "__module__", None)
    if not isinstance(module, str) or not module:
        return False
    if module.partition(".")[0] in LIBRARIES:
        return True
    path = getattr(sys.modules.get(module), "__file__", None)
    if not isinstance(path, str):
        return False
    parts = pathlib.Path(path).resolve().parts
    return "site-packages" in parts or "dist-packages" in parts or pathlib.Path(
        path).resolve().is_relative_to(_STDLIB)


def is_transform(f: Any) -> bool:
    """A srcgrad transform, or ``srcgrad.grad``/``value_and_grad``/``vjp`` themselves."""
    api = sys.modules.get("srcgrad.transforms.grad")  # read: the API imports the compiler
    forward = sys.modules.get("srcgrad.transforms.jvp")
    return api is not None and (isinstance(f, api.Transform) or any(f is t for t in (
        api.grad, api.value_and_grad, api.vjp))) or forward is not None and (
        f is forward.jvp or isinstance(f, forward.Jvp))
