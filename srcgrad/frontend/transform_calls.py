"""Calls of srcgrad's own transforms inside a function being compiled: higher order.

``grad(g)(x)`` inside a function that is differentiated becomes one primitive whose rules
are compiled Hessian-vector products (:func:`srcgrad.transforms.jvp.node_primitive`, reached
through :mod:`srcgrad.frontend.generated_helpers`).  ``srcgrad.jvp(g, (x,), (v,))`` becomes a call
of ``g``'s
generated jvp function, whose source is lowered like the user's own: forward-mode code is
plain code.  The transforms are read through the objects themselves (duck typing), so the
front end imports none of the driver.
"""

from __future__ import annotations

import ast
from typing import Any

from srcgrad.errors import CompileError
from srcgrad.frontend import generated_helpers as generated
from srcgrad.frontend.callees import qualname
from srcgrad.frontend.transform_wrappers import is_grad_transform
from srcgrad.ir import Const, Pack, Tree

__all__ = ["lower_transform_call"]


def lower_transform_call(lowerer: Any, f: Any, node: ast.Call) -> Any:
    """Lower the call ``node`` of the srcgrad transform ``f`` (refused when not compiled)."""
    if is_grad_transform(f) and not node.keywords:
        try:
            prim = generated.node_primitive(f)
        except CompileError as exc:
            raise lowerer.error(str(exc), node) from None
        args = [lowerer.expr(a) for a in node.args]
        if any(isinstance(a, (Pack, Tree)) or lowerer.lists.is_runtime_list(a) for a in args):
            raise lowerer.error(f"{qualname(f)}(...) inside a compiled function is compiled "
                                "for array and float arguments, not lists, tuples or dicts",
                                node)
        if len(args) != prim.nin:
            raise lowerer.error(f"{qualname(f)} takes {prim.nin} argument(s) here, "
                                f"not {len(args)}", node)
        label = node.func.id if isinstance(node.func, ast.Name) else prim.name
        return lowerer.prims.prim(prim, args, {}, f"{label}_out", node)
    jvp_of = getattr(f, "jvp_of", None)               # srcgrad.jvp, or a jvp transform
    if jvp_of is not None:
        return _jvp_call(lowerer, f, node)
    if getattr(f, "__module__", None) == "srcgrad.transforms.grad" and f.__name__ in (
            "grad", "value_and_grad"):
        return _made_here(lowerer, f, node)
    raise lowerer.error(f"{qualname(f)} is a srcgrad transform: inside a compiled function, "
                        "srcgrad compiles grad(g)(x) of one argument and srcgrad.jvp(g, "
                        "(x, ...), (v, ...)) with tuples written out", node)


def _jvp_call(lowerer: Any, f: Any, node: ast.Call) -> Any:
    """``srcgrad.jvp(g, (x, y), (u, v))`` (or ``j((x, y), (u, v))`` of ``j = jvp(g)``): a call
    of ``g``'s generated jvp function, ``g_jvp(x, y, u, v)``, which returns the pair."""
    args = list(node.args)
    if getattr(f, "fun", None) is None:               # srcgrad.jvp itself: g comes first
        if not args:
            raise lowerer.error("srcgrad.jvp needs the function to differentiate", node)
        fun = lowerer.expr(args.pop(0))
        if not isinstance(fun, Const) or not callable(fun.value):
            raise lowerer.error("srcgrad.jvp is compiled with a function known when "
                                "compiling (a global, a closure variable)", node)
        fun = fun.value
    else:
        fun = f.fun
    if len(args) != 2 or not all(isinstance(a, (ast.Tuple, ast.List)) for a in args) or \
            len(args[0].elts) != len(args[1].elts):
        raise lowerer.error("srcgrad.jvp is compiled with its primals and tangents written "
                            "as tuples of the same length: jvp(g, (x, y), (u, v))", node)
    try:
        function = f.jvp_of(fun, len(args[0].elts))
    except CompileError as exc:
        raise lowerer.error(str(exc), node) from None
    name = lowerer.fresh_internal(function.__name__)
    lowerer.free[name] = function
    call = ast.copy_location(ast.Call(ast.Name(name, ast.Load()),
                                      [*args[0].elts, *args[1].elts], []), node)
    return lowerer.calls.call(Const(function), call)


def _made_here(lowerer: Any, f: Any, node: ast.Call) -> Const:
    """``srcgrad.grad(g, wrt=...)`` of a function known when compiling: made now (strict), a
    constant the call around it then compiles (``srcgrad.grad(g)(x)``)."""
    values = [lowerer.expr(a) for a in node.args]
    keywords = {k.arg: lowerer.expr(k.value) for k in node.keywords}
    if not values or not isinstance(values[0], Const):
        raise lowerer.error(f"{qualname(f)} is compiled inside a function only of a function "
                            "defined outside it (a global or closure variable), not of a lambda "
                            "or def written inside", node)
    if not all(isinstance(v, Const) for v in [*values, *keywords.values()]):
        raise lowerer.error(f"the arguments of {qualname(f)} must be known when compiling",
                            node)
    known = {k: v.value for k, v in keywords.items() if k != "strict"}
    try:
        made = f(*[v.value for v in values], **known, strict=True)
    except (CompileError, TypeError, ValueError) as exc:
        raise lowerer.error(f"{qualname(f)}: {exc}", node) from None
    return Const(made)
