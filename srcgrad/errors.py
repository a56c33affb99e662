"""What the compiler says when it cannot: ``CompileError`` and ``FallbackWarning``."""

from __future__ import annotations

import ast

__all__ = ["CompileError", "NoFallback", "FallbackWarning", "Location", "MissingBackend"]


class Location:
    """Where a construct stands in the user's source: file, line, columns and the line."""

    __slots__ = ("filename", "lineno", "col", "end_col", "line", "function")

    def __init__(self, filename: str, lineno: int, col: int, end_col: int, line: str,
                 function: str) -> None:
        self.filename, self.lineno, self.col, self.end_col = filename, lineno, col, end_col
        self.line, self.function = line, function

    def __str__(self) -> str:
        return f"{self.filename}:{self.lineno}"


class CompileError(Exception):
    """An unsupported construct, with the user's file, line and a caret under it."""

    def __init__(self, message: str, where: Location | None = None) -> None:
        self.message = message
        self.where = where
        super().__init__(self._render())

    @property
    def filename(self) -> str | None:
        return self.where.filename if self.where else None

    @property
    def lineno(self) -> int | None:
        return self.where.lineno if self.where else None

    @property
    def col(self) -> int | None:
        return self.where.col if self.where else None

    def _render(self) -> str:
        w = self.where
        if w is None:
            return self.message
        text = w.line.rstrip()
        stripped = text.lstrip()
        shift = len(text) - len(stripped)
        width = max(1, min(w.end_col, len(text)) - w.col) if w.end_col > w.col else 1
        caret = " " * (w.col - shift) + "^" * width
        return (f'{self.message}\n  File "{w.filename}", line {w.lineno}, in {w.function}\n'
                f"    {stripped}\n    {caret}")


class NoFallback(CompileError):
    """A refusal the eager engine shares, raised without ``strict`` too: what the compiler
    saw (an ndarray subclass read off an object) would reach the eager engine unseen."""


class MissingBackend(RuntimeError):
    """A backend whose array library is not installed (it says which extra to install)."""


class NonScalarOutput(ValueError):
    """``grad`` of a function whose result is not a scalar (a ValueError that points to vjp)."""


class FallbackWarning(UserWarning):
    """The compiler could not transform a function; it runs on the eager engine instead."""


def describe(node: ast.AST) -> str:
    """A short name for an AST construct, for messages ("a while loop", "yield")."""
    names = {
        ast.While: "a while loop", ast.For: "a for loop", ast.If: "an if statement",
        ast.Try: "try/except", ast.With: "a with statement", ast.Yield: "yield",
        ast.YieldFrom: "yield from", ast.Await: "await", ast.Global: "global",
        ast.Nonlocal: "nonlocal", ast.Delete: "del", ast.ClassDef: "a class definition",
        ast.FunctionDef: "a nested function definition", ast.AsyncFunctionDef: "async def",
        ast.ListComp: "a list comprehension", ast.GeneratorExp: "a generator expression",
        ast.SetComp: "a set comprehension", ast.DictComp: "a dict comprehension",
        ast.NamedExpr: "an assignment expression (:=)", ast.Starred: "starred unpacking",
        ast.IfExp: "a conditional expression", ast.Break: "break", ast.Continue: "continue",
        ast.Raise: "raise", ast.Lambda: "a lambda", ast.Match: "match",
    }
    return names.get(type(node), type(node).__name__)
