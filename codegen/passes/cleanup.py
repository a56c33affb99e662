"""Optimisation passes over generated function bodies (plain ``ast``)."""

from __future__ import annotations

import ast
import copy
from typing import Any

from srcgrad.codegen.backends.base import NUMPY, Backend

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
                if uses == 0 and not _kept(st):
                    continue
                if uses == 1 and not _kept(st):
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


def _kept(st: ast.stmt) -> bool:
    """A statement that stays even when its value is unused (a call that may raise as the
    program does: ``math.log(x)``)."""
    return getattr(st, "srcgrad_keep", False)


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
                if _kept(st) or not (isinstance(st, ast.Assign) and len(st.targets) == 1
                        and isinstance(st.targets[0], ast.Name) and st.targets[0].id in pure
                        and counts.get(st.targets[0].id, 0) == 0)]
        if len(kept) == len(fn.body):
            return
        fn.body = kept


def hoist_shapes(fn: ast.FunctionDef, backend: Backend = NUMPY) -> None:
    """A backward closure that only needs an array's shape keeps the shape, not the array.

    ``np.shape(x)`` and ``x.shape`` inside a nested function become ``x_shape``, computed
    before the nested function, when the closure reads ``x`` in no other way: the array can
    then be freed when the forward pass returns (what a tape would not keep either).
    """
    outer = {a.arg for a in fn.args.args}
    for st in fn.body:
        if isinstance(st, ast.Assign):
            for t in st.targets:
                elts = t.elts if isinstance(t, ast.Tuple) else [t]
                outer |= {e.id for e in elts if isinstance(e, ast.Name)}
    for inner in [st for st in fn.body if isinstance(st, ast.FunctionDef)]:
        hoisted = _shape_only(inner, outer)
        if hoisted:
            _ShapeNames(hoisted).visit(inner)
            shapes = [ast.Assign([ast.Name(f"{name}_shape", ast.Store())], ast.Call(
                backend.attribute("shape"), [ast.Name(name, ast.Load())], []), lineno=0)
                for name in hoisted]
            index = fn.body.index(inner)
            fn.body[index:index] = shapes


def _shape_only(inner: ast.FunctionDef, outer: set[str]) -> list[str]:
    """Outer names the nested function reads only through ``.shape`` or ``np.shape``."""
    parents = {c: p for p in ast.walk(inner) for c in ast.iter_child_nodes(p)}
    shape, data = set(), set()
    for node in ast.walk(inner):
        if not (isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)
                and node.id in outer):
            continue
        parent = parents.get(node)
        if (isinstance(parent, ast.Attribute) and parent.attr == "shape") or (
                isinstance(parent, ast.Call) and parent.args == [node]
                and isinstance(parent.func, ast.Attribute) and parent.func.attr == "shape"):
            shape.add(node.id)
        else:
            data.add(node.id)
    return sorted(shape - data)


class _ShapeNames(ast.NodeTransformer):
    """``x.shape`` and ``np.shape(x)`` written as ``x_shape`` for the names given."""

    def __init__(self, names: list[str]) -> None:
        self.names = set(names)

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        if node.attr == "shape" and isinstance(node.value, ast.Name) and \
                node.value.id in self.names:
            return ast.Name(f"{node.value.id}_shape", ast.Load())
        return self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> ast.AST:
        if (isinstance(node.func, ast.Attribute) and node.func.attr == "shape"
                and len(node.args) == 1 and isinstance(node.args[0], ast.Name)
                and node.args[0].id in self.names):
            return ast.Name(f"{node.args[0].id}_shape", ast.Load())
        return self.generic_visit(node)
