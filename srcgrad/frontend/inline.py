"""Calls lowered in place: a lambda or a nested ``def`` called where it is written, and a
user function given a list or tuple (its body is lowered with its parameters bound to the very
values passed, so ``for x in xs`` over a list literal, ``a, b = pair`` and ``len(xs)`` mean what
they mean in Python).  The callee's names live in a scope of their own; its globals and closure
are its own (a free name that the caller reads with another value is refused, not confused).

A nested ``def`` (or a lambda bound to a name) is a closure over the enclosing function's
names.  It is compiled when the names it reads from there are not assigned again after it is
defined: its value at each call is then the one it had when it was defined, as in Python, and
a loop or branch that calls it is handed those names too.
"""

from __future__ import annotations

import ast
import contextlib
import inspect
from typing import Any, Protocol

from srcgrad.errors import CompileError
from srcgrad.frontend.jumps import Jumps
from srcgrad.frontend.parse import Env, Source, parse_function
from srcgrad.frontend.scopes import assigned, exposed, read, walk
from srcgrad.ir import Closure, Const, constant, value_expr

__all__ = ["lambda_call", "inline_call", "define", "closure_reads", "live_in"]

_DEPTH = 32                 # nested calls of closures lowered in place, at most


class Host(Protocol):
    """What lowering in place reads of, and asks of, the lowerer: the function's source and
    names, and the bodies being lowered in place (a recursion among them is refused)."""

    src: Source
    scope: dict[str, Any]
    free: dict[str, Any]               # the module's globals, bound when it loads
    in_block: bool                     # a branch or loop body, lowered as a function
    closure_stack: list[ast.AST]       # closures being lowered in place, innermost last
    inlining: list[Any]                # helpers being lowered in place, innermost last
    jumps: Jumps

    def expr(self, node: ast.expr) -> Any: ...

    def block(self, stmts: list[ast.stmt], structure: bool = False) -> Any: ...

    def body_of(self, scope: dict[str, Any], result_name: str, src: Source | None = None,
                env: Env | None = None) -> contextlib.AbstractContextManager[None]: ...

    def fresh_internal(self, base: str) -> str: ...

    def error(self, message: str, node: ast.AST) -> CompileError: ...


def define(lowerer: Host, node: ast.stmt, rest: list[ast.stmt]) -> bool:
    """``def inner(...): ...`` in the function: a closure bound to its name (False: ``node``
    is another statement).  A walrus (``:=``) anywhere in ``node`` is refused."""
    walrus = next((n for n in walk([node]) if isinstance(n, ast.NamedExpr)), None)
    if walrus is not None:
        raise lowerer.error("srcgrad cannot compile the walrus operator (:=) yet; assign "
                            "the value in a statement of its own", walrus)
    if not isinstance(node, ast.FunctionDef):
        return False
    if lowerer.in_block:
        raise lowerer.error("srcgrad compiles a nested function defined at the top level of "
                            "the function, not inside a loop or branch", node)
    if node.decorator_list:
        raise lowerer.error("srcgrad cannot compile a decorated nested function", node)
    bad = next((n for n in ast.walk(node) if isinstance(n, (
        ast.Nonlocal, ast.Global, ast.Yield, ast.YieldFrom, ast.Await, ast.ClassDef,
        ast.AsyncFunctionDef))), None)
    if bad is not None:
        what = {ast.Nonlocal: "nonlocal", ast.Global: "global", ast.ClassDef: "a class"}.get(
            type(bad), "yield or await")
        raise lowerer.error(f"srcgrad cannot compile {what} in a nested function", bad)
    params = {a.arg for a in ast.walk(node.args) if isinstance(a, ast.arg)}
    written = sorted(assigned(node.body) - _locals(node) - params)
    if written:
        raise lowerer.error(f"the nested function {node.name}() writes in place into "
                            f"{written[0]!r} of the enclosing function, which srcgrad does "
                            "not compile (return the new value instead)", node)
    closure = Closure(node)
    closure.defaults = _defaults(lowerer, node.args, node)
    free = _free_names(node)
    closure.outer = {a.arg for a in ast.walk(lowerer.src.node.args) if isinstance(a, ast.arg)}
    closure.outer |= assigned(list(lowerer.src.node.body)) | set(lowerer.scope)
    again = sorted(free & assigned(rest))
    if again:
        raise lowerer.error(f"the nested function {node.name}() reads {again[0]!r}, which is "
                            "assigned again after it is defined; srcgrad compiles closures "
                            "over names that keep their value (pass it as an argument)", node)
    lowerer.scope[node.name] = closure
    return True


def closure_reads(scope: dict, names: set[str]) -> set[str]:
    """``names`` and the names that the closures among them read from the enclosing scope."""
    out, todo = set(names), list(names)
    while todo:
        value = scope.get(todo.pop())
        if isinstance(value, Closure):
            for n in _free_names(value.node) - out:
                out.add(n)
                todo.append(n)
    return out


def lambda_call(lowerer: Host, fn: ast.Lambda | ast.FunctionDef, node: ast.Call,
                closure: Closure | None = None) -> Any:
    """``(lambda u: body)(x)``, or a call of a lambda or nested ``def`` bound to a name: the
    body, with its parameters bound to the arguments."""
    params = fn.args
    if params.vararg or params.kwarg or params.kwonlyargs or params.posonlyargs or \
            any(isinstance(a, ast.Starred) for a in node.args) or \
            any(k.arg is None for k in node.keywords):
        raise lowerer.error("srcgrad compiles a lambda or nested function called with plain "
                            "positional parameters", node)
    defaults = getattr(closure, "defaults", None)
    if defaults is None:
        defaults = _defaults(lowerer, params, node)
    names = [a.arg for a in params.args]
    given = {k.arg: k.value for k in node.keywords}
    values = [lowerer.expr(a) for a in node.args]
    if len(node.args) > len(names) or set(given) - set(names[len(node.args):]):
        raise lowerer.error("the arguments of this call do not match the parameters", node)
    for n in names[len(node.args):]:
        if n in given:
            values.append(lowerer.expr(given[n]))
        elif n in defaults:
            values.append(Const(defaults[n]))
        else:
            raise lowerer.error(f"the call gives no value for the parameter {n!r}", node)
    stack = lowerer.closure_stack
    if len(stack) >= _DEPTH or isinstance(fn, ast.FunctionDef) and fn in stack:
        raise lowerer.error("a nested function that calls itself is not compiled (recursion)",
                            node)
    if isinstance(fn, ast.FunctionDef):
        return _def_call(lowerer, fn, dict(zip(names, values)), node, stack, closure)
    saved = {n: lowerer.scope[n] for n in names if n in lowerer.scope}
    stack.append(fn)
    try:
        for n, v in zip(names, values):
            lowerer.scope[n] = v
        return lowerer.expr(fn.body)
    finally:
        stack.pop()
        for n in names:
            lowerer.scope.pop(n, None)
        lowerer.scope.update(saved)


def inline_call(lowerer: Host, callee: Any, values: list, keywords: dict, node: ast.Call
                ) -> Any:
    """``callee(*values, **keywords)`` lowered in place (a list or tuple among them)."""
    name = getattr(callee, "__name__", "helper")
    stack = lowerer.inlining
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
    scope = {k: v if not _plain_default(v) else default_const(lowerer, v)
             for k, v in bound.arguments.items()}
    if isinstance(src.node, ast.Lambda):
        body: list[ast.stmt] = [ast.copy_location(ast.Return(src.node.body), src.node.body)]
    else:
        body = src.node.body
    stack.append(callee)
    try:
        with lowerer.body_of(scope, f"{name}_out", src, Env(callee)):
            return lowerer.block(lowerer.jumps.early_returns(body), structure=True)
    finally:
        stack.pop()


def _def_call(lowerer: Host, fn: ast.FunctionDef, bound: dict, node: ast.Call,
              stack: list, closure: Closure | None) -> Any:
    """The body of a nested ``def``, in a scope of its own: its parameters, the enclosing
    names it reads, and its own locals (assigning one never changes the enclosing name)."""
    local = _locals(fn) - set(bound)
    early = exposed(fn.body) & local - {n.name for n in fn.body
                                        if isinstance(n, ast.FunctionDef)}
    if early:
        raise lowerer.error(f"{fn.name}() reads {sorted(early)[0]!r} before assigning it",
                            node)
    missing = sorted(n for n in _free_names(fn) if n not in lowerer.scope and
                     n in getattr(closure, "outer", ()))
    if missing:
        raise lowerer.error(f"{fn.name}() reads {missing[0]!r}, which has no value here",
                            node)
    scope = {n: v for n, v in lowerer.scope.items() if n not in local}
    scope.update(bound)
    stack.append(fn)
    try:
        with lowerer.body_of(scope, f"{fn.name}_out"):
            return lowerer.block(lowerer.jumps.early_returns(list(fn.body)), structure=True)
    finally:
        stack.pop()


def _free_names(fn: ast.Lambda | ast.FunctionDef) -> set[str]:
    """The names a lambda or nested function reads from the scope around it."""
    params = {a.arg for a in ast.walk(fn.args) if isinstance(a, ast.arg)}
    if isinstance(fn, ast.Lambda):
        return read([fn.body]) - params
    inner = read(fn.body)
    for n in fn.body:                            # defs nested in it read theirs too
        if isinstance(n, ast.FunctionDef):
            inner |= _free_names(n)
    return inner - params - _locals(fn)


def _locals(fn: ast.FunctionDef) -> set[str]:
    """The names a nested function binds (its own: assigning one is not seen outside)."""
    return {n.id for n in walk(fn.body) if isinstance(n, ast.Name) and
            isinstance(n.ctx, ast.Store)} | {n.name for n in fn.body
                                             if isinstance(n, ast.FunctionDef)}


def live_in(scope: dict, stmts: list[ast.stmt]) -> set[str]:
    """What ``stmts`` read before assigning, with what the closures they call or define
    read (a name a closure reads is live wherever the closure may still be called)."""
    names = exposed(stmts)
    for st in stmts:
        if isinstance(st, ast.FunctionDef):
            names |= _free_names(st)
    return closure_reads(scope, names)


def _defaults(lowerer: Host, params: ast.arguments, node: ast.AST) -> dict:
    """Default values of parameters, literals only (Python evaluates them once, when the
    function is defined)."""
    out = {}
    for a, d in zip(params.args[len(params.args) - len(params.defaults):], params.defaults):
        try:
            out[a.arg] = ast.literal_eval(d)
        except (ValueError, SyntaxError):
            raise lowerer.error("srcgrad compiles literal default values of a lambda or "
                                "nested function", d) from None
    return out


def default_const(lowerer: Host, value: Any) -> Const:
    """A default value a call leaves out: a literal, or (a stream, an array, an object) a
    name of the generated module's bound to it, as Python evaluated it once."""
    try:
        value_expr(value)
    except TypeError:
        name = lowerer.fresh_internal("default")
        lowerer.free[name] = value
        return constant(value, ast.Name(name, ast.Load()))
    return Const(value)


def _plain_default(value: Any) -> bool:
    from srcgrad.ir import Closure, Pack, Tree, Var
    return not isinstance(value, (Var, Const, Pack, Tree, Closure))
