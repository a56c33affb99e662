"""Build time of a compiled gradient against the length of the function (issue 10).

A straight-line function of ``n`` statements (``a{i} = np.sin(a{i-1})``, ``* 1.01``,
``+ 0.5``, ``np.tanh``, in turn, summed at the end) is written to a module file, so that its
source can be read as a user's.  For each ``n`` this prints the time ``srcgrad.grad(f)`` takes
(lowering, analysis, emitting, loading), the time of the first call (which builds the version
specialised for the shapes of its arguments), the growth against the previous size (doubling
the function should at most double both) and, with ``--jax``, the time ``jax.jit`` takes to
compile ``jax.grad`` of the same function (its first call) as a ratio to srcgrad's total.

Run: ``python benchmarks/build_time.py [--sizes 250 500 1000 2000] [--jax]``.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import srcgrad

_OPS = ("{np}.sin(a{j})", "a{j} * 1.01", "a{j} + 0.5", "{np}.tanh(a{j})")


def chain_source(n: int, np_name: str = "np", module: str = "numpy") -> str:
    """The straight-line function of ``n`` statements, as a module's text."""
    lines = [f"import {module} as {np_name}", "", "", "def f(x):", "    a0 = x * 1.0"]
    for i in range(1, n):
        lines.append(f"    a{i} = " + _OPS[i % 4].format(np=np_name, j=i - 1))
    lines.append(f"    return {np_name}.sum(a{n - 1})")
    return "\n".join(lines) + "\n"


def load(text: str, name: str, folder: Path):
    """The function ``f`` of ``text``, imported from a file (its source readable as a user's)."""
    path = folder / f"{name}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module.f


def srcgrad_times(f) -> tuple[float, float]:
    """Seconds of ``srcgrad.grad(f, strict=True)`` and of its first call."""
    start = time.perf_counter()
    g = srcgrad.grad(f, strict=True)
    built = time.perf_counter()
    g(np.ones(3))
    return built - start, time.perf_counter() - built


def jax_time(f) -> float | None:
    """Seconds of the first call of ``jax.jit(jax.grad(f))`` (its trace and compile)."""
    try:
        import jax
    except ImportError:
        return None
    fn = jax.jit(jax.grad(f))
    start = time.perf_counter()
    jax.block_until_ready(fn(np.ones(3)))
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[250, 500, 1000, 2000])
    parser.add_argument("--jax", action="store_true",
                        help="also time jax.jit's compile of the same gradient (slow: "
                             "minutes at 1,000 statements)")
    args = parser.parse_args()
    print(f"{'n':>6} {'grad()':>9} {'1st call':>9} {'total':>9} {'growth':>7}"
          + (f" {'jax.jit':>9} {'jax/ours':>9}" if args.jax else ""))
    previous = None
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.sizes:
            f = load(chain_source(n), f"_build_time_chain_{n}", Path(tmp))
            build, first = srcgrad_times(f)
            total = build + first
            growth = f"{total / previous:6.2f}x" if previous else f"{'':>7}"
            line = f"{n:>6} {build:8.2f}s {first:8.2f}s {total:8.2f}s {growth}"
            if args.jax:
                jf = load(chain_source(n, "jnp", "jax.numpy"), f"_build_time_jax_{n}", Path(tmp))
                seconds = jax_time(jf)
                line += " (jax not installed)" if seconds is None else \
                    f" {seconds:8.2f}s {seconds / total:8.1f}x"
            print(line, flush=True)
            previous = total


if __name__ == "__main__":
    main()
