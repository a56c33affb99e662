"""Jumps rewritten as flags: ``break``/``continue`` in a loop body and ``return`` anywhere.

``break`` and ``continue`` set a flag and guard the rest of the body; an early ``return``
sets a value and a ``done`` flag, guards what follows and breaks out of loops, and the
function ends with one ``return``.  The blocks the compiler then lowers have no jumps.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Callable

from srcgrad.errors import CompileError, describe
from srcgrad.frontend.scopes import own_statements, walk

__all__ = ["Jumps", "placeholders"]


class Jumps:
    """The rewriting of jumps: the lowerer's ``jumps``.  It owns ``flags``, the names of the
    jump flags (those it writes, and a ``for … else`` loop's): never active, never
    differentiated.  ``fresh`` names a new flag, ``error`` makes the lowerer's CompileError."""

    def __init__(self, fresh: Callable[[str], str],
                 error: Callable[[str, ast.AST], CompileError]) -> None:
        self.fresh, self.error = fresh, error
        self.flags: set[str] = set()           # break/continue/return flags

    def loop_jumps(self, body: list[ast.stmt], node: ast.AST
                   ) -> tuple[list[ast.stmt], str | None]:
        """``break``/``continue`` in a loop body as flags: the rest of the body is guarded.

        Returns the new body and the name of the break flag (an extra output of the body),
        or the body unchanged and None when it has no jumps of its own.
        """
        kinds = {type(n) for n in own_statements(body) if isinstance(n, (ast.Break,
                                                                          ast.Continue))}
        if not kinds:
            return body, None
        brk = self.fresh("stop") if ast.Break in kinds else None
        skip = self.fresh("skip") if ast.Continue in kinds else None
        names = [f for f in (brk, skip) if f is not None]
        self.flags |= set(names)

        def flag(name: str, value: bool) -> ast.stmt:
            st = ast.Assign([ast.Name(name, ast.Store())], ast.Constant(value))
            for n in ast.walk(st):
                ast.copy_location(n, node)
            return st

        def rewrite(stmts: list[ast.stmt]) -> tuple[list[ast.stmt], bool]:
            out: list[ast.stmt] = []
            for i, st in enumerate(stmts):
                if isinstance(st, (ast.Break, ast.Continue)):
                    out.append(ast.copy_location(flag(brk if isinstance(st, ast.Break)
                                                      else skip, True), st))
                    return out, True
                if isinstance(st, ast.If):
                    then, j1 = rewrite(st.body)
                    orelse, j2 = rewrite(st.orelse)
                    filler = [ast.copy_location(ast.Pass(), st)]
                    out.append(ast.copy_location(ast.If(st.test, then or filler,
                                                        orelse), st))
                    if j1 or j2:
                        rest, _ = rewrite(stmts[i + 1:])
                        if rest:
                            flags = [ast.Name(f, ast.Load()) for f in names]
                            test = ast.UnaryOp(ast.Not(), flags[0] if len(flags) == 1 else
                                               ast.BoolOp(ast.Or(), flags))
                            for n in ast.walk(test):
                                ast.copy_location(n, rest[0])
                            out.append(ast.copy_location(ast.If(test, rest, []), rest[0]))
                        return out, True
                    continue
                out.append(st)
            return out, False

        new, _ = rewrite(body)
        return [flag(f, False) for f in names] + new, brk

    def early_returns(self, body: list[ast.stmt]) -> list[ast.stmt]:
        """``return`` inside branches and loops as a flag and a value, the rest guarded.

        ``if c: return a`` … ``return b`` becomes ``value = a; done = True`` in the branch,
        ``if not done:`` around what follows, and one ``return value`` at the end; inside a
        loop the return also breaks out (``break`` is then handled like any other).
        """
        nested = [n for st in body if not isinstance(st, ast.Return)
                  for n in walk([st]) if isinstance(n, ast.Return)]
        if not nested:
            return body
        value, done = self.fresh("returned"), self.fresh("done")
        self.flags.add(done)
        anchor = body[0]

        def make(text: str, where: ast.AST) -> list[ast.stmt]:
            stmts = ast.parse(text).body
            for st in stmts:
                for n in ast.walk(st):
                    ast.copy_location(n, where)
            return stmts

        def rewrite(stmts: list[ast.stmt], in_loop: bool) -> tuple[list[ast.stmt], bool]:
            out: list[ast.stmt] = []
            for i, st in enumerate(stmts):
                if isinstance(st, ast.Return):
                    assign = make(f"{value} = None\n{done} = True", st)
                    assign[0].value = st.value or ast.Constant(None)
                    out += assign + (make("break", st) if in_loop else [])
                    return out, True
                returns = False
                if isinstance(st, ast.If):
                    st.body, r1 = rewrite(st.body, in_loop)
                    st.orelse, r2 = rewrite(st.orelse, in_loop)
                    returns = r1 or r2
                elif isinstance(st, (ast.For, ast.While)):
                    st.body, returns = rewrite(st.body, True)
                elif isinstance(st, (ast.Try, ast.With)):      # each block may return
                    blocks = [st, *getattr(st, "handlers", [])]
                    done_in = [rewrite(b.body, in_loop) for b in blocks]
                    for b, (new_body, _) in zip(blocks, done_in):
                        b.body = new_body
                    returns = any(r for _, r in done_in)
                    if isinstance(st, ast.Try):    # a body that returns skips its else block
                        st.orelse, r_else = rewrite([] if done_in[0][1] else st.orelse, in_loop)
                        returns = returns or r_else
                out.append(st)
                if returns:
                    rest, _ = rewrite(stmts[i + 1:], in_loop)
                    guard = make(f"if not {done}:\n    pass", stmts[i + 1] if rest else st)
                    if in_loop:
                        out += make(f"if {done}:\n    break", st)
                    if rest:
                        guard[0].body = rest
                        out += guard
                    return out, True
            return out, False

        new, _ = rewrite(copy.deepcopy(body), False)
        return make(f"{value} = 0.0\n{done} = False", anchor) + new + make(
            f"return {value}", body[-1])

    def jumped_over(self, s: ast.If) -> bool:
        """Whether ``s`` is a guard ``if not flag:`` written for a jump (an early return, a
        ``break`` or ``continue``) with no else: its else path has jumped, and everything
        after it in the function (or the loop body) is guarded the same way, so a name the
        guarded code first assigns is never read on that path."""
        test = s.test
        if s.orelse or not (isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)):
            return False
        names = test.operand.values if isinstance(test.operand, ast.BoolOp) and isinstance(
            test.operand.op, ast.Or) else [test.operand]
        return all(isinstance(n, ast.Name) and n.id in self.flags for n in names)

    def refuse_returns(self, block: list[ast.stmt]) -> None:
        """A ``return`` left in a branch or loop (``early_returns`` rewrites the others)."""
        for n in own_statements(block):
            if isinstance(n, ast.Return):
                raise self.error(f"srcgrad cannot compile {describe(n)} inside a branch or "
                                 "loop yet", n)


def placeholders(names: list[str], lists: list[bool], node: ast.AST) -> list[ast.stmt]:
    """``name = 0.0`` (``[]`` for a list) on the path that has jumped: a value nothing
    reads, so that the names the guarded code assigns are defined on both paths."""
    out = []
    for name, is_list in zip(names, lists):
        value = ast.List([], ast.Load()) if is_list else ast.Constant(0.0)
        st = ast.Assign([ast.Name(name, ast.Store())], value)
        for n in ast.walk(st):
            ast.copy_location(n, node)
        out.append(st)
    return out
