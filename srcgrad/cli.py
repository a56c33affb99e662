"""``python -m srcgrad show path/to/file.py:function [--wrt NAME] [--backend cupy]``."""

from __future__ import annotations

import argparse
import importlib.util
import pathlib
import sys
import warnings

from srcgrad.api import Transform, show
from srcgrad.errors import FallbackWarning

__all__ = ["main"]


def _load(target: str) -> object:
    path, _, name = target.rpartition(":")
    if not path or not name:
        raise SystemExit(f"srcgrad show: expected path/to/file.py:function, got {target!r}")
    file = pathlib.Path(path)
    if not file.is_file():
        raise SystemExit(f"srcgrad show: no such file: {path}")
    spec = importlib.util.spec_from_file_location(file.stem, file)
    module = importlib.util.module_from_spec(spec)
    sys.modules[file.stem] = module
    sys.path.insert(0, str(file.parent.resolve()))
    spec.loader.exec_module(module)
    fn = module
    for part in name.split("."):
        fn = getattr(fn, part, None)
        if fn is None:
            raise SystemExit(f"srcgrad show: {path} has no function {name!r}")
    return getattr(fn, "__wrapped__", fn)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m srcgrad",
                                     description="Print the gradient source srcgrad generates.")
    sub = parser.add_subparsers(dest="command", required=True)
    show_cmd = sub.add_parser("show", help="print the generated gradient of a function")
    show_cmd.add_argument("target", help="path/to/file.py:function")
    show_cmd.add_argument("--wrt", action="append",
                          help="argument name or position (repeatable); default: the first")
    show_cmd.add_argument("--backend", default="numpy", choices=["numpy", "cupy"])
    args = parser.parse_args(argv)
    fn = _load(args.target)
    wrt: object = 0
    if args.wrt:
        items = [int(w) if w.isdigit() else w for w in args.wrt]
        wrt = items[0] if len(items) == 1 else tuple(items)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FallbackWarning)
        transform = Transform(fn, "grad", wrt, backend=args.backend)
    show(transform)
    return 0 if transform.source is not None else 1
