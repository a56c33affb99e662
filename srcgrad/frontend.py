"""Front end: a Python function's source as an AST with the user's real file and lines, and
the environment its names resolve in (globals, closure cells, builtins)."""

from __future__ import annotations

import ast
import builtins
import inspect
import linecache
import textwrap
from dataclasses import dataclass
from typing import Any

from srcgrad.errors import CompileError, Location

__all__ = ["Source", "parse_function", "Env", "Unresolved"]


@dataclass
class Source:
    """A parsed function: its ``def`` (or ``lambda``) node, positioned as in the user's file."""

    node: ast.FunctionDef | ast.Lambda
    filename: str
    lines: list[str]            # the whole file, for messages
    name: str

    def where(self, node: ast.AST) -> Location:
        lineno = getattr(node, "lineno", self.node.lineno)
        col = getattr(node, "col_offset", 0)
        end = getattr(node, "end_col_offset", col + 1) or col + 1
        if getattr(node, "end_lineno", lineno) != lineno:
            end = len(self.line(lineno))
        return Location(self.filename, lineno, col, end, self.line(lineno), self.name)

    def line(self, lineno: int) -> str:
        return self.lines[lineno - 1] if 0 < lineno <= len(self.lines) else ""

    def text(self, node: ast.AST) -> str:
        """The user's own text of ``node`` (its first line, for comments)."""
        try:
            segment = ast.get_source_segment("".join(self.lines), node)
        except IndexError:
            segment = None
        return (segment or ast.unparse(node)).splitlines()[0]


def parse_function(fn: Any) -> Source:
    """Parse ``fn``'s source.  Raises CompileError when the source cannot be read."""
    name = getattr(fn, "__qualname__", getattr(fn, "__name__", repr(fn)))
    try:
        lines, start = inspect.getsourcelines(fn)
        filename = inspect.getsourcefile(fn) or fn.__code__.co_filename
    except (OSError, TypeError) as exc:
        raise CompileError(f"the source of {name} cannot be read ({exc}); functions defined "
                           "by exec or in a bare interactive prompt cannot be compiled") from None
    if start == 0:
        start = 1
    first = lines[0]
    indent = len(first) - len(first.lstrip())
    text = textwrap.dedent("".join(lines))
    file_lines = linecache.getlines(filename)
    if len(file_lines) < start + len(lines) - 1:
        file_lines = [""] * (start - 1) + lines
    try:
        tree = ast.parse(text)
    except SyntaxError:
        # a lambda inside a larger expression: parse the stripped line as an expression
        try:
            tree = ast.parse(text.strip().rstrip(",)"), mode="exec")
        except SyntaxError:
            raise CompileError(f"the source of {name} cannot be isolated for parsing") from None
    for node in ast.walk(tree):
        if hasattr(node, "lineno"):
            node.lineno += start - 1
            node.end_lineno = (node.end_lineno or node.lineno) + start - 1
            if node.lineno == start:
                node.col_offset += indent
                if node.end_lineno == start and node.end_col_offset is not None:
                    node.end_col_offset += indent
            else:
                node.col_offset += indent
                if node.end_col_offset is not None:
                    node.end_col_offset += indent
    target = _find(tree, fn)
    if target is None:
        raise CompileError(f"srcgrad could not find the definition of {name} in its source")
    return Source(target, filename, file_lines, getattr(fn, "__name__", name))


def _find(tree: ast.AST, fn: Any) -> ast.FunctionDef | ast.Lambda | None:
    code = fn.__code__
    if code.co_name == "<lambda>":
        params = list(code.co_varnames[:code.co_argcount])
        for node in ast.walk(tree):
            if isinstance(node, ast.Lambda) and [a.arg for a in node.args.args] == params:
                return node
        return None
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == code.co_name:
            return node
    return None


class Unresolved(Exception):
    """A name that does not exist (yet): the compiler may try again at the first call."""


class Env:
    """Where the function's free names live: closure cells, then globals, then builtins."""

    def __init__(self, fn: Any) -> None:
        self.fn = fn
        self.globals = getattr(fn, "__globals__", {})
        code = fn.__code__
        self.closure = {}
        for name, cell in zip(code.co_freevars, fn.__closure__ or ()):
            try:
                self.closure[name] = cell.cell_contents
            except ValueError:      # an empty cell: defined later in the enclosing scope
                pass

    def resolve(self, name: str) -> Any:
        if name in self.closure:
            return self.closure[name]
        if name in self.globals:
            return self.globals[name]
        if hasattr(builtins, name):
            return getattr(builtins, name)
        raise Unresolved(name)
