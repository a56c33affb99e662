"""What the compiler says when it cannot: ``CompileError`` and ``FallbackWarning``."""

from __future__ import annotations

import ast
import re

__all__ = ["CompileError", "NoFallback", "FallbackWarning", "ArgumentWriteWarning", "Location",
           "MissingBackend", "advice_for"]


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

    def __init__(self, message: str, where: Location | None = None, *,
                 advice: str | None = None) -> None:
        self.message = message
        self.where = where
        self._advice = advice
        super().__init__(self._render())

    @property
    def advice(self) -> str | None:
        """What to change so that the line compiles: given where the error is raised, else
        read off the kind of refusal its message states (None where no change is known)."""
        return self._advice if self._advice is not None else advice_for(self.message)

    @property
    def construct(self) -> str | None:
        """The source text the refusal points at (under the caret), or None."""
        w = self.where
        if w is None or not w.line:
            return None
        text = w.line.rstrip()
        return text[w.col:w.end_col].strip() or text.strip() if w.end_col > w.col else \
            text.strip()

    def locate(self, where: Location | None) -> None:
        """Point a refusal raised without a place (parsing a helper, say) at ``where``."""
        if self.where is None and where is not None:
            self.where = where
            self.args = (self._render(),)

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


class ArgumentWriteWarning(UserWarning):
    """The function changes a dict it was passed: srcgrad changes its private copy, never the
    caller's dict, which is left as it was."""


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
        ast.Raise: "raise", ast.Lambda: "a lambda", ast.Match: "match", ast.Set: "a set",
    }
    return names.get(type(node), type(node).__name__)


_ADVICE: tuple[tuple[str, str], ...] = (
    (r"has no derivative rule for (?P<name>[\w.]+)",
     "register a derivative for {name} with srcgrad.defvjp (both modes use it), or write the "
     "computation with functions that have rules (python -m srcgrad supported lists them)"),
    (r"cannot compile (?P<what>.+?) yet",
     "rewrite this line without {what}; docs/supported.md lists the constructs that compile"),
    (r"writes in place into what its argument|changing a dict argument|into what the caller",
     "make the change on a copy made inside the function and return what the caller needs, "
     "rather than writing into what the caller passed"),
    (r"cannot compile an (?:augmented )?assignment to attribute",
     "keep the value in a local variable (returned where the caller needs it) rather than "
     "in an attribute: srcgrad does not compile writes into objects"),
    (r"is a value computed when the code runs",
     "use here an object the compiler knows when it builds (a global, a closure variable or "
     "an argument), whose class it reads, rather than a value computed in the function"),
)
"""Kinds of refusal whose messages do not say what to change, each with the change that lets
the line compile (``{name}`` and the like: what the message names)."""

_SAID = re.compile(r"(?:[;(:]|, or)\s*((?:use|register|put|pass|copy|differentiate|wrap|build|"
                   r"index|assign|call|compute|write|make|give|move|return|spell)\s[^\n]*)")
"""The change a message states itself ("...; register one with srcgrad.defvjp")."""


def advice_for(message: str) -> str | None:
    """What to change for a refusal, read off its message (None where no change is known)."""
    first = message.split("\n", 1)[0]
    pattern, advice = _ADVICE[0]                  # no rule: the fuller advice first
    found = re.search(pattern, first)
    if found is not None:
        return advice.format(**found.groupdict())
    said = _SAID.search(first)
    if said is not None:
        text = said.group(1)
        while text.count(")") > text.count("("):      # the end of the bracket it opened
            text = text[:text.rindex(")")]
        return text.rstrip(" .;")
    for pattern, advice in _ADVICE[1:]:
        found = re.search(pattern, first)
        if found is not None:
            return advice.format(**found.groupdict())
    return None
