"""A compiled ``grad`` given to another transform: the plain function that calls it.

``grad(grad(f))``, ``jacrev(grad(f))``, ``hessian(grad(f))``: the outer transform compiles
``def f_grad(x): return f_grad_compiled(x)``, whose source is registered here, and the
front end lowers the call of the compiled gradient as one primitive whose rules are compiled
Hessian-vector products (:func:`srcgrad.transforms.jvp.node_primitive`).  This module reads the
API's ``Transform`` class from ``sys.modules`` and imports no transform, so the API may use
it without a cycle.
"""

from __future__ import annotations

import hashlib
import inspect
import linecache
import os
import sys
from collections.abc import Callable
from typing import Any

__all__ = ["is_grad_transform", "transform_function"]

_WRAPPERS: dict[Any, Callable] = {}


def is_grad_transform(fun: Any) -> bool:
    """A compiled-or-compilable ``grad`` of one positional argument (a Hessian's input)."""
    api = sys.modules.get("srcgrad.transforms.grad")
    return api is not None and isinstance(fun, api.Transform) and fun.kind == "grad" and \
        fun._single and fun._positions is None and not fun._prefix


def transform_function(transform: Any) -> Callable:
    """A plain function that calls the compiled ``transform`` (``def g_grad(x): return
    g_grad_compiled(x)``), its source registered, so that the compiler can transform it."""
    made = _WRAPPERS.get(transform)
    if made is not None:
        return made
    names = list(inspect.signature(transform._target).parameters)
    base = getattr(transform.__wrapped__, "__name__", "f")
    base = "lambda" if base == "<lambda>" else base if base.isidentifier() else "function"
    name, inner = f"{base}_{transform.kind}", f"{base}_{transform.kind}_compiled"
    code = getattr(transform._target, "__code__", None)
    where = f"{os.path.basename(code.co_filename)}:{code.co_firstlineno}" if code is not None \
        else base
    where = "".join(c if c.isprintable() else repr(c)[1:-1] for c in where)   # one line
    text = (f"def {name}({', '.join(names)}):\n    # {where}  {transform.kind} of {base}\n"
            f"    return {inner}({', '.join(names)})\n")
    digest = hashlib.sha1(text.encode()).hexdigest()[:10]
    filename = f"<srcgrad {name} of a transform {digest}>"
    linecache.cache[filename] = (len(text), None, text.splitlines(keepends=True), filename)
    namespace: dict[str, Any] = {inner: transform, "__name__": "__srcgrad_wrapper__"}
    exec(compile(text, filename, "exec"), namespace)
    made = _WRAPPERS[transform] = namespace[name]
    return made
