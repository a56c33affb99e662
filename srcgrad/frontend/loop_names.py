"""Names a loop binds first and the code after it reads (``for ...: z_new = f(z)`` …
``return z_new``).  Python binds them when the loop ran at least once, and reading one after
a loop that did not run raises UnboundLocalError.  The compiled loop carries each such name
(from a placeholder no one reads) and a flag its body sets; after the loop, the generated code
raises Python's UnboundLocalError where the flag is not set.  Compiled when the body binds the
name before anything that may skip the rest of it, and the statement right after the loop
reads it whatever path it takes; otherwise the loop refuses the name as before.
"""

from __future__ import annotations

import ast
import contextlib
from collections.abc import Iterator
from typing import Any, Protocol

from srcgrad.errors import CompileError
from srcgrad.frontend.effects import Effects
from srcgrad.frontend.jumps import Jumps
from srcgrad.frontend.scopes import assigned, exposed, read
from srcgrad.ir import Var

__all__ = ["late_bound", "checking_bound"]


class Host(Protocol):
    """What this reads of, and asks of, the lowerer lowering the loop."""

    scope: dict[str, Any]
    runtime_lists: set[str]            # names of Python lists built at run time
    following: tuple                   # the statement being lowered, and those after it
    in_block: bool                     # a branch or loop body (it ends with its outputs)
    jumps: Jumps
    effects: Effects

    def statement(self, s: ast.stmt) -> None: ...

    def fresh_internal(self, base: str) -> str: ...

    def error(self, message: str, node: ast.AST) -> CompileError: ...

    def live_after(self) -> set[str]: ...

    def live_as(self, names: set[str]) -> contextlib.AbstractContextManager: ...


def late_bound(host: Host, s: ast.stmt, body: list[ast.stmt], test: ast.expr | None,
               counter: str, orelse: list[ast.stmt] | None
               ) -> tuple[list[ast.stmt], list[tuple[str, str, bool]]]:
    """Names a loop body assigns first, read right after the loop (``for ...: z_new =
    f(z)`` … ``return z_new``): bound there when the loop ran, which a flag the body sets
    records.  They get a value no one reads before the loop; :func:`checking_bound` raises
    Python's UnboundLocalError after it when the loop did not run.  Returns the body
    (setting the flag first) and, for each name, (name, flag, whether its placeholder is a
    list); the body unchanged and none where some such name is not compiled that way (the
    loop refuses it)."""
    outer = read([test]) if test is not None else set()
    late = sorted(n for n in assigned(body) if n not in host.scope and n != counter
                  and n in host.live_after() and n not in outer)
    where, after = host.following
    if not late or orelse or where is None or (where.lineno, where.col_offset) != (
            s.lineno, s.col_offset) or not after:
        return body, []
    first = _set_first(body)
    if any(n not in first or n in exposed(body) or not _reads_now(after[0], n) or
           host.in_block and len(after) == 1 for n in late):   # a block's own return
        return body, []
    order = _read_order(after[0])                 # the first read raises, as in Python
    late.sort(key=lambda n: order.index(n) if n in order else len(order))
    pairs = [(n, host.fresh_internal("bound"), first[n]) for n in late]   # a list's is []
    text = "\n".join([f"{n} = {'[]' if first[n] else '0.0'}" for n in late] +
                     [f"{f} = False" for _, f, _ in pairs])
    for st in _made(text, s):
        host.statement(st)
    host.jumps.flags.update(f for _, f, _ in pairs)
    return _made("\n".join(f"{f} = True" for _, f, _ in pairs), s) + body, pairs


@contextlib.contextmanager
def checking_bound(host: Host, pairs: list[tuple[str, str, bool]], s: ast.stmt,
                   read_after: set[str]) -> Iterator[None]:
    """The loop lowered inside it carries the flags (and keeps ``read_after``, what its
    else block reads); after it, Python's UnboundLocalError for a name the loop did not
    bind."""
    with host.live_as(host.live_after() | {flag for _, flag, _ in pairs} | read_after):
        yield
    for name, flag, listed in pairs:
        value = host.scope.get(name)
        if isinstance(value, Var) and (value.name in host.runtime_lists) != listed:
            raise host.error(f"{name!r} is first assigned inside the loop (a list made there, "
                             "or changed there, other than by a literal) and used after it; "
                             "give it a value before the loop", s)
        message = f"cannot access local variable {name!r} where it is not associated " \
                  "with a value"
        check = _made(f"if not {flag}:\n    raise UnboundLocalError({message!r})", s)[0]
        host.effects.effect(check)


def _made(text: str, where: ast.AST) -> list[ast.stmt]:
    """Statements parsed from ``text``, placed at ``where``'s line."""
    stmts = ast.parse(text).body
    for st in stmts:
        for n in ast.walk(st):
            ast.copy_location(n, where)
    return stmts


def _reads_now(st: ast.stmt, name: str) -> bool:
    """Whether ``st`` reads ``name`` whenever it runs (not in a lambda, a comprehension, one
    side of a conditional expression or the right of ``and``/``or``)."""
    if isinstance(st, (ast.Try, ast.With)) and st.body:     # its first statement runs
        return _reads_now(st.body[0], name)
    part = {ast.If: "test", ast.While: "test", ast.For: "iter"}.get(type(st), "value")
    if not isinstance(
            st, (ast.Return, ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Expr, ast.If,
                 ast.While, ast.For)):
        return False
    stack = [getattr(st, part, None)]
    if isinstance(st, ast.AugAssign) and isinstance(st.target, ast.Name):
        stack.append(st.target)
    while stack:
        node = stack.pop()
        if node is None or isinstance(node, (ast.Lambda, ast.ListComp, ast.SetComp,
                                             ast.GeneratorExp, ast.DictComp)):
            continue
        if isinstance(node, ast.Name) and node.id == name:
            return True
        if isinstance(node, ast.IfExp):
            stack.append(node.test)
        elif isinstance(node, ast.BoolOp):
            stack.append(node.values[0])
        else:
            stack.extend(ast.iter_child_nodes(node))
    return False


def _read_order(st: ast.stmt) -> list[str]:
    """The names ``st`` reads, in the order Python evaluates them (its value first)."""
    if isinstance(st, (ast.Try, ast.With)) and st.body:
        return _read_order(st.body[0])
    out: list[str] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            out.append(node.id)
        for child in ast.iter_child_nodes(node):
            visit(child)
    part = {ast.If: "test", ast.While: "test", ast.For: "iter"}.get(type(st), "value")
    visit(getattr(st, part, None) or st)
    visit(st)
    return out


def _set_first(body: list[ast.stmt]) -> dict[str, bool]:
    """The names a loop body assigns before anything in it may skip the rest (a ``break``,
    a ``continue``, a ``return``, a branch or a nested loop) → whether the first value is a
    list literal or comprehension."""
    names: dict[str, bool] = {}
    for st in body:
        if not isinstance(st, (ast.Assign, ast.AnnAssign, ast.Expr, ast.Pass)) or any(
                isinstance(n, (ast.Break, ast.Continue, ast.Return)) for n in ast.walk(st)):
            break
        targets = st.targets if isinstance(st, ast.Assign) else \
            [st.target] if isinstance(st, ast.AnnAssign) else []
        for t in targets:
            if all(isinstance(n, (ast.Name, ast.Tuple, ast.List, ast.Store)) for n in ast.walk(t)):
                listed = isinstance(t, ast.Name) and isinstance(st.value, (ast.List, ast.ListComp))
                for n in ast.walk(t):
                    if isinstance(n, ast.Name):
                        names.setdefault(n.id, listed)
    return names
