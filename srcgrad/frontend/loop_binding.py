"""A loop run at run time over a sequence: its target bound from the counter (``x = xs[k]``,
``i, x = k, xs[k]`` for ``enumerate``, ``xs[-1 - k]`` for ``reversed`` …) and its trip count,
computed once before the loop as Python evaluates the iterable once."""

from __future__ import annotations

import ast
import copy
from typing import Any

__all__ = ["target_binding", "trip_expr"]


def target_binding(s: ast.For, counter: str) -> tuple[ast.stmt, Any]:
    """The statement that binds the loop target from the counter, and the length of the
    iterable (as :func:`trip_expr` reads it)."""
    it = s.iter
    k = ast.Name(counter, ast.Load())

    def assign(target: ast.expr, value: ast.expr) -> ast.stmt:
        st = ast.Assign([copy.deepcopy(target)], value)
        for n in ast.walk(st):
            ast.copy_location(n, s)
        return st

    def sequence(node: ast.expr) -> tuple[list[ast.expr], Any]:
        """Element expressions (by the counter) and the length of an iterable."""
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id == "range" and not node.keywords:
                start, stop, step = _range_args(node.args)
                value: ast.expr = k
                if not (isinstance(step, ast.Constant) and step.value == 1):
                    value = ast.BinOp(value, ast.Mult(), step)
                if not (isinstance(start, ast.Constant) and start.value == 0):
                    value = ast.BinOp(start, ast.Add(), value)
                return [value], ("range", start, stop, step)
            if node.func.id == "enumerate" and len(node.args) in (1, 2):
                inner, length = sequence(node.args[0])
                index = k if len(node.args) == 1 else ast.BinOp(
                    copy.deepcopy(node.args[1]), ast.Add(), k)      # enumerate(xs, 1)
                return [ast.Tuple([index, inner[0]], ast.Load())], length
            if node.func.id == "reversed" and len(node.args) == 1 and not (
                    isinstance(node.args[0], ast.Call) and isinstance(
                        node.args[0].func, ast.Name) and node.args[0].func.id in (
                        "enumerate", "zip")):
                back = ast.BinOp(ast.Constant(-1), ast.Sub(), k)     # xs[-1 - k]
                return ([ast.Subscript(copy.deepcopy(node.args[0]), back, ast.Load())],
                        ("len", node.args[0]))
            if node.func.id == "zip" and node.args:
                parts = [sequence(a) for a in node.args]
                return ([ast.Tuple([p[0][0] for p in parts], ast.Load())],
                        ("min", [p[1] for p in parts]))
        return [ast.Subscript(copy.deepcopy(node), k, ast.Load())], ("len", node)

    values, length = sequence(it)
    return assign(s.target, values[0]), length


def _range_args(args: list[ast.expr]) -> tuple[ast.expr, ast.expr, ast.expr]:
    if len(args) == 1:
        return ast.Constant(0), args[0], ast.Constant(1)
    if len(args) == 2:
        return args[0], args[1], ast.Constant(1)
    return args[0], args[1], args[2]


def trip_expr(length: Any) -> ast.expr:
    """The number of iterations, as an expression, of a length :func:`target_binding` gave."""
    kind = length[0]
    if kind == "range":
        _, start, stop, step = length
        args = [stop] if (isinstance(start, ast.Constant) and start.value == 0 and isinstance(
            step, ast.Constant) and step.value == 1) else [start, stop, step]
        return ast.Call(ast.Name("len", ast.Load()), [ast.Call(
            ast.Name("range", ast.Load()), args, [])], [])
    if kind == "len":
        return ast.Call(ast.Name("len", ast.Load()), [copy.deepcopy(length[1])], [])
    return ast.Call(ast.Name("min", ast.Load()), [trip_expr(p) for p in length[1]], [])
