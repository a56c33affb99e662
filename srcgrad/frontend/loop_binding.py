"""A loop run at run time over a sequence: its target bound from the counter (``x = xs[k]``,
``i, x = k, xs[k]`` for ``enumerate``, ``xs[-1 - k]`` for ``reversed`` …) and its trip count,
computed once before the loop as Python evaluates the iterable once."""

from __future__ import annotations

import ast
import copy
import os
from typing import Any

from srcgrad.ir import Const, Pack, Stmt, Var
from srcgrad.runtime.rules.primitives import NotCompiled

__all__ = ["target_binding", "trip_expr", "counted", "check_indexed", "indexed_sequence"]


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


def counted(length: Any) -> list[ast.expr]:
    """The iterables whose length a trip count reads (``range`` has none to check)."""
    if length[0] == "len":
        return [length[1]]
    if length[0] == "min":
        return [n for part in length[1] for n in counted(part)]
    return []


def indexed_sequence(value: Any) -> bool:
    """Whether a loop counter indexes ``value`` as Python iterates it: a list, tuple, range or
    str, or an array of any backend's library (NumPy, CuPy, Dask: ``ndim`` and rows)."""
    return isinstance(value, (list, tuple, range, str)) or getattr(value, "ndim", 0) >= 1


def check_indexed(host: Any, node: ast.expr, s: ast.For) -> None:
    """Code that raises ``NotCompiled`` when the iterable ``node`` is not one a counter walks
    as Python iterates it (a dict iterates its keys, a set has no index, an iterator no
    length): the eager engine, or with ``strict`` the refusal, answers.  A list the function
    builds, or a sequence known when compiling, needs no check."""
    if isinstance(node, ast.Name):
        value = host.scope.get(node.id)
        if isinstance(value, Pack) or isinstance(value, Const) and indexed_sequence(
                value.value) or isinstance(value, Var) and value.name in host.runtime_lists:
            return
    written, uses = host.statics.rename(node)
    where = host.src.where(s.iter)                 # as the comments say it: no folder
    message = (f"{os.path.basename(where.filename)}:{where.lineno}: srcgrad compiles a loop over "
               f"{host.src.text(s.iter)} when it is an array, list, tuple, range or str, "
               "not a dict, set, view or iterator")
    check = ast.If(ast.UnaryOp(ast.Not(), ast.Call(ast.Name("indexed_sequence", ast.Load()),
                                                   [written], [])),
                   [ast.Raise(ast.Call(ast.Name("NotCompiled", ast.Load()),
                                       [ast.Constant(message)], []), None)], [])
    for n in ast.walk(check):
        ast.copy_location(n, s.iter)
    host.emit(Stmt(None, "effect", params={"defines": {
        "NotCompiled": NotCompiled, "indexed_sequence": indexed_sequence}},
        expr=check, uses=uses))
