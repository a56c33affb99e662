"""Front end: a Python function's source as an AST with the user's real file and lines, and
the environment its names resolve in (globals, closure cells, builtins)."""

from __future__ import annotations

import ast
import builtins
import functools
import inspect
import linecache
import re
import sys
import textwrap
import types
from dataclasses import dataclass, field
from typing import Any

from srcgrad.errors import CompileError, Location
from srcgrad.frontend.freshness import same_code

__all__ = ["Source", "Taken", "Flat", "plain_signature", "parse_function", "not_plain",
           "returned_tuple", "Env", "Unresolved", "with_recursion_room"]


@dataclass
class Source:
    """A parsed function: its ``def`` (or ``lambda``) node, positioned as in the user's file."""

    node: ast.FunctionDef | ast.Lambda
    filename: str
    lines: list[str]            # the whole file, for messages
    name: str
    _split: list[str] | None = field(default=None, init=False, repr=False, compare=False)
    _names: set[str] | None = field(default=None, init=False, repr=False, compare=False)

    def user_names(self) -> set[str]:
        """The names the function's text uses (its parameters too), found once."""
        if self._names is None:
            nodes = list(ast.walk(self.node))
            self._names = {n.id for n in nodes if isinstance(n, ast.Name)} | \
                {a.arg for a in nodes if isinstance(a, ast.arg)}
        return self._names

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
            segment = self._segment(node)
        except IndexError:
            segment = None
        return (segment or ast.unparse(node)).splitlines()[0]

    def _segment(self, node: ast.AST) -> str | None:
        """``ast.get_source_segment`` of the whole file, reading only the node's own lines:
        the file is split once, not once a statement (which made lowering quadratic)."""
        first, last = getattr(node, "lineno", None), getattr(node, "end_lineno", None)
        if not isinstance(first, int) or not isinstance(last, int) or first < 1:
            return ast.get_source_segment("".join(self.lines), node)
        if self._split is None:        # split as ast.get_source_segment splits (no \f, \v)
            self._split = re.findall(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$", "".join(self.lines))
        shifted = types.SimpleNamespace(
            lineno=1, end_lineno=last - first + 1, col_offset=getattr(node, "col_offset", None),
            end_col_offset=getattr(node, "end_col_offset", None))
        if shifted.col_offset is None or shifted.end_col_offset is None:
            return None
        return ast.get_source_segment("".join(self._split[first - 1:last]), shifted)


class Taken:
    """Names taken in either of two sets, read without copying them (``fresh_name`` records
    its pick in the first: the caller adds it where it belongs)."""

    def __init__(self, first: set[str], second: set[str]) -> None:
        self.first, self.second = first, second

    def __contains__(self, name: str) -> bool:
        return name in self.first or name in self.second

    def add(self, name: str) -> None:
        """Not recorded here."""


def not_plain(fn: Any) -> str | None:
    """Why ``fn`` is not a plain function (a generator, a coroutine …), or None."""
    checks = ((inspect.isasyncgenfunction, "an async generator function"),
              (inspect.iscoroutinefunction, "a coroutine function (async def)"),
              (inspect.isgeneratorfunction, "a generator function (it contains yield)"))
    for check, what in checks:
        try:
            if check(fn):
                return (f"{_label(fn)} is {what}: srcgrad differentiates plain functions "
                        "that return their value")
        except Exception:  # noqa: BLE001 - an object inspect cannot read is judged later
            return None
    return None


def _label(fn: Any) -> str:
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None)
    return name if isinstance(name, str) else type(fn).__name__


class Flat:
    """A function whose ``*args`` is compiled as one tuple parameter, its keyword-only
    parameters as positional ones, and its ``**kwargs`` left out (refused if read): what
    :func:`parse_function` parses for it.  Calling it passes one value a parameter."""

    def __init__(self, fn: Any) -> None:
        self.fn = fn
        params = [p for p in inspect.signature(fn).parameters.values()
                  if p.kind is not inspect.Parameter.VAR_KEYWORD]
        self.__signature__ = inspect.Signature(
            [p.replace(kind=inspect.Parameter.POSITIONAL_OR_KEYWORD,
                       default=inspect.Parameter.empty) for p in params])

    def __getattr__(self, name: str) -> Any:         # __code__, __globals__, __name__ …
        if name == "fn":
            raise AttributeError(name)
        return getattr(self.fn, name)

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, Flat) and other.fn == self.fn

    def __hash__(self) -> int:
        return hash(("flat", self.fn))

    def __call__(self, *values: Any) -> Any:
        args: list = []
        kwargs: dict = {}
        kinds = [p for p in inspect.signature(self.fn).parameters.values()
                 if p.kind is not inspect.Parameter.VAR_KEYWORD]
        for p, value in zip(kinds, values):
            if p.kind is inspect.Parameter.VAR_POSITIONAL:
                args.extend(value)
            elif p.kind is inspect.Parameter.KEYWORD_ONLY:
                kwargs[p.name] = value
            else:
                args.append(value)
        return self.fn(*args, **kwargs)


def plain_signature(signature: inspect.Signature) -> bool:
    """Whether every parameter is positional (``def f(x, y=1)``): no ``*args``, ``**kw`` or
    keyword-only parameter."""
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return all(p.kind in positional for p in signature.parameters.values())


def parse_function(fn: Any, generator: bool = False) -> Source:
    """Parse ``fn``'s source.  Raises CompileError when the source cannot be read, when
    ``fn`` is not a plain function (``generator``: a generator function is parsed too), or
    when the source on disk is not the running code."""
    flat = isinstance(fn, Flat)
    fn = fn.fn if flat else fn
    name = _label(fn)
    reason = None if generator else not_plain(fn)
    if reason is not None:
        raise CompileError(reason)
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
            line = file_lines[start - 1] if start <= len(file_lines) else first
            raise CompileError(f"the source of {name} cannot be isolated for parsing (a lambda "
                               "in an expression over several lines: give it a line of its "
                               "own, or make it a def)", Location(
                                   filename, start, indent, len(line.rstrip()), line,
                                   name)) from None
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
    target = _find(tree, fn, filename)
    if target is None:
        raise CompileError(f"srcgrad could not find the definition of {name} in its source")
    if isinstance(target, (ast.AsyncFunctionDef, ast.GeneratorExp)) or not generator and any(
            isinstance(n, (ast.Yield, ast.YieldFrom, ast.Await)) for n in _own_nodes(target)):
        raise CompileError(f"{name} is not a plain function (async def, yield or await): "
                           "srcgrad differentiates plain functions that return their value")
    if isinstance(fn, types.MethodType):
        _unbind(target, name)
    label = getattr(fn, "__name__", name)
    src = Source(target, filename, file_lines, label if isinstance(label, str) else name)
    if flat:
        _flatten(target, name, src)
    return src


def _unbind(node: ast.FunctionDef | ast.Lambda, name: str) -> None:
    """A bound method's ``def``, its first parameter (``self``, ``cls``) left out: the name
    is then a free one, resolved by :class:`Env` to the method's object."""
    args = node.args
    positional = args.posonlyargs or args.args
    if not positional:
        raise CompileError(f"{name} is a method without a parameter for its object")
    positional.pop(0)
    del args.defaults[:max(0, len(args.defaults) - len(args.posonlyargs) - len(args.args))]


def _flatten(node: ast.FunctionDef | ast.Lambda, name: str, src: Source) -> None:
    """``def f(x, *args, k=1, **kw)`` parsed as ``def f(x, args, k)``: the tuple of extra
    positional arguments is one parameter, keyword-only parameters are positional, and
    ``**kw`` is left out (the transform passes every value; a body reading ``kw`` is
    refused: a dict of keyword arguments is not compiled)."""
    args = node.args
    if args.kwarg is not None:
        reads = [n for n in ast.walk(node) if isinstance(n, ast.Name)
                 and n.id == args.kwarg.arg]
        if reads:
            raise CompileError(f"{name} reads its **{args.kwarg.arg} parameter; srcgrad "
                               "compiles **kwargs only when the function does not read them "
                               "(name the keyword parameters)", src.where(reads[0]))
    extra = [args.vararg] if args.vararg is not None else []
    args.args = args.posonlyargs + args.args + extra + args.kwonlyargs
    args.posonlyargs, args.kwonlyargs, args.kw_defaults, args.defaults = [], [], [], []
    args.vararg = args.kwarg = None


def returns_of(node: ast.AST) -> list[ast.expr]:
    """The values a function returns (a lambda: its body)."""
    if isinstance(node, ast.Lambda):
        return [node.body]
    return [n.value for n in _own_nodes(node) if isinstance(n, ast.Return)]


def returned_tuple(node: ast.AST) -> int | None:
    """The length of the tuple (or list) literal every ``return`` of a function gives (None:
    none returns one; -1: some do and some do not, or their lengths differ)."""
    values = returns_of(node)
    sequences = (ast.Tuple, ast.List)
    kinds = {len(v.elts) if isinstance(v, sequences) and not any(
        isinstance(e, ast.Starred) for e in v.elts) else
        -1 if isinstance(v, sequences) else None for v in values}
    if len(kinds) > 1 or -1 in kinds:
        return -1
    return kinds.pop() if kinds else None


def _own_nodes(node: ast.AST):
    """The nodes of a function's own body (not of functions or lambdas nested in it)."""
    stack = list(ast.iter_child_nodes(node))
    while stack:
        n = stack.pop()
        yield n
        if not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda,
                              ast.ClassDef)):
            stack.extend(ast.iter_child_nodes(n))


def _find(tree: ast.AST, fn: Any, filename: str) -> ast.FunctionDef | ast.Lambda | None:
    """The definition of ``fn`` in its parsed source: by name (a lambda by parameters), and
    among several candidates the one whose code is the running code.  Refuses when the
    source differs from the running code (edited since import) or cannot tell two apart."""
    code = fn.__code__
    if code.co_name == "<lambda>":
        params = list(code.co_varnames[:code.co_argcount])
        candidates = [n for n in ast.walk(tree) if isinstance(n, ast.Lambda)
                      and [a.arg for a in n.args.args] == params]
    else:
        candidates = [n for n in ast.walk(tree) if isinstance(
            n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == code.co_name]
    if not candidates:
        return None
    verdicts = [same_code(n, code, filename) for n in candidates]
    matching = [n for n, v in zip(candidates, verdicts) if v]
    if matching:
        if len(matching) > 1 and len({ast.dump(n) for n in matching}) > 1:
            raise CompileError(f"{_label(fn)}: several definitions on its lines compile to "
                               "the same code; srcgrad cannot tell which one runs (give it "
                               "a line of its own)")
        return matching[0]
    if all(v is None for v in verdicts) and len(candidates) == 1:
        return candidates[0]                    # cannot be compiled alone to compare
    if any(v is False for v in verdicts) and not any(v is None for v in verdicts):
        raise CompileError(f"the source of {_label(fn)} in {_short(filename)} differs from "
                           "the running code (was the file edited after it was imported?); "
                           "srcgrad differentiates only the code that runs: reload the module")
    raise CompileError(f"{_label(fn)}: srcgrad cannot tell which definition in its source is "
                       "the running code")


def _short(filename: str) -> str:
    import os
    return os.path.basename(filename)


RECURSION_ROOM = 20000
"""The recursion limit while compiling: a long expression (``x + x + …`` of a thousand terms)
is a deep tree that the lowering and the emitters walk recursively."""


def with_recursion_room(fn: Any) -> Any:
    """Run ``fn`` with room for deep expressions; a RecursionError is a CompileError."""
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        old = sys.getrecursionlimit()
        if old < RECURSION_ROOM:
            sys.setrecursionlimit(RECURSION_ROOM)
        try:
            return fn(*args, **kwargs)
        except RecursionError:
            raise CompileError("the function is nested too deeply for the compiler (an "
                               "expression of thousands of terms?); split it into "
                               "statements") from None
        finally:
            if sys.getrecursionlimit() == RECURSION_ROOM:
                sys.setrecursionlimit(old)
    return wrapper


class Unresolved(Exception):
    """A name that does not exist (yet): the compiler may try again at the first call."""


class Env:
    """Where the function's free names live: closure cells, then globals, then builtins."""

    def __init__(self, fn: Any) -> None:
        fn = fn.fn if isinstance(fn, Flat) else fn
        self.fn = fn
        self.globals = getattr(fn, "__globals__", {})
        code = fn.__code__
        self.closure = {}
        if isinstance(fn, types.MethodType) and code.co_argcount:
            self.closure[code.co_varnames[0]] = fn.__self__     # the method's object
        for name, cell in zip(code.co_freevars, fn.__closure__ or ()):
            try:
                self.closure[name] = cell.cell_contents
            except ValueError:      # an empty cell: defined later in the enclosing scope
                pass

    def resolve(self, name: str) -> Any:
        if name in self.closure:
            return self.closure[name]
        if name in self.globals:            # NumPy itself while an eager run stands in for it
            return getattr(self.globals[name], "srcgrad_stands_in_for", self.globals[name])
        if hasattr(builtins, name):
            return getattr(builtins, name)
        raise Unresolved(name)
