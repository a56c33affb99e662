"""Calls lowered in place: a lambda or a nested ``def`` called where it is written, and a
user function given a list or tuple (its body is lowered with its parameters bound to the very
values passed, so ``for x in xs`` over a list literal, ``a, b = pair`` and ``len(xs)`` mean what
they mean in Python).  The callee's names live in a scope of their own; its globals and closure
are its own (a free name that the caller reads with another value is refused, not confused).

A nested ``def`` (or a lambda bound to a name) is a closure over the enclosing function's
names, defined anywhere in it (in a loop or branch too).  As in Python, it reads those names'
values when it is called (late binding): the values they hold in scope at the call, which a
loop or branch that calls it is handed too.
"""

from __future__ import annotations

import ast
import contextlib
import copy
import inspect
import itertools
from typing import Any, Protocol

from srcgrad.errors import CompileError
from srcgrad.frontend.dead_results import discarding_caller
from srcgrad.frontend.jumps import Jumps
from srcgrad.frontend.local_objects import implicit_return, receiver_key
from srcgrad.frontend.parse import Env, Source, parse_function
from srcgrad.frontend.scopes import assigned, exposed, read, walk
from srcgrad.ir import Closure, Const, Pack, constant, value_expr

__all__ = ["lambda_call", "inline_call", "define", "closure_reads", "live_in", "capture",
           "escaping", "bindings_of"]

_DEPTH = 32                 # nested calls of closures lowered in place, at most


class Host(Protocol):
    """What lowering in place reads of, and asks of, the lowerer: the function's source and
    names, and the bodies being lowered in place (a recursion among them is refused)."""

    src: Source
    env: Env
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
    closure.outer = {a.arg for a in ast.walk(lowerer.src.node.args) if isinstance(a, ast.arg)}
    closure.outer |= assigned(list(lowerer.src.node.body)) | set(lowerer.scope)
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
    _same_globals(lowerer, closure, node)
    stack = lowerer.closure_stack
    if len(stack) >= _DEPTH or isinstance(fn, ast.FunctionDef) and fn in stack:
        raise lowerer.error("a nested function that calls itself is not compiled (recursion)",
                            node)
    if isinstance(fn, ast.FunctionDef):
        return _def_call(lowerer, fn, dict(zip(names, values)), node, stack, closure)
    saved = {n: lowerer.scope[n] for n in names if n in lowerer.scope}
    extra = {k: v for k, v in {**_bindings(closure), **_bindings(Pack(values))}.items()
             if k not in lowerer.scope}       # what captured closures read: while it runs
    stack.append(fn)
    try:
        lowerer.scope.update(extra)
        for n, v in zip(names, values):
            lowerer.scope[n] = v
        return escaping(lowerer, lowerer.expr(fn.body), set(names))    # its parameters go
    finally:
        stack.pop()
        for n in [*names, *extra]:
            lowerer.scope.pop(n, None)
        lowerer.scope.update(saved)


def inline_call(lowerer: Host, callee: Any, values: list, keywords: dict, node: ast.Call
                ) -> Any:
    """``callee(*values, **keywords)`` lowered in place (a list or tuple among them)."""
    name = getattr(callee, "__name__", "helper")
    stack, key = lowerer.inlining, receiver_key(callee, values)   # a method: with its object
    if key in stack or len(stack) >= _DEPTH:
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
    scope.update(_bindings(Pack(list(scope.values()))))   # what closures passed on read
    if isinstance(src.node, ast.Lambda):
        body: list[ast.stmt] = [ast.copy_location(ast.Return(src.node.body), src.node.body)]
    else:
        body = src.node.body + implicit_return(callee, src.node)   # __init__ returns None
        src, body = discarding_caller(lowerer, node, src, body)   # out, _ = f(x): _ unread
    stack.append(key)
    try:
        with lowerer.body_of(scope, f"{name}_out", src, Env(callee)):
            return escaping(lowerer, lowerer.block(lowerer.jumps.early_returns(body),
                                                   structure=True))
    finally:
        stack.pop()


def _bindings(value: Any) -> dict:
    """What a captured closure reads (its renamed free names, bound to their values), of it
    or of the closures a literal holds."""
    if isinstance(value, Pack):
        return {k: v for item in value.items for k, v in _bindings(item).items()}
    return dict(getattr(value, "bindings", {}))


def capture(lowerer: Host, closure: Closure, only: set[str] | None = None) -> Closure:
    """A copy of ``closure`` that reads none of the names ``only`` (None: no name of the
    scope it is in): they are renamed to keys no user name can be (they hold a space), bound
    in ``bindings`` to the values those names hold now.  It can then be called where those
    names are gone (a helper it is passed to, the caller of the function or lambda that made
    it); the values are those Python's late binding reads where the names cannot be assigned
    again meanwhile (the caller checks that of its own names:
    :func:`srcgrad.frontend.callbacks.passed_on`)."""
    node, own = closure.node, _bindings(closure)
    free = sorted(_free_names(node))
    inner = next((a for a in ast.walk(node) if isinstance(a, ast.arg) and a.arg in free), None)
    if inner is not None:
        raise lowerer.error("srcgrad cannot pass on or return a function whose inner function "
                            f"has a parameter {inner.arg!r} named as a variable it reads",
                            inner)
    renames, bindings, known = {}, {}, dict(getattr(closure, "globals", {}))
    for n in free:
        if only is not None and n not in only:
            continue                                    # the scope it stays in has it
        if n not in own and n not in lowerer.scope:     # a global: read where it is called
            with contextlib.suppress(Exception):       # unresolved: Python's NameError there
                known.setdefault(n, lowerer.env.resolve(n))
            continue
        renames[n] = f"{n.split(' ')[0]} captured {next(_KEYS)}"
        bindings[renames[n]] = own[n] if n in own else lowerer.scope[n]
    new = copy.copy(closure)
    new.node = copy.deepcopy(node)
    for n in ast.walk(new.node):
        if isinstance(n, ast.Name) and n.id in renames:
            n.id = renames[n.id]
    if hasattr(closure, "outer"):
        new.outer = {renames.get(n, n) for n in closure.outer}
    kept = {k: v for k, v in own.items() if k not in renames}      # its own keys stay
    new.bindings, new.globals = {**kept, **bindings}, known
    return new


def _same_globals(lowerer: Host, closure: Any, node: ast.AST) -> None:
    """Refuse calling a captured closure where a global it reads means something else (a
    helper of another module it was passed to)."""
    for n, value in getattr(closure, "globals", {}).items():
        try:
            same = n not in lowerer.scope and lowerer.env.resolve(n) is value
        except Exception:  # noqa: BLE001 - unresolved here
            same = False
        if not same:
            raise lowerer.error(f"a function passed on reads the global {n!r}, which is "
                                "another value where it is called; srcgrad does not compile "
                                "that (pass the value as an argument)", node)


def escaping(lowerer: Host, value: Any, only: set[str] | None = None) -> Any:
    """A value leaving the scope it was made in (a lambda's or helper's result, an argument
    passed on): its closures captured (:func:`capture`), of the names ``only`` that leave
    with it (None: every name of the scope)."""
    if isinstance(value, Pack) and _holds_closure(value):     # else the very literal
        out = copy.copy(value)
        out.items = [escaping(lowerer, v, only) for v in value.items]
        return out
    return capture(lowerer, value, only) if isinstance(value, Closure) else value


def _holds_closure(value: Any) -> bool:
    if isinstance(value, Pack):
        return any(_holds_closure(v) for v in value.items)
    return isinstance(value, Closure)


bindings_of = _bindings
_KEYS = itertools.count()


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
    captured = {**_bindings(closure), **_bindings(Pack(list(bound.values())))}
    scope.update({k: v for k, v in captured.items() if k not in scope})   # a block's own first
    scope.update(bound)
    stack.append(fn)
    try:
        with lowerer.body_of(scope, f"{fn.name}_out"):
            return escaping(lowerer, lowerer.block(lowerer.jumps.early_returns(
                list(fn.body)), structure=True), local | set(bound))   # its own names go
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
    from srcgrad.frontend.local_objects import Record
    from srcgrad.ir import Closure, Pack, Tree, Var
    return not isinstance(value, (Var, Const, Pack, Tree, Closure, Record))
