"""Gradient descent on a dask.distributed cluster over a dataset larger than a worker's memory.

The losses below are plain NumPy.  ``srcgrad.value_and_grad(loss, backend="dask")`` turns each
into generated code over ``dask.array``, so a step over a Dask array ``X`` returns the loss and
the gradients as lazy Dask arrays, evaluated in one pass over the data.  Parameters stay small
NumPy arrays on the client.

The dataset is generated chunk by chunk on the workers, each chunk from its own seed, and
written to a folder of ``.npy`` files; every step reads it lazily from there again, so no
worker ever holds more than a few chunks.  With the defaults it is about 3x one worker's
``memory_limit`` (and more than the two workers' together)::

    python examples/dask_training.py                 # a LocalCluster of 2 worker processes
    python examples/dask_training.py --rows 200000 --steps 5
    python examples/dask_training.py --address tcp://scheduler:8786 --data-dir /shared/tmp

With ``--address`` the same code runs on an existing cluster; ``--data-dir`` must then be a
folder that every worker can read and write (a shared file system).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import resource
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

import srcgrad

MiB = 2 ** 20


def logistic_loss(w, X, y):
    """Mean binary cross-entropy of a logistic regression (the stable form of the logits)."""
    z = X @ w
    return np.mean(np.logaddexp(0.0, z) - y * z)


def mlp_loss(params, X, y):
    """The same loss for a one-hidden-layer tanh network; ``params`` is a dict of arrays."""
    hidden = np.tanh(X @ params["W1"] + params["b1"])
    z = hidden @ params["w2"] + params["b2"]
    return np.mean(np.logaddexp(0.0, z) - y * z)


def teacher(features: int, seed: int) -> np.ndarray:
    """The weights that label the data: logits of standard deviation about 3."""
    return np.random.default_rng(seed).normal(0.0, 3.0 / np.sqrt(features), features)


def write_chunk(folder: str, index: int, rows: int, features: int, seed: int) -> int:
    """Generate chunk ``index`` from its own seed, save it as ``X/index.npy`` and ``y/index.npy``
    and return its size in bytes (runs on a worker; no chunk depends on another)."""
    rng = np.random.default_rng([seed, index + 1])
    X = rng.standard_normal((rows, features))
    p = 1.0 / (1.0 + np.exp(-(X @ teacher(features, seed))))
    y = (rng.random(rows) < p).astype(np.float64)
    np.save(os.path.join(folder, "X", f"{index}.npy"), X)
    np.save(os.path.join(folder, "y", f"{index}.npy"), y)
    return X.nbytes + y.nbytes


def chunk_sizes(rows: int, chunk_rows: int) -> tuple[int, ...]:
    """Rows per chunk: ``chunk_rows`` each, the last one shorter."""
    return tuple(min(chunk_rows, rows - start) for start in range(0, rows, chunk_rows))


def write_dataset(client: Any, folder: str, rows: int, features: int, chunk_rows: int,
                  seed: int = 0, show_progress: bool = False) -> int:
    """Write the dataset chunk by chunk on the workers; return its size in bytes."""
    from dask.distributed import progress

    for name in ("X", "y"):
        os.makedirs(os.path.join(folder, name), exist_ok=True)
    sizes = chunk_sizes(rows, chunk_rows)
    futures = client.map(write_chunk, [folder] * len(sizes), range(len(sizes)), sizes,
                         features=features, seed=seed)
    if show_progress:
        progress(futures)
    return sum(client.gather(futures))


def read_dataset(folder: str, rows: int, features: int, chunk_rows: int) -> tuple[Any, Any]:
    """``X`` and ``y`` as lazy Dask arrays, one chunk per file, read on the workers when used."""
    import dask.array as da

    sizes = chunk_sizes(rows, chunk_rows)

    def load(name: str, block_id: tuple[int, ...] | None = None) -> np.ndarray:
        return np.load(os.path.join(folder, name, f"{block_id[0]}.npy"))

    X = da.map_blocks(load, "X", chunks=(sizes, (features,)), dtype=np.float64)
    y = da.map_blocks(load, "y", chunks=(sizes,), dtype=np.float64)
    return X, y


def train(loss: Callable, params: Any, X: Any, y: Any, *, steps: int, lr: float, client: Any,
          label: str = "", show_progress: bool = False, verbose: bool = True) -> tuple[Any, list]:
    """Plain gradient descent: each step is one pass over the data on the cluster; the update
    is NumPy on the client.  Returns the final parameters and the loss at every step."""
    from dask.distributed import progress

    step = srcgrad.value_and_grad(loss, backend="dask", strict=True)
    losses = []
    for k in range(steps):
        start = time.perf_counter()
        value, grads = step(params, X, y)           # lazy Dask arrays: nothing has run yet
        futures = client.compute([value, grads])    # one graph: loss and every gradient
        if show_progress:
            progress(futures)
        value, grads = client.gather(futures)
        params = update(params, grads, lr)
        losses.append(float(value))
        if verbose:
            print(f"{label:>8}  step {k + 1:3d}/{steps}  loss {losses[-1]:.4f}"
                  f"  ({time.perf_counter() - start:.2f} s)", flush=True)
    return params, losses


def update(params: Any, grads: Any, lr: float) -> Any:
    """``params - lr * grads`` over an array or a dict of arrays."""
    if isinstance(params, dict):
        return {name: params[name] - lr * grads[name] for name in params}
    return params - lr * grads


def mlp_init(features: int, hidden: int, seed: int = 1) -> dict[str, np.ndarray]:
    """Small random weights (scaled by fan-in) and zero biases for ``mlp_loss``."""
    rng = np.random.default_rng(seed)
    return {"W1": rng.normal(0.0, 1.0 / np.sqrt(features), (features, hidden)),
            "b1": np.zeros(hidden),
            "w2": rng.normal(0.0, 1.0 / np.sqrt(hidden), hidden),
            "b2": np.zeros(())}


def workers(client: Any) -> dict[str, int]:
    """Each worker's address and memory limit in bytes (a restarted worker has a new address)."""
    return {address: info["memory_limit"]
            for address, info in client.scheduler_info()["workers"].items()}


def peak_memory(client: Any) -> dict[str, int]:
    """Each worker process's peak resident memory in bytes since it started (Linux units)."""
    return client.run(lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)


@contextlib.contextmanager
def connect(address: str | None, n_workers: int, memory_limit: str) -> Iterator[Any]:
    """A ``Client`` of the cluster at ``address``, or of a new ``LocalCluster`` of worker
    processes with ``memory_limit`` each; both are closed on exit."""
    from dask.distributed import Client, LocalCluster

    if address:
        with Client(address) as client:
            yield client
        return
    with LocalCluster(n_workers=n_workers, processes=True, threads_per_worker=1,
                      memory_limit=memory_limit, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        yield client


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    """The command line; every size is a flag so that tests can run it small."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--address", help="scheduler of an existing cluster (default: start "
                        "a LocalCluster)")
    parser.add_argument("--workers", type=int, default=2, help="LocalCluster worker processes")
    parser.add_argument("--memory-limit", default="256MiB",
                        help="memory limit of each LocalCluster worker (default: 256MiB)")
    parser.add_argument("--rows", type=int, default=2_200_000)
    parser.add_argument("--features", type=int, default=32)
    parser.add_argument("--chunk-rows", type=int, default=40_000)
    parser.add_argument("--hidden", type=int, default=16, help="hidden units of the MLP")
    parser.add_argument("--steps", type=int, default=8, help="gradient steps per model")
    parser.add_argument("--lr", type=float, default=2.0)
    parser.add_argument("--data-dir", help="where to write the dataset (default: a temporary "
                        "folder, removed at the end; must be shared by all workers)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    parser.add_argument("--quiet", action="store_true", help="print nothing")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Run the example; return the losses and the memory facts that it prints."""
    args = parse(argv)
    verbose = not args.quiet
    show_progress = verbose and not args.no_progress and sys.stdout.isatty()
    say = print if verbose else (lambda *_: None)
    with connect(args.address, args.workers, args.memory_limit) as client, \
            tempfile.TemporaryDirectory(dir=args.data_dir) as folder:
        before = workers(client)
        start = time.perf_counter()
        nbytes = write_dataset(client, folder, args.rows, args.features, args.chunk_rows,
                               show_progress=show_progress)
        say(f"wrote {nbytes / MiB:.0f} MiB in {time.perf_counter() - start:.1f} s to {folder}")
        X, y = read_dataset(folder, args.rows, args.features, args.chunk_rows)
        losses = {}
        _, losses["logistic"] = train(logistic_loss, np.zeros(args.features), X, y,
                                      steps=args.steps, lr=args.lr, client=client,
                                      label="logistic", show_progress=show_progress,
                                      verbose=verbose)
        _, losses["mlp"] = train(mlp_loss, mlp_init(args.features, args.hidden), X, y,
                                 steps=args.steps, lr=args.lr, client=client, label="mlp",
                                 show_progress=show_progress, verbose=verbose)
        after, peaks = workers(client), peak_memory(client)
    limit = min(before.values())
    report = {"losses": losses, "data_bytes": nbytes, "memory_limit": limit,
              "workers_before": before, "workers_after": after, "peak_memory": peaks}
    if verbose:
        summarise(report)
    return report


def summarise(report: dict[str, Any]) -> None:
    """Print the losses, the data size against the memory limit, and lost workers."""
    nbytes, limit = report["data_bytes"], report["memory_limit"]
    before, after = report["workers_before"], report["workers_after"]
    for name, losses in report["losses"].items():
        print(f"{name}: loss {losses[0]:.4f} -> {losses[-1]:.4f}")
    print(f"dataset {nbytes / MiB:.0f} MiB; memory_limit {limit / MiB:.0f} MiB per worker, "
          f"{len(before)} workers: the data is {nbytes / limit:.1f}x one worker's limit, "
          f"{nbytes / sum(before.values()):.1f}x the cluster's")
    print("peak worker memory: " + ", ".join(f"{peak / MiB:.0f} MiB"
                                              for peak in report["peak_memory"].values()))
    lost = sorted(set(before) - set(after))
    print("workers died or restarted: " + (", ".join(lost) if lost else
                                          f"none (the same {len(after)} workers throughout)"))


if __name__ == "__main__":
    main()
