"""Gradient steps with ``backend="dask"``, in one process, against NumPy.

Three measurements of ``srcgrad.value_and_grad(loss, backend="dask")`` on the plain NumPy losses
of ``dask_workloads.py`` (logistic regression; a one-layer tanh MLP with dict parameters):

1. **Data that fits** (default 200k x 32): one gradient step (value and gradient, computed)
   by the hand-written NumPy gradient (the baseline, ratio 1.0), srcgrad ``backend="numpy"``,
   and srcgrad ``backend="dask"`` computed by Dask's threaded scheduler and by a
   ``LocalCluster`` of 1 and of 2 worker processes (one thread each).  A Dask step is the
   transform's call, which only builds the lazy graph ("build"), and ``dask.compute`` of the
   value and gradients ("compute"); both are also timed alone.  The clusters hold the data
   persisted in their workers' memory, generated there.  Also: what moves per step on the
   2-process cluster, from the pickled graph, the workers' transfer logs and the results.
2. **Scaling** from 1 to 2 worker processes (default 1M x 64, chunks of 125k rows) on data
   generated on the workers (``da.random``, seeded) and persisted there.  speedup = t1 / t2.
   "hand, chunked" runs the hand-written gradient over the same row chunks in a loop: the
   one-core reference without the page faults of whole-array temporaries.
3. **Out of core**: a dataset written chunk by chunk by the workers (``da.to_npy_stack`` in a
   temporary folder, default 2.4M x 64, 1.2 GB) and read back (``from_npy_stack``, no memory
   map) at every step by 2 workers whose ``memory_limit`` (default 256 MiB each) is below
   the dataset.  Gradient descent for a few steps: seconds, rows/s and MB/s per step, the loss,
   each worker's peak RSS, and whether any worker died (a nanny restarts a dead worker under a
   new address).  The files sit in the OS page cache after the write: the reads measure
   loading and computing, not a cold disk.

Every result is checked against the hand-written value and gradient (rtol 1e-8) before
timing; a mismatch prints a MISMATCH line and marks its times ``!``.  Times are the best of
interleaved runs (``interleaved`` of ``compiled_gradients.py``).  Every process does its BLAS
on one thread (``DASK_BENCH_BLAS=N`` to change): the threaded scheduler and the clusters get
their parallelism from Dask.  This process keeps freed memory for reuse (``--system-malloc``
not to; see ``keep_freed_memory``); the workers keep distributed's setting, which gives memory
back and suits ``memory_limit``, unless ``--workers-keep-memory``.

Run: ``python benchmarks/dask_scaling.py [--quick] [--repeat N] [--part 1,2,3]`` (sizes: --help).
"""

from __future__ import annotations

import os

os.environ.setdefault("DASK_BENCH_BLAS", "1")
os.environ.setdefault("OMP_NUM_THREADS", os.environ["DASK_BENCH_BLAS"])
os.environ.setdefault("OPENBLAS_NUM_THREADS", os.environ["DASK_BENCH_BLAS"])
os.environ.setdefault("MKL_NUM_THREADS", os.environ["DASK_BENCH_BLAS"])

import argparse
import functools
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import dask
import dask.array as da
import distributed
import numpy as np
from compiled_gradients import interleaved
from dask.distributed import Client, LocalCluster
from dask_workloads import (
    Loss,
    chunked,
    dask_data,
    descend,
    flat_nbytes,
    graph_facts,
    keep_freed_memory,
    labels,
    losses,
    mismatch,
    peak_rss_mib,
    sample_rss,
    transferred,
)

import srcgrad


# ---------------------------------------------------------------------------- helpers
def cluster(workers: int, memory: str, keep_memory: bool = False) -> LocalCluster:
    """A cluster of worker processes with one thread each; ``keep_memory``: their malloc
    keeps freed memory for reuse (distributed's default gives it back at 64 KiB)."""
    keep = {"MALLOC_TRIM_THRESHOLD_": 2**30, "MALLOC_MMAP_THRESHOLD_": 2**30}
    env = {f"distributed.nanny.pre-spawn-environ.{k}": v for k, v in keep.items()}
    with dask.config.set(env if keep_memory else {}):
        return LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                            memory_limit=memory, dashboard_address=":0")


def persist(client: Client, x: Any) -> Any:
    """``x`` computed and held in the cluster's workers' memory."""
    x = client.persist(x)
    with client.as_current():
        distributed.wait(x)
    return x


def compute_on(scheduler: Any, threads: int) -> Callable:
    """``dask.compute`` on a Client, or on the threaded scheduler with ``threads`` threads."""
    if scheduler == "threads":
        return functools.partial(dask.compute, scheduler="threads", num_workers=threads)
    return functools.partial(dask.compute, scheduler=scheduler)


def ms(t: float | None, flag: str = "") -> str:
    return "n/a" if t is None else f"{t * 1e3:.1f}{flag}"


def mib(n: float) -> str:
    return f"{n / 2**20:.2f} MiB" if n >= 2**20 else f"{n / 1024:.1f} KiB"


def movers(by_name: dict[str, float], top: int = 3) -> str:
    """The task names whose results moved most between workers, with their bytes."""
    ranked = sorted(by_name.items(), key=lambda kv: -kv[1])[:top]
    return ", ".join(f"{name} {mib(n)}" for name, n in ranked) or "nothing"


# --------------------------------------------------------------------- parts 1 and 2
def columns(loss: Loss, params: Any, X: np.ndarray, y: np.ndarray, chunk: int,
            placed: dict[str, tuple], threads: int) -> dict[str, tuple]:
    """Per column: the step, the build alone, the compute of a built graph alone (None for
    NumPy), and the step's first result.  ``placed``: per cluster, (client, X, y) there."""
    cols = {"hand": (functools.partial(loss.by_hand, params, X, y), None, None)}
    g = srcgrad.value_and_grad(loss.fn, backend="numpy", strict=True)
    cols["srcgrad numpy"] = (functools.partial(g, params, X, y), None, None)
    f = srcgrad.value_and_grad(loss.fn, backend="dask", strict=True)
    where = {"dask threads": ("threads", da.from_array(X, chunks=(chunk, X.shape[1])),
                              da.from_array(y, chunks=chunk))}
    where.update({name: (client, Xc, yc) for name, (client, Xc, yc) in placed.items()})
    for name, (scheduler, Xd, yd) in where.items():
        run = compute_on(scheduler, threads)
        build = functools.partial(f, params, Xd, yd)
        built = build()
        cols[name] = (lambda run=run, build=build: run(*build()), build,
                      lambda run=run, built=built: run(*built))
    return cols


def measure(loss: Loss, params: Any, X: np.ndarray, y: np.ndarray, chunk: int,
            placed: dict[str, tuple], threads: int, repeat: int) -> dict:
    """Check every column against the hand-written gradient, then time them interleaved."""
    first = time.perf_counter()
    srcgrad.value_and_grad(loss.fn, backend="dask", strict=True)(params, X[:8], y[:8])
    first = time.perf_counter() - first      # the transform's build and first call (compile)
    want = loss.by_hand(params, X, y)
    cols, bad = columns(loss, params, X, y, chunk, placed, threads), set()
    for name, (step, _, _) in cols.items():
        why = mismatch(step(), want)
        if why is not None:
            print(f"MISMATCH: {loss.key}: {name} differs from the hand-written gradient: {why}")
            bad.add(name)
    fns = {}
    for name in placed:          # the floor under any step: dask.compute of a one-task graph
        client, Xc, _ = placed[name]
        fns[name + " floor"] = functools.partial(dask.compute, Xc[0, 0], scheduler=client)
    fns["dask threads floor"] = functools.partial(dask.compute, da.zeros(1)[0],
                                                  scheduler="threads")
    for name, (step, build, compute) in cols.items():
        fns[name] = step
        if build is not None:
            fns[name + " build"], fns[name + " compute"] = build, compute
    return {"times": interleaved(fns, repeat), "bad": bad, "first": first}


def traffic(loss: Loss, params: Any, client: Client, Xc: Any, yc: Any, steps: int = 5) -> dict:
    """What one step moves on a cluster: graph pickle, worker-to-worker bytes (the mean of
    ``steps`` steps: where the scheduler runs a task varies), results."""
    f = srcgrad.value_and_grad(loss.fn, backend="dask", strict=True)
    tasks, graph_bytes = graph_facts(f(params, Xc, yc), (Xc, yc))
    dask.compute(*f(params, Xc, yc), scheduler=client)       # warm
    before = transferred(client)
    for _ in range(steps):
        result = dask.compute(*f(params, Xc, yc), scheduler=client)
    return {"tasks": tasks, "graph": graph_bytes, "params": flat_nbytes(params),
            "between": {k: v / steps for k, v in (transferred(client) - before).items()},
            "back": flat_nbytes(result)}


def place(clients: dict[str, Client], rows: int, features: int, chunk: int,
          keys: list[str]) -> tuple[dict, np.ndarray, dict]:
    """Generate X and every loss's y on each cluster's workers and persist them there; the
    client's NumPy copy (fetched once, for the NumPy columns)."""
    X, noise = dask_data(rows, features, chunk)
    placed = {k: {} for k in keys}
    for name, client in clients.items():
        Xc, nc = persist(client, X), persist(client, noise)
        for k in keys:
            placed[k][name] = (client, Xc, persist(client, labels(Xc, nc, k)))
    first = next(iter(clients.values()))
    # Copies: an array received from a cluster can sit in its message buffer at an address
    # that is not a multiple of 8, where NumPy runs several times slower (seen: 10x on X.T @ y).
    Xn, nn = (np.array(a) for a in first.compute([X, noise], sync=True))
    return placed, Xn, {k: labels(Xn, nn, k) for k in keys}


def part_fits(o: argparse.Namespace, clients: dict[str, Client], out: list[str]) -> None:
    keys = ["logreg", "mlp"]
    placed, X, ys = place(clients, o.rows, o.features, o.chunk, keys)
    names = ["hand", "srcgrad numpy", "dask threads", *clients]
    head = f"\n## 1. Data that fits: {o.rows} x {o.features} float64 " \
           f"({X.nbytes / 2**20:.0f} MiB), chunks of {o.chunk} rows\n"
    rows1 = ["| loss | " + " | ".join(f"{n} ms (ratio)" for n in names) + " |",
             "| --- |" + " --- |" * len(names)]
    rows2 = ["| loss | first call ms | " + " | ".join(f"{n}: build / compute / floor ms"
                                                   for n in names[2:]) + " |",
             "| --- | --- |" + " --- |" * len(names[2:])]
    rows3 = []
    for k in keys:
        loss = losses(o.hidden)[k]
        params = loss.params(o.features)
        r = measure(loss, params, X, ys[k], o.chunk, placed[k], o.threads, o.repeat)
        t, flag = r["times"], lambda n, r=r: "!" if n in r["bad"] else ""
        rows1.append(f"| {k} | " + " | ".join(
            f"{ms(t[n], flag(n))} ({t[n] / t['hand']:.2f})" for n in names) + " |")
        rows2.append(f"| {k} | {ms(r['first'])} | " + " | ".join(
            f"{ms(t[n + ' build'])} / {ms(t[n + ' compute'])} / {ms(t[n + ' floor'])}"
            for n in names[2:]) + " |")
        client, Xc, yc = placed[k][names[-1]]
        m = traffic(loss, params, client, Xc, yc)
        graph = "n/a" if m["graph"] is None else mib(m["graph"])
        rows3.append(f"| {k} | {mib(m['params'])} | {m['tasks']} | {graph} | "
                     f"{mib(sum(m['between'].values()))} | {movers(m['between'])} | "
                     f"{mib(m['back'])} |")
    out += [head, "Time per gradient step (value and gradient, computed), ms; in brackets "
            "the ratio to the hand-written NumPy step (! = MISMATCH)\n", *rows1,
            "\nDask: the transform's call (builds the lazy graph) and dask.compute of a built "
            "graph, timed alone; floor = dask.compute of a one-task graph (the fixed cost of "
            "a round trip); first call = build + compile of a new transform\n", *rows2,
            f"\nWhat one step moves on '{names[-1]}': parameters (in the graph), the graph "
            "pickled without the persisted data (client -> scheduler), bytes the workers "
            "fetched from one another (mean of 5 steps; of which: the largest, by task name), "
            "results back to the client\n",
            "| loss | params | tasks | graph pickle | worker <-> worker | of which | "
            "back to client |",
            "| --- | --- | --- | --- | --- | --- | --- |", *rows3]


def part_scaling(o: argparse.Namespace, clients: dict[str, Client], out: list[str]) -> None:
    keys = ["logreg", "mlp"]
    placed, X, ys = place(clients, o.scale_rows, o.scale_features, o.scale_chunk, keys)
    one, two = clients
    out += [f"\n## 2. Scaling: {o.scale_rows} x {o.scale_features} float64 "
            f"({X.nbytes / 2**20:.0f} MiB), chunks of {o.scale_chunk} rows, generated and "
            "persisted on the workers; ms per step (ratio to hand-written NumPy)\n",
            f"| loss | hand | hand, chunked | dask threads | {one} | {two} | speedup t1/t2 |",
            "| --- | --- | --- | --- | --- | --- | --- |"]
    for k in keys:
        loss = losses(o.hidden)[k]
        params = loss.params(o.scale_features)
        want = loss.by_hand(params, X, ys[k])
        cols = columns(loss, params, X, ys[k], o.scale_chunk, placed[k], o.threads)
        bad = {n for n, c in cols.items() if mismatch(c[0](), want) is not None}
        for n in bad:
            print(f"MISMATCH: {k}: {n} differs from the hand-written gradient (scaling)")
        del cols["srcgrad numpy"]
        cols["hand, chunked"] = (functools.partial(chunked(loss.by_hand, o.scale_chunk),
                                                   params, X, ys[k]), None, None)
        if mismatch(cols["hand, chunked"][0](), want) is not None:
            bad.add("hand, chunked")
        t = interleaved({n: c[0] for n, c in cols.items()}, o.scale_repeat)
        cell = lambda n, t=t, bad=bad: f"{ms(t[n], '!' if n in bad else '')} " \
                                       f"({t[n] / t['hand']:.2f})"
        out.append(f"| {k} | {ms(t['hand'])} | {cell('hand, chunked')} | "
                   f"{cell('dask threads')} | {cell(one)} | {cell(two)} | "
                   f"{t[one] / t[two]:.2f} |")
    out.append(f"\nhand: one NumPy call over all rows, whose mlp temporaries are "
               f"{o.scale_rows * o.hidden * 8 / 2**20:.0f} MiB each: their page faults "
               "can cost much, and vary, on this machine; hand, chunked: the same code over "
               f"{o.scale_chunk}-row chunks in a loop (one thread), the fair one-core reference")


# ------------------------------------------------------------------------------ part 3
def part_out_of_core(o: argparse.Namespace, out: list[str]) -> None:
    loss = losses(o.hidden)["logreg"]
    w = loss.params(o.ooc_features)
    nbytes = o.ooc_rows * (o.ooc_features + 1) * 8
    with tempfile.TemporaryDirectory(prefix="dask_bench_") as tmp, \
            cluster(o.ooc_workers, o.ooc_memory) as lc, Client(lc) as client:
        client.run(sample_rss)
        X, noise = dask_data(o.ooc_rows, o.ooc_features, o.ooc_chunk)
        start = time.perf_counter()
        da.to_npy_stack(os.path.join(tmp, "X"), X)              # on the workers
        Xs = da.from_npy_stack(os.path.join(tmp, "X"), mmap_mode=None)
        da.to_npy_stack(os.path.join(tmp, "y"), labels(Xs, noise, "logreg"))
        write = time.perf_counter() - start
        write_peaks = peak_rss_mib(client)
        ys = da.from_npy_stack(os.path.join(tmp, "y"), mmap_mode=None)
        alive = set(client.scheduler_info()["workers"])
        f = srcgrad.value_and_grad(loss.fn, backend="dask", strict=True)
        out += [f"\n## 3. Out of core: {o.ooc_rows} x {o.ooc_features} float64 + labels "
                f"({nbytes / 2**20:.0f} MiB on disk, {len(Xs.chunks[0])} files of "
                f"{o.ooc_chunk} rows) > {o.ooc_workers} workers x {o.ooc_memory} "
                f"memory_limit; written by the workers in {write:.1f} s "
                f"({nbytes / 2**20 / write:.0f} MiB/s); logreg, gradient descent, "
                f"rate {o.rate}\n",
                "| step | build ms | step s | rows/s | MiB/s | loss |",
                "| --- | --- | --- | --- | --- | --- |"]
        for i in range(o.ooc_steps):
            start = time.perf_counter()
            lazy = f(w, Xs, ys)
            built = time.perf_counter() - start
            value, g = dask.compute(*lazy)
            t = time.perf_counter() - start
            out.append(f"| {i} | {built * 1e3:.1f} | {t:.2f} | {o.ooc_rows / t:,.0f} | "
                       f"{nbytes / 2**20 / t:.0f} | {float(value):.6f} |")
            w = descend(w, g, o.rate)
        now = set(client.scheduler_info()["workers"])
        peaks = peak_rss_mib(client)
        spilled = client.run(lambda dask_worker: getattr(dask_worker.data, "spilled_total",
                                                         (0, 0))[1])
        died = "no worker died" if now == alive else \
            f"WORKERS CHANGED: {sorted(alive)} -> {sorted(now)} (a worker died)"
        out.append(f"\nWorkers: {died}; peak RSS per worker (sampled every 10 ms) while "
                   f"training {peaks} MiB, while writing {write_peaks} MiB, limit "
                   f"{o.ooc_memory}; spilled to disk {mib(sum(spilled.values()))}")


# ------------------------------------------------------------------------------- main
QUICK = dict(rows=20_000, features=16, chunk=5_000, hidden=16, scale_rows=100_000,
             scale_features=32, scale_chunk=25_000, ooc_rows=200_000, ooc_features=16,
             ooc_chunk=20_000, ooc_memory="256MiB", ooc_steps=3, repeat=2, scale_repeat=2)


def options() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add = p.add_argument
    add("--quick", action="store_true", help="a small smoke run (sizes of QUICK)")
    add("--part", default="1,2,3", help="which measurements, e.g. 1,3")
    add("--repeat", type=int, default=5, help="interleaved rounds, part 1")
    add("--scale-repeat", type=int, default=3, help="interleaved rounds, part 2")
    add("--threads", type=int, default=os.cpu_count() or 2, help="threaded scheduler's threads")
    add("--hidden", type=int, default=64, help="MLP hidden units")
    add("--memory", default="3GiB", help="memory_limit per worker, parts 1 and 2")
    sizes = {"rows": 200_000, "features": 32, "chunk": 25_000, "scale-rows": 1_000_000,
             "scale-features": 64, "scale-chunk": 125_000, "ooc-rows": 2_400_000,
             "ooc-features": 64, "ooc-chunk": 25_000, "ooc-workers": 2}
    for name, default in sizes.items():
        add(f"--{name}", type=int, default=default)
    add("--ooc-memory", default="256MiB", help="memory_limit per worker, part 3")
    add("--ooc-steps", type=int, default=5)
    add("--rate", type=float, default=1.0, help="gradient-descent step, part 3")
    add("--system-malloc", action="store_true", help="leave glibc's malloc settings as they are")
    add("--workers-keep-memory", action="store_true",
        help="parts 1 and 2: the workers' malloc keeps freed memory too, as this process's")
    add("--save", default="/tmp/team/dask_bench.txt", help="also write the tables here")
    o = p.parse_args()
    if o.quick:
        typed = {arg.split("=")[0] for arg in sys.argv[1:]}
        given = {a.dest for a in p._actions if typed & set(a.option_strings)}
        for k, v in QUICK.items():
            if k not in given:
                setattr(o, k, v)
    return o


def main() -> None:
    o = options()
    malloc = "glibc default" if o.system_malloc or not keep_freed_memory() else \
        "freed memory kept for reuse (mallopt)"
    parts = set(o.part.split(","))
    out = [f"machine: {os.cpu_count()} cores; numpy {np.__version__}, dask {dask.__version__}, "
           f"distributed {distributed.__version__}, srcgrad; BLAS threads per process "
           f"{os.environ['DASK_BENCH_BLAS']}; threaded scheduler {o.threads} threads; clusters: "
           f"LocalCluster, processes, threads_per_worker=1; this process's malloc: {malloc}, "
           f"the workers': {'kept' if o.workers_keep_memory else 'distributed default'}; "
           "load average at the start "
           + " ".join(f"{x:.1f}" for x in os.getloadavg())]
    print(out[0], flush=True)
    start = time.perf_counter()
    if parts & {"1", "2"}:
        keep = o.workers_keep_memory
        with cluster(1, o.memory, keep) as lc1, Client(lc1, set_as_default=False) as c1, \
                cluster(2, o.memory, keep) as lc2, Client(lc2, set_as_default=False) as c2:
            clients = {"1 proc": c1, "2 procs": c2}
            for part, run in (("1", part_fits), ("2", part_scaling)):
                if part in parts:
                    before, began = len(out), time.perf_counter()
                    run(o, clients, out)
                    out.append(f"\n(part {part}: {time.perf_counter() - began:.0f} s)")
                    print("\n".join(out[before:]), flush=True)
    if "3" in parts:
        before, began = len(out), time.perf_counter()
        part_out_of_core(o, out)
        out.append(f"\n(part 3: {time.perf_counter() - began:.0f} s)")
        print("\n".join(out[before:]), flush=True)
    out.append(f"\ntotal {time.perf_counter() - start:.0f} s; load average at the end "
               + " ".join(f"{x:.1f}" for x in os.getloadavg()) + f" on {os.cpu_count()} cores")
    print(out[-1])
    if o.save:
        with open(o.save, "w") as fh:
            fh.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
