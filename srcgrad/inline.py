"""Calls lowered in place: a lambda called where it is written, and a user function given a
list or tuple (its body is lowered with its parameters bound to the very values passed, so
``for x in xs`` over a list literal, ``a, b = pair`` and ``len(xs)`` mean what they mean in
Python).  The callee's names live in a scope of their own; its globals and closure are its
own (a free name that the caller reads with another value is refused, not confused).
"""

from __future__ import annotations

import ast
import inspect
from typing import Any

from srcgrad.ir import Const

__all__ = ["lambda_call", "inline_call"]


def lambda_call(lowerer: Any, fn: ast.Lambda, node: ast.Call) -> Any:
    """``(lambda u: body)(x)`` (or a lambda bound to a name, then called): the body, with
    its parameters bound to the arguments in the scope of the call (late binding)."""
    params = fn.args
    if params.vararg or params.kwarg or params.kwonlyargs or params.posonlyargs or \
            params.defaults or any(isinstance(a, ast.Starred) for a in node.args) or \
            any(k.arg is None for k in node.keywords):
        raise lowerer.error("srcgrad compiles a lambda called with plain positional "
                            "parameters", node)
    names = [a.arg for a in params.args]
    given = {k.arg: k.value for k in node.keywords}
    if len(node.args) > len(names) or set(given) - set(names[len(node.args):]) or \
            len(node.args) + len(given) != len(names):
        raise lowerer.error("the arguments of this lambda do not match its parameters", node)
    values = [lowerer.expr(a) for a in node.args] + [lowerer.expr(given[n])
                                                     for n in names[len(node.args):]]
    saved = {n: lowerer.scope[n] for n in names if n in lowerer.scope}
    try:
        for n, v in zip(names, values):
            lowerer.scope[n] = v
        return lowerer.expr(fn.body)
    finally:
        for n in names:
            lowerer.scope.pop(n, None)
        lowerer.scope.update(saved)


def inline_call(lowerer: Any, callee: Any, values: list, keywords: dict, node: ast.Call
                ) -> Any:
    """``callee(*values, **keywords)`` lowered in place (a list or tuple among them)."""
    from srcgrad.frontend import Env, parse_function
    name = getattr(callee, "__name__", "helper")
    stack = lowerer.__dict__.setdefault("_inlining", [])
    if callee in stack:
        raise lowerer.error(f"{name} calls itself with a list (recursion is not compiled)",
                            node)
    src = parse_function(callee)
    args = src.node.args
    if args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs:
        raise lowerer.error(f"{name}() takes *args, **kwargs or keyword-only parameters, "
                            "which srcgrad does not compile", node)
    try:
        bound = inspect.signature(callee).bind(*values, **keywords)
    except TypeError as exc:
        raise lowerer.error(f"{name}(): {exc}", node) from None
    bound.apply_defaults()
    scope = {k: v if not _plain_default(v) else Const(v) for k, v in bound.arguments.items()}
    if isinstance(src.node, ast.Lambda):
        body: list[ast.stmt] = [ast.copy_location(ast.Return(src.node.body), src.node.body)]
    else:
        body = src.node.body
    saved = (lowerer.src, lowerer.env, lowerer.scope, lowerer.result_name, lowerer._live,
             lowerer.line, lowerer.text)
    lowerer.src, lowerer.env, lowerer.scope = src, Env(callee), scope
    lowerer.result_name, lowerer._live = f"{name}_out", []
    stack.append(callee)
    try:
        result = lowerer.block(lowerer.early_returns(body), structure=True)
    finally:
        stack.pop()
        (lowerer.src, lowerer.env, lowerer.scope, lowerer.result_name, lowerer._live,
         lowerer.line, lowerer.text) = saved
    return result


def _plain_default(value: Any) -> bool:
    from srcgrad.expressions import Closure, Pack, Tree
    from srcgrad.ir import Var
    return not isinstance(value, (Var, Const, Pack, Tree, Closure))
