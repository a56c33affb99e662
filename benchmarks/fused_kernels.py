"""Gradient time of six workloads, in one process, against hand-written NumPy.

The implementations: the hand-written NumPy gradient (the baseline, ratio 1.0); srcgrad
compiled with ``backend="numpy"``; srcgrad with ``backend="numba"`` (``n/a`` while srcgrad
refuses that backend or numba does not import); ``jax.jit(jax.grad(f))`` on the CPU with x64;
PyTorch eager autograd in float64.  jax and torch run the same function object with its global
``np`` rebound (the workloads, and why, are in ``fused_workloads.py``).

Every gradient is checked against the hand-written one (``np.allclose``, rtol 1e-8, atol 1e-12
of the largest entry) before timing; one that differs prints a MISMATCH line, and its times are
marked ``!``.  Times are the best of interleaved wall-clock runs (``interleaved`` of
``compiled_gradients.py``).  Every library runs on one thread (BLAS, XLA, torch, numba) unless
``FUSED_THREADS=N`` is set: the machine is shared, and no library should win by threads alone.
XLA ignores its thread flags; it sizes its pool by the CPUs the process may use when jax
starts, so jax starts with the process pinned to N CPUs, unpinned afterwards.

Compile times are printed apart: srcgrad's build (``grad()``) and first call (the shape
specialisation, and numba's compilation), a second Transform of the same function built in
the same process (numba warm), and jax.jit's first call (tracing and XLA).  Start-up costs
(imports, the first jit) are paid by a probe first and printed on their own line.  numba's
cache across processes (``cache=True``) shows in a second run of the script.

Run: ``python benchmarks/fused_kernels.py [--quick] [--repeat N] [--only KEY]``.
"""

from __future__ import annotations

import os

os.environ.setdefault("FUSED_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", os.environ["FUSED_THREADS"])
os.environ.setdefault("OPENBLAS_NUM_THREADS", os.environ["FUSED_THREADS"])
os.environ.setdefault("MKL_NUM_THREADS", os.environ["FUSED_THREADS"])
os.environ.setdefault("NUMBA_NUM_THREADS", os.environ["FUSED_THREADS"])

import argparse
import functools
import importlib.util
import time
import types
from collections.abc import Callable
from typing import Any

import numpy as np
from compiled_gradients import interleaved
from fused_workloads import Workload, workloads

import srcgrad

COLUMNS = ("hand", "srcgrad numpy", "srcgrad numba", "jax.jit", "torch")


def _probe(x):
    return np.sum(np.sin(x) * x)


def rebound(fn: Callable, namespace: Any) -> Callable:
    """The same code with its global ``np`` bound to ``namespace`` (jax.numpy, torch)."""
    return types.FunctionType(fn.__code__, {**fn.__globals__, "np": namespace}, fn.__name__,
                              fn.__defaults__, fn.__closure__)


def as_tuple(value: Any) -> tuple:
    return value if isinstance(value, (tuple, list)) else (value,)


def mismatch(got: Any, want: Any) -> str | None:
    """Why ``got`` is not the hand-written gradient ``want``, or None when it is."""
    got, want = as_tuple(got), as_tuple(want)
    if len(got) != len(want):
        return f"{len(got)} gradients, expected {len(want)}"
    for i, (a, b) in enumerate(zip(got, want)):
        a, b = np.asarray(a, dtype=float), np.asarray(b)
        if a.shape != b.shape:
            return f"gradient {i}: shape {a.shape}, expected {b.shape}"
        scale = float(np.max(np.abs(b))) if b.size else 0.0
        if not np.allclose(a, b, rtol=1e-8, atol=1e-12 * scale):
            err = float(np.max(np.abs(a - b)))
            return f"gradient {i}: max abs error {err:.3g} (largest entry {scale:.3g})"
    return None


# ---------------------------------------------------------------- building each gradient
def timed(fn: Callable, *args: Any) -> tuple[Any, float]:
    start = time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - start


def build_srcgrad(w: Workload, backend: str) -> tuple[Callable, Any, list[float]]:
    """The runner, its first result and [build s, first call s] (twice for numba: the second
    Transform of the same function, built in the same process)."""
    make = functools.partial(srcgrad.grad, w.fn, w.wrt, backend=backend, strict=True)
    g, build_s = timed(make)
    out, first_s = timed(g, *w.args)
    times = [build_s, first_s, timed(g, *w.args)[1]]     # the 2nd call compiles the kernels
    if backend == "numba":
        again, build_s = timed(make)
        times += [build_s, timed(again, *w.args)[1] + timed(again, *w.args)[1]]
    return functools.partial(g, *w.args), out, times


def build_jax(w: Workload, jax: Any) -> tuple[Callable, Any, list[float]]:
    f = jax.jit(jax.grad(rebound(w.fn, jax.numpy), argnums=w.wrt))
    args = tuple(jax.numpy.asarray(a) for a in w.args)
    run = lambda: jax.block_until_ready(f(*args))
    out, first_s = timed(run)
    return run, out, [first_s]


def build_torch(w: Workload, torch: Any) -> tuple[Callable, Any, list[float]]:
    fn = w.torch or rebound(w.fn, torch)
    wrt = as_tuple(w.wrt)
    tensors = [torch.tensor(a, requires_grad=i in wrt) for i, a in enumerate(w.args)]
    inputs = [tensors[i] for i in wrt]
    single = not isinstance(w.wrt, (tuple, list))

    def run():
        grads = torch.autograd.grad(fn(*tensors), inputs)
        return grads[0] if single else grads
    out, first_s = timed(run)
    return run, out, [first_s]


def builders(numba_ok: bool, jax: Any, torch: Any) -> dict[str, Callable | None]:
    """Each column's builder, None for a column that cannot run here."""
    return {"hand": lambda w: (functools.partial(w.by_hand, *w.args), w.by_hand(*w.args), []),
            "srcgrad numpy": lambda w: build_srcgrad(w, "numpy"),
            "srcgrad numba": (lambda w: build_srcgrad(w, "numba")) if numba_ok else None,
            "jax.jit": (lambda w: build_jax(w, jax)) if jax is not None else None,
            "torch": (lambda w: build_torch(w, torch)) if torch is not None else None}


# ------------------------------------------------------------------------ the libraries
def start_libraries(threads: int) -> tuple[str | None, Any, Any, dict[str, float]]:
    """numba's refusal (None when srcgrad takes ``backend="numba"``), jax and torch (None
    where missing), and what each start-up cost (imports, the first compilation)."""
    costs = {}
    x = np.linspace(-1.0, 1.0, 8)
    start = time.perf_counter()
    srcgrad.grad(_probe)(x)
    costs["srcgrad"] = time.perf_counter() - start
    refusal = None
    start = time.perf_counter()
    try:
        import numba
        numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
        srcgrad.grad(_probe, backend="numba", strict=True)(x)
        costs["srcgrad numba"] = time.perf_counter() - start
    except (ImportError, ValueError) as exc:     # no numba, or srcgrad refuses the backend
        refusal = f"{type(exc).__name__}: {exc}"
    except Exception as exc:                      # the backend is there but fails: say so
        refusal = f"the backend fails on a probe: {type(exc).__name__}: {exc}"
    jax = torch = None
    if importlib.util.find_spec("jax") is not None:
        start = time.perf_counter()
        import jax
        jax.config.update("jax_enable_x64", True)
        jax.config.update("jax_platforms", "cpu")
        cpus = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
        if cpus is not None:       # XLA sizes its thread pool by the CPUs it may run on
            os.sched_setaffinity(0, sorted(cpus)[:threads])
        try:
            jax.block_until_ready(jax.jit(jax.grad(rebound(_probe, jax.numpy)))(x))
        finally:
            if cpus is not None:
                os.sched_setaffinity(0, cpus)
        costs["jax"] = time.perf_counter() - start
    if importlib.util.find_spec("torch") is not None:
        start = time.perf_counter()
        import torch
        torch.set_num_threads(threads)
        costs["torch"] = time.perf_counter() - start
    return refusal, jax, torch, costs


# ---------------------------------------------------------------------------- the tables
def cell(value: float | None, width: int, scale: float = 1e6, digits: int = 1,
         flag: str = "") -> str:
    text = "n/a" if value is None else f"{value * scale:.{digits}f}{flag}"
    return text.rjust(width)


def print_times(rows: list[tuple[Workload, dict, set]]) -> None:
    print("\nGradient time, µs (best of interleaved runs; ! = MISMATCH above)")
    print(f"{'workload':26}" + "".join(f"{c:>15}" for c in COLUMNS))
    for w, t, bad in rows:
        print(f"{w.name:26}" + "".join(cell(t.get(c), 15, flag="!" if c in bad else "")
                                       for c in COLUMNS))
    print("\nRatio to the hand-written NumPy gradient (lower is faster)\n")
    print("| workload | " + " | ".join(COLUMNS[1:]) + " |")
    print("| --- |" + " --- |" * (len(COLUMNS) - 1))
    for w, t, bad in rows:
        ratios = [cell(None if t.get(c) is None else t[c] / t["hand"], 0, 1.0, 2,
                       "!" if c in bad else "") for c in COLUMNS[1:]]
        print(f"| {w.name} | " + " | ".join(ratios) + " |")


def print_compile(rows: list[tuple[Workload, dict]]) -> None:
    print("\nCompile time, ms: build = grad(); 1st = the first call, its own run included "
          "(it builds the\nshape specialisation); 2nd = the second call, the specialised "
          "module's first run (numba\ncompiles its kernels here); again = a second Transform "
          "of the same function in this\nprocess, its first two calls; jax: the first call "
          "(tracing and XLA)")
    heads = ("numpy build", "numpy 1st", "numpy 2nd", "numba build", "numba 1st", "numba 2nd",
             "numba again", "again 1st+2nd", "jax.jit 1st")
    print(f"{'workload':26}" + "".join(f"{h:>14}" for h in heads))
    for w, c in rows:
        numbers = c.get("srcgrad numpy", [None] * 3) + c.get("srcgrad numba", [None] * 5) + \
            c.get("jax.jit", [None])
        print(f"{w.name:26}" + "".join(cell(v, 14, 1e3) for v in numbers))


# ------------------------------------------------------------------------------- running
def measure(w: Workload, build: dict, repeat: int) -> tuple[dict, set, dict]:
    """Build and check every column on ``w``, then time them interleaved."""
    want = w.by_hand(*w.args)
    runs, bad, compile_times = {}, set(), {}
    for column, builder in build.items():
        if builder is None:
            continue
        try:
            run, got, times = builder(w)
        except Exception as exc:          # a refusal or a crash: shown, never hidden
            print(f"FAILED: {w.name}: {column}: {type(exc).__name__}: {exc}")
            continue
        why = mismatch(got, want)
        if why is not None:
            print(f"MISMATCH: {w.name}: {column} differs from the hand-written gradient: {why}")
            bad.add(column)
        runs[column], compile_times[column] = run, times
    return interleaved(runs, repeat), bad, compile_times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=None,
                        help="interleaved rounds (default 15, 3 with --quick)")
    parser.add_argument("--quick", action="store_true", help="fewer rounds")
    parser.add_argument("--only", default=None, help="run one workload, by key: " +
                        ", ".join(w.key for w in workloads()))
    options = parser.parse_args()
    repeat = options.repeat or (3 if options.quick else 15)
    chosen = [w for w in workloads() if options.only in (None, w.key)]
    if not chosen:
        parser.error(f"no workload {options.only!r}")
    threads = int(os.environ["FUSED_THREADS"])
    refusal, jax, torch, costs = start_libraries(threads)
    versions = [f"numpy {np.__version__}"] + [f"{m.__name__} {m.__version__}"
                                              for m in (jax, torch) if m is not None]
    print(f"{', '.join(versions)}; {threads} thread(s); {repeat} rounds")
    print("start-up (imports, first compilation): " +
          ", ".join(f"{k} {v * 1e3:.0f} ms" for k, v in costs.items()))
    if refusal is not None:
        print(f"srcgrad numba: n/a ({refusal})")
    build = builders(refusal is None, jax, torch)
    rows, compiles = [], []
    for w in chosen:
        t, bad, compile_times = measure(w, build, repeat)
        rows.append((w, t, bad))
        compiles.append((w, compile_times))
    print_times(rows)
    print_compile(compiles)
    if refusal is None:
        print("numba's disk cache (cache=True): run the script again; the second run's "
              "'numba 2nd' is the cached load.")


if __name__ == "__main__":
    main()
