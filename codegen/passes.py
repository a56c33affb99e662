"""Optimisation passes over generated function bodies (plain ``ast``)."""

from __future__ import annotations

import ast
import copy
from typing import Any

__all__ = ["inline_single_use", "eliminate_dead_code", "drop_empty_comments"]


def _loads(tree: ast.AST) -> dict[str, int]:
    counts: dict[str, int] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            counts[node.id] = counts.get(node.id, 0) + 1
    return counts


def inline_single_use(fn: ast.FunctionDef, temps: set[str]) -> None:
    """Inline temporaries read exactly once and drop those never read (in place).

    Generated code has no side effects between a temporary's definition and its use, so
    moving the expression to its use keeps the meaning; temporaries read twice or more stay,
    so no computation is repeated.
    """
    counts = _loads(fn)
    defs: dict[str, ast.expr] = {}

    def visit_body(body: list[ast.stmt]) -> list[ast.stmt]:
        kept = []
        for st in body:
            if isinstance(st, ast.FunctionDef):
                st.body = visit_body(st.body)
                kept.append(st)
                continue
            st = Substitute(defs).visit(st)
            if (isinstance(st, ast.Assign) and len(st.targets) == 1
                    and isinstance(st.targets[0], ast.Name) and st.targets[0].id in temps):
                name = st.targets[0].id
                uses = counts.get(name, 0)
                if uses == 0:
                    continue
                if uses == 1:
                    defs[name] = st.value
                    continue
            kept.append(st)
        return kept

    fn.body = visit_body(fn.body)


class Substitute(ast.NodeTransformer):
    def __init__(self, defs: dict[str, ast.expr]) -> None:
        self.defs = defs

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if isinstance(node.ctx, ast.Load) and node.id in self.defs:
            return copy.deepcopy(self.defs.pop(node.id))
        return node


def drop_empty_comments(fn: ast.FunctionDef, is_comment: Any) -> None:
    """Drop comment markers that no statement follows before the next comment (in place)."""
    def clean(body: list[ast.stmt]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for st in body:
            if isinstance(st, ast.FunctionDef):
                st.body = clean(st.body)
            if out and is_comment(out[-1]) and is_comment(st):
                out.pop()
            out.append(st)
        while out and is_comment(out[-1]):
            out.pop()
        return out
    fn.body = clean(fn.body)


def eliminate_dead_code(fn: ast.FunctionDef, pure: set[str]) -> None:
    """Drop assignments to ``pure`` names that nothing reads (in place, to a fixed point).

    Only pure computations are candidates: a random draw or a call the user wrote stays even
    when its value is unused, so the forward pass keeps its effects.
    """
    while True:
        counts = _loads(fn)
        kept = [st for st in fn.body
                if not (isinstance(st, ast.Assign) and len(st.targets) == 1
                        and isinstance(st.targets[0], ast.Name) and st.targets[0].id in pure
                        and counts.get(st.targets[0].id, 0) == 0)]
        if len(kept) == len(fn.body):
            return
        fn.body = kept
