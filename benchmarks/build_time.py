"""Build time of a compiled gradient against the length of the function.

Three shapes of function of ``n`` statements, each written to a module file so that its
source reads as a user's:

``chain``   straight-line ``a{i} = np.sin(a{i-1})``, ``* 1.01``, ``+ 0.5``, ``np.tanh``, in
            turn, summed at the end;
``writes``  in-place writes ``y[k] = ...`` alternating with reads of ``y`` (every write
            makes a new version of ``y`` that the names seeing it must follow);
``loops``   the chain with, every fifth statement, a loop of three iterations that writes
            into ``y`` and reads it back (each loop body is a block of its own).

For each ``n`` this prints the time ``srcgrad.grad(f)`` takes (lowering, analysis, emitting,
loading), the time of the first call (which specialises the code for the shapes of its
arguments), their total and its ratio to the previous size's (doubling the function should at
most double it), and, with ``--jax``, the time ``jax.jit`` takes to compile ``jax.grad`` of the
chain (its first call), as a ratio to srcgrad's total.

Run: ``python benchmarks/build_time.py [--sizes 250 500 1000 2000] [--shapes chain writes
loops] [--repeat 3] [--jax]``.
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


def writes_source(n: int) -> str:
    """``n`` statements alternating a write into ``y`` and a read of it, each read a new name
    (so that the scope grows with the function: a write must not scan it)."""
    lines = ["import numpy as np", "", "", "def f(x):", "    y = x * 1.0", "    a1 = y[0] * 1.01"]
    last = 1
    for i in range(2, n):
        if i % 2:
            lines.append(f"    a{i} = y[{i % 3}] * 0.5 + a{last} * 0.5")
            last = i
        else:
            lines.append(f"    y[{i % 3}] = " + _OPS[i // 2 % 4].format(np="np", j=last))
    lines.append(f"    return np.sum(y) + a{last}")
    return "\n".join(lines) + "\n"


def loops_source(n: int) -> str:
    """The chain of ``n`` statements with, every fifth statement, a three-iteration loop that
    writes into ``y`` and reads it back (a loop counts as three: its line and its two)."""
    lines = ["import numpy as np", "", "", "def f(x):", "    y = x * 1.0", "    a1 = y * 1.01"]
    i = last = 1
    while i < n - 1:
        i += 1
        if i % 5 == 4 and i + 2 < n:
            lines += ["    for k in range(3):",
                      f"        y[k] = np.sin(a{last}[k]) + y[k]",
                      f"        a{last} = y * 0.5 + a{last} * 0.5"]
            i += 2
        else:
            lines.append(f"    a{i} = " + _OPS[i % 4].format(np="np", j=last))
            last = i
    lines.append(f"    return np.sum(a{last}) + np.sum(y)")
    return "\n".join(lines) + "\n"


SHAPES = {"chain": chain_source, "writes": writes_source, "loops": loops_source}


def load(text: str, name: str, folder: Path):
    """The function ``f`` of ``text``, imported from a file (its source readable as a user's)."""
    path = folder / f"{name}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module.f


def srcgrad_times(text: str, name: str, folder: Path, repeat: int = 1) -> tuple[float, float]:
    """Seconds of ``srcgrad.grad(f, strict=True)`` and of its first call, for the function
    ``f`` of ``text`` (the fastest of ``repeat`` runs, each on a fresh copy of the module)."""
    best = None
    for k in range(repeat):
        f = load(text, f"{name}_{k}", folder)
        start = time.perf_counter()
        g = srcgrad.grad(f, strict=True)
        built = time.perf_counter()
        g(np.linspace(0.1, 0.3, 3))
        times = (built - start, time.perf_counter() - built)
        if best is None or sum(times) < sum(best):
            best = times
    return best


def jax_time(f) -> float | None:
    """Seconds of the first call of ``jax.jit(jax.grad(f))`` (its trace and compile)."""
    try:
        import jax
    except ImportError:
        return None
    fn = jax.jit(jax.grad(f))
    start = time.perf_counter()
    jax.block_until_ready(fn(np.linspace(0.1, 0.3, 3)))
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[250, 500, 1000, 2000])
    parser.add_argument("--shapes", nargs="+", choices=sorted(SHAPES),
                        default=["chain", "writes", "loops"])
    parser.add_argument("--repeat", type=int, default=1,
                        help="the fastest of this many runs (a machine others share)")
    parser.add_argument("--jax", action="store_true",
                        help="also time jax.jit's compile of the chain's gradient (slow: "
                             "minutes at 1,000 statements)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        srcgrad.grad(load(chain_source(20), "_build_time_warm", Path(tmp)))(np.ones(3))
        for shape in args.shapes:
            jax = args.jax and shape == "chain"
            print(f"{shape:>6} {'grad()':>9} {'1st call':>9} {'total':>9} {'ratio':>7}"
                  + (f" {'jax.jit':>9} {'jax/ours':>9}" if jax else ""))
            previous = None
            for n in args.sizes:
                build, first = srcgrad_times(SHAPES[shape](n), f"_build_time_{shape}_{n}",
                                             Path(tmp), args.repeat)
                total = build + first
                ratio = f"{total / previous:6.2f}x" if previous else f"{'':>7}"
                line = f"{n:>6} {build:8.2f}s {first:8.2f}s {total:8.2f}s {ratio}"
                if jax:
                    jf = load(chain_source(n, "jnp", "jax.numpy"), f"_build_time_jax_{n}",
                              Path(tmp))
                    seconds = jax_time(jf)
                    line += " (jax not installed)" if seconds is None else \
                        f" {seconds:8.2f}s {seconds / total:8.1f}x"
                print(line, flush=True)
                previous = total


if __name__ == "__main__":
    main()
