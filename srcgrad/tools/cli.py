"""The command line: ``python -m srcgrad show path/to/file.py:function [--wrt NAME]
[--transform jvp|hessian|...] [--backend numba|cupy|dask] [--graph out.svg] [--run-module]``
prints a generated gradient, jvp, Jacobian or Hessian (or writes a picture of its graph);
``python -m srcgrad supported [--markdown]`` prints what the compiler
supports (``docs/supported.md`` is its ``--markdown`` output); ``python -m srcgrad explain
path/to/file.py:function`` prints :func:`srcgrad.explain` of it."""

from __future__ import annotations

import argparse
import importlib.abc
import importlib.machinery
import pathlib
import sys
import textwrap
import warnings
from collections import defaultdict

import numpy as np

from srcgrad.codegen import DEFAULT_BACKEND, LIBRARIES, NAMES
from srcgrad.errors import FallbackWarning
from srcgrad.frontend.tables.scipy_calls import SCIPY_SURFACE
from srcgrad.frontend.tables.surface import (
    STATIC_WHEN_CONSTANT,
    classify,
    constructs,
    operators,
    python_calls,
    scipy_special,
)
from srcgrad.tools.cli_target import NeedsModule, load_function, run_module
from srcgrad.transforms.base import show
from srcgrad.transforms.grad import Transform
from srcgrad.transforms.jacobians import hessian, jacfwd, jacrev
from srcgrad.transforms.jvp import jvp

__all__ = ["main"]


_LIBRARIES = frozenset({"scipy", "llvmlite", "distributed", "graphviz", "networkx", "torch",
                        "srcgrad"} | LIBRARIES | sys.stdlib_module_names)


class _Shield(importlib.abc.MetaPathFinder):
    """While the script runs (``--run-module``, its folder on ``sys.path``), the libraries
    srcgrad uses and the standard library come from where they are installed, never from a
    file of the same name next to the script (a ``dask.py`` there would run in their place)."""

    def __init__(self, folder: pathlib.Path) -> None:
        self.folder = folder

    def find_spec(self, name: str, path: object = None, target: object = None) -> object:
        if path is not None or name not in _LIBRARIES:
            return None
        finder = importlib.machinery.PathFinder
        entries = [e for e in sys.path if not _names(e, self.folder)]
        spec = finder.find_spec(name, entries)
        if spec is None and finder.find_spec(name, [str(self.folder)]) is not None:
            raise ModuleNotFoundError(f"No module named {name!r} (srcgrad show does not "
                                      f"import {name} from {self.folder})", name=name)
        return spec


def _names(entry: object, folder: pathlib.Path) -> bool:
    """Whether the ``sys.path`` entry is ``folder`` (``""`` is the working directory)."""
    try:
        return isinstance(entry, str) and pathlib.Path(entry or ".").resolve() == folder
    except (OSError, RuntimeError, ValueError):
        return False


def _load(target: str, run: bool) -> object:
    """The function ``path/to/file.py:name``.  Without ``run``, only the statements it needs
    run (:mod:`srcgrad.tools.cli_target`); the module body does not.  The script's folder is never
    searched before the installed libraries: it is on ``sys.path`` (last) only while the
    module runs, and a library's name never resolves to a file there."""
    path, _, name = target.rpartition(":")
    if not path or not name:
        raise SystemExit(f"srcgrad show: expected path/to/file.py:function, got {target!r}")
    file = pathlib.Path(path)
    if not file.is_file():
        raise SystemExit(f"srcgrad show: no such file: {path}")
    folder = file.resolve().parent
    sys.path[:] = [e for e in sys.path if not _names(e, folder)]   # "" when run from there
    shield = _Shield(folder)
    if run:
        sys.path.append(str(folder))
        at = next((i for i, f in enumerate(sys.meta_path)
                   if f is importlib.machinery.PathFinder), len(sys.meta_path))
        sys.meta_path.insert(at, shield)            # after the builtin and frozen modules
    try:
        return run_module(file, name) if run else load_function(file, name)
    except NeedsModule as exc:
        if run:
            raise SystemExit(f"srcgrad show: {exc}") from None
        raise SystemExit(
            f"srcgrad show: cannot find {name} in {path} without running the module: {exc}.\n"
            "srcgrad show does not run a script's top level by itself (it may train, write "
            "files or fail). Pass --run-module to run the whole module, as 'import' would "
            "(code under 'if __name__ == \"__main__\":' still does not run).") from None
    except Exception as exc:
        what = "running" if run else f"importing what {name} needs from"
        raise SystemExit(f"srcgrad show: {what} {path} failed: {type(exc).__name__}: "
                         f"{exc}") from None
    finally:
        if shield in sys.meta_path:
            sys.meta_path.remove(shield)
        sys.path[:] = [e for e in sys.path if not _names(e, folder)]


_REGENERATE = "python -m srcgrad supported --markdown > docs/supported.md"
Table = tuple[str, tuple[str, str], list[tuple[str, str]]]


def _tables() -> tuple[list[Table], list[str], dict[str, list[str]], int]:
    """The reference: its tables (title, column names, rows), the random draws, the refused
    names by reason, and how many names are unclassified (a bug that tests/structure/test_surface.py
    reports)."""
    entries, missing, _ = classify()
    rows: dict[tuple[str, str], list[tuple[str, str]]] = defaultdict(list)
    draws: list[str] = []
    refused: dict[str, list[str]] = defaultdict(list)
    for e in entries.values():
        if e.kind == "refused":
            refused[e.detail].append(e.name)
        elif e.name.startswith("np.random."):
            draws.append(e.name)
        else:
            rows["methods" if e.name.startswith("ndarray.") else "functions", e.kind].append(
                (e.name, e.detail))
    rule, why = ("name", "rule (primitive)"), ("name", "why it carries no gradient")
    tables: list[Table] = [
        ("NumPy functions with a derivative rule", rule, rows["functions", "rule"]),
        ("NumPy functions with no gradient", why, rows["functions", "nondiff"]),
        ("SciPy functions with a derivative rule (when SciPy is importable)", rule,
         sorted(set(scipy_special()) | set(SCIPY_SURFACE))),
        ("Array methods with a derivative rule", rule, rows["methods", "rule"]),
        ("Array methods with no gradient", why, rows["methods", "nondiff"]),
        ("Operators", ("written", "NumPy function (rule)"),
         [(text, f"{fn} ({r})") for text, fn, r in operators()]),
        ("`math` functions and builtins", ("call", "what it becomes"), python_calls()),
        ("Constructs", ("construct", "what compiles"),
         [(f"ast.{n}", words) for n, words in constructs()]),
    ]
    tables = [(title, cols, sorted(r) if title.startswith(("NumPy", "Array", "SciPy")) else r)
              for title, cols, r in tables]
    return tables, sorted(draws), refused, len(missing)


def supported(markdown: bool = False) -> str:
    """The reference of what the compiler supports, as text or as Markdown."""
    tables, draws, refused, missing = _tables()
    md = markdown
    lines: list[str] = []
    if md:
        lines += ["# What srcgrad supports", "",
                  f"<!-- generated by `{_REGENERATE}`; do not edit -->", ""]
    else:
        lines += [f"srcgrad supports (NumPy {np.__version__}):", ""]
    lines += [_wrap(f"Generated from the rule table and the compiler's tables (NumPy "
                    f"{np.__version__}). Every public callable of numpy, numpy.linalg, "
                    "numpy.fft and numpy.random, and every ndarray method, is in exactly one "
                    "class: a derivative rule, no gradient (an explicit allow-list), or refused "
                    "with a CompileError naming file, line and call."), ""]
    for title, cols, rows in tables:
        if md:
            lines += [f"## {title} ({len(rows)})", "", f"| {cols[0]} | {cols[1]} |",
                      "| --- | --- |"]
            lines += [f"| `{a}` | {_cell(b)} |" for a, b in rows] + [""]
        else:
            width = max([len(a) for a, _ in rows] + [len(cols[0])])
            lines += [f"{title} ({len(rows)}):", f"  {cols[0]:<{width}}  {cols[1]}"]
            lines += [f"  {a:<{width}}  {b}" for a, b in rows] + [""]
    words = f"{STATIC_WHEN_CONSTANT}; a draw runs once, in the forward, and the adjoint uses it"
    lines += [f"## Random draws ({len(draws)})" if md else f"Random draws ({len(draws)}):"]
    lines += ["", _wrap(words[0].upper() + words[1:] + "."), ""] if md else [
        _wrap(words[0].upper() + words[1:] + ".", 2)]
    lines += [_wrap(", ".join(f"`{n}`" if md else n for n in draws), 0 if md else 2), ""]
    total = sum(len(v) for v in refused.values())
    note = ("A refused call raises a CompileError naming it; a class, or a function NumPy "
            "writes in Python (np.hanning, np.seterr), among them still runs as plain "
            "Python when no argument carries a gradient.")
    lines += [f"## Refused ({total}), by reason", "", _wrap(note), ""] if md else [
        f"Refused ({total}), by reason:", _wrap(note, 2)]
    for reason, names in sorted(refused.items(), key=lambda r: (-len(r[1]), r[0])):
        listed = ", ".join(f"`{n}`" if md else n for n in sorted(names))
        lines += [f"### {reason} ({len(names)})", "", _wrap(listed), ""] if md else [
            f"  {reason} ({len(names)}):", _wrap(listed, 4)]
    if missing:
        lines += [f"{missing} names are not classified "
                  "(run pytest tests/structure/test_surface.py)"]
    return "\n".join(lines).rstrip() + "\n"


def _wrap(text: str, indent: int = 0) -> str:
    pad = " " * indent
    return textwrap.fill(text, width=100, initial_indent=pad, subsequent_indent=pad,
                         break_on_hyphens=False, break_long_words=False)


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _transform(fn: object, kind: str, wrt: object, backend: str) -> object:
    """The transform ``show`` prints: a grad, a jvp (every argument a tangent), a Jacobian
    or a Hessian (built ahead of time, for array arguments)."""
    if kind == "jvp":
        return jvp(fn, backend=backend)
    if kind in ("jacfwd", "jacrev", "hessian"):
        return {"jacfwd": jacfwd, "jacrev": jacrev, "hessian": hessian}[kind](
            fn, wrt, backend=backend)
    return Transform(fn, kind, wrt, backend=backend)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m srcgrad",
                                     description="Print the gradient source srcgrad generates, "
                                                 "or what it supports.")
    sub = parser.add_subparsers(dest="command", required=True)
    show_cmd = sub.add_parser("show", help="print the generated gradient of a function")
    show_cmd.add_argument("target", help="path/to/file.py:function")
    show_cmd.add_argument("--wrt", action="append",
                          help="argument name or position (repeatable); default: the first")
    show_cmd.add_argument("--transform", default="grad",
                          choices=["grad", "value_and_grad", "jvp", "jacfwd", "jacrev",
                                   "hessian"],
                          help="which transform's source to print (default: grad); jvp gives "
                               "every argument a tangent")
    show_cmd.add_argument("--backend", default=DEFAULT_BACKEND, choices=list(NAMES),
                          help="the array library of the printed code; numba's fused kernels "
                               "appear in code specialised at a first call, not in this "
                               "generic source")
    show_cmd.add_argument("--graph", metavar="OUT",
                          help="write a picture of the compiled graph (.svg; .png or .pdf "
                               "need Graphviz; .dot writes its DOT source) instead of printing "
                               "the source")
    show_cmd.add_argument("--run-module", action="store_true",
                          help="run the file's whole top level to find the function (by "
                               "default only the imports and constants it reads run)")
    supported_cmd = sub.add_parser("supported", help="print every supported function, method, "
                                                     "operator and construct, and what is "
                                                     "refused")
    supported_cmd.add_argument("--markdown", action="store_true",
                               help="print Markdown (docs/supported.md is this output)")
    explain_cmd = sub.add_parser("explain", help="list every refusal of a function and of "
                                                 "the helpers it calls")
    explain_cmd.add_argument("target", help="path/to/file.py:function")
    explain_cmd.add_argument("--run-module", action="store_true",
                             help="run the file's whole top level to find the function")
    args = parser.parse_args(argv)
    if args.command == "supported":
        sys.stdout.write(supported(args.markdown))
        return 0
    if args.command == "explain":
        from srcgrad.tools.explain import explain
        found = explain(_load(args.target, args.run_module))
        print(found)
        return 0 if found.compiled else 1
    fn = _load(args.target, args.run_module)
    wrt: object = 0
    if args.wrt:
        items = [int(w) if w.isdigit() else w for w in args.wrt]
        wrt = items[0] if len(items) == 1 else tuple(items)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FallbackWarning)
        transform = _transform(fn, args.transform, wrt, args.backend)
    if args.graph is None or transform.graph is None:
        show(transform)
        return 0 if transform.source is not None else 1
    from srcgrad.tools.viz import MissingRenderer, draw
    try:
        written = draw(transform).render(args.graph)
    except (MissingRenderer, OSError) as exc:
        raise SystemExit(f"srcgrad show: cannot write {args.graph}: {exc}") from None
    print(f"srcgrad show: wrote the graph of {args.target} to {written}")
    return 0
