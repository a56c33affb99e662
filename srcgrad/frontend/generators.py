"""A ``for`` loop over a call of a user's generator function, expanded in place.

``for W, b in unpack(params): body`` runs the generator's statements, and at each ``yield v``
binds the loop target to ``v`` and runs ``body``: the same statements in the same order as
Python interleaves them.  The generator's parameters and locals get names of their own, its
arguments are evaluated once, at the call.  What cannot be expanded that way (``yield from``,
``return`` in the generator, ``yield`` used as a value, ``break``/``continue``/``return`` in the
loop body, a generator in another file or reading names the loop's function rebinds) is
refused, naming the construct.
"""

from __future__ import annotations

import ast
import copy
import inspect
from typing import Any, Protocol

from srcgrad.errors import CompileError
from srcgrad.frontend.parse import Env, Source, parse_function
from srcgrad.frontend.scopes import assigned, exposed_suffixes, read

__all__ = ["generator_loop"]


class Host(Protocol):
    """What the expansion reads of, and asks of, the lowerer that holds it."""

    scope: dict[str, Any]
    src: Source
    line: int
    text: str
    env: Env
    following: tuple

    def statement(self, s: ast.stmt) -> None: ...

    def fresh_internal(self, base: str) -> str: ...

    def error(self, message: str, node: ast.AST) -> CompileError: ...

    def live_after(self) -> set[str]: ...

    def live_as(self, names: set[str]) -> Any: ...


def generator_of(host: Host, s: ast.For) -> Any:
    """The user's generator function a loop iterates a call of, or None."""
    call = s.iter
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)) or \
            call.func.id in host.scope:
        return None
    try:
        fn = host.env.resolve(call.func.id)
    except Exception:  # noqa: BLE001 - refused later, as any unknown name
        return None
    return fn if inspect.isgeneratorfunction(fn) else None


def generator_loop(host: Host, s: ast.For) -> bool:
    """Lower ``s`` by expanding its generator in place; False when it iterates no user
    generator (the loop is lowered as any other)."""
    fn = generator_of(host, s)
    if fn is None:
        return False
    name = s.iter.func.id
    src = parse_function(fn, generator=True)
    node = src.node
    refuse = _refusal(host, s, fn, src)
    if refuse is not None:
        raise host.error(f"srcgrad expands a loop over the generator {name}() in place, and "
                         f"cannot here: {refuse}", s)
    own = assigned(node.body) | {a.arg for a in node.args.args}
    names = {n: host.fresh_internal(f"{name}_{n}") for n in sorted(own)}
    params = node.args.args
    defaults = dict(zip([a.arg for a in params[len(params) - len(node.args.defaults):]],
                        node.args.defaults))
    binds = []
    for i, a in enumerate(params):
        value = s.iter.args[i] if i < len(s.iter.args) else next(
            (k.value for k in s.iter.keywords if k.arg == a.arg), None)
        if value is None and not isinstance(defaults[a.arg], ast.Constant):
            raise host.error(f"srcgrad expands a loop over the generator {name}() in place, "
                             f"and cannot here: the default of {a.arg!r} is not a constant", s)
        value = defaults[a.arg] if value is None else value
        binds.append(ast.copy_location(ast.Assign([ast.Name(names[a.arg], ast.Store())],
                                                  copy.deepcopy(value)), s))
    expanded = binds + _expand([_renamed(st, names) for st in node.body], s)
    for st in binds:
        for n in ast.walk(st):
            ast.copy_location(n, s)
    where, after = host.following
    rest = exposed_suffixes(expanded)
    live = host.live_after()
    for i, st in enumerate(expanded):
        host.line, host.text = st.lineno, host.src.text(st)
        host.following = (st, expanded[i + 1:] + list(after))
        with host.live_as(rest[i + 1] | live):
            host.statement(st)
    host.following = (where, after)
    return True


def _refusal(host: Host, s: ast.For, fn: Any, src: Source) -> str | None:
    """Why the loop cannot be expanded, or None."""
    node = src.node
    call = s.iter
    if src.filename != host.src.filename:
        return "it is defined in another file"
    if s.orelse:
        return "the loop has an else block"
    for n in ast.walk(ast.Module(s.body, [])):
        if isinstance(n, (ast.Break, ast.Continue, ast.Return)):
            return f"the loop body has {type(n).__name__.lower()}"
    args = node.args
    if args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs or \
            any(isinstance(a, ast.Starred) for a in call.args) or \
            any(k.arg is None for k in call.keywords) or len(call.args) > len(args.args):
        return "only positional or named parameters are passed"
    given = {a.arg for a in args.args[:len(call.args)]} | {k.arg for k in call.keywords}
    if not {a.arg for a in args.args[:len(args.args) - len(args.defaults)]} <= given:
        return "a parameter is not passed"
    for n in ast.walk(ast.Module(node.body, [])):
        if isinstance(n, (ast.YieldFrom, ast.Return, ast.Global, ast.Nonlocal, ast.Try,
                          ast.With, ast.FunctionDef, ast.Lambda)):
            return f"the generator has {type(n).__name__}"
    yields = [n for n in ast.walk(ast.Module(node.body, [])) if isinstance(n, ast.Yield)]
    stmts = [n for n in ast.walk(ast.Module(node.body, [])) if isinstance(n, ast.Expr)
             and isinstance(n.value, ast.Yield)]
    if len(yields) != len(stmts):
        return "it uses the value of a yield"
    own = assigned(node.body) | {a.arg for a in args.args}
    outside = read(node.body) - own
    env, caller = Env(fn), host.src.node
    mine = assigned([s]) | (assigned(caller.body) | {a.arg for a in caller.args.args}
                            if isinstance(caller, ast.FunctionDef) else set())
    for name in sorted(outside):
        if name in host.scope or name in mine or _resolved(env, name) is not \
                _resolved(host.env, name):
            return f"it reads {name!r}, which means something else where the loop is"
    return None


def _resolved(env: Env, name: str) -> Any:
    try:
        return env.resolve(name)
    except Exception:  # noqa: BLE001 - unknown in both: the same
        return _UNKNOWN


_UNKNOWN = object()


def _renamed(node: ast.AST, names: dict[str, str]) -> Any:
    """A copy of ``node`` with the generator's own names replaced by their new names."""
    node = copy.deepcopy(node)
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and n.id in names:
            n.id = names[n.id]
    return node


def _expand(body: list[ast.stmt], s: ast.For) -> list[ast.stmt]:
    """The generator's statements (renamed already), each ``yield v`` replaced by
    ``target = v`` and a copy of the loop body."""
    out = []
    for st in body:
        if isinstance(st, ast.Expr) and isinstance(st.value, ast.Yield):
            value = st.value.value if st.value.value is not None else \
                ast.copy_location(ast.Constant(None), st)
            bind = ast.copy_location(ast.Assign([copy.deepcopy(s.target)], value), st)
            for n in ast.walk(bind.targets[0]):
                ast.copy_location(n, st)
            out += [bind] + copy.deepcopy(s.body)
            continue
        for field in ("body", "orelse"):
            inner = getattr(st, field, None)
            if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                setattr(st, field, _expand(inner, s))
        out.append(st)
    return out
