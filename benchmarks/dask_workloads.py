"""The two losses of ``dask_scaling.py``, their hand-written gradients and their data.

Both are plain NumPy functions, the kind a user writes for data that fits in memory; srcgrad
differentiates the same function object for NumPy arrays and for Dask arrays.

1. ``logreg``: logistic regression, ``mean(logaddexp(0, X @ w) - y * X @ w)``; labels in {0, 1}.
2. ``mlp``: one tanh hidden layer and a linear output, mean squared error; the parameters are a
   dict ``{"W1", "b1", "w2", "b2"}``.  The output weight is a vector (``h @ w2``), not an
   ``(H, 1)`` matrix, so the loss needs no ``out[:, 0]``.

The data are standard normal features; the labels are made from the features by a fixed
"true" model plus noise, so the losses fall under gradient descent.  ``dask_data`` builds the
same numbers lazily, chunk by chunk, so that a cluster generates them on its workers.  The
last section holds the probes ``dask_scaling.py`` reads: the graph a step sends, the bytes the
workers exchange, the workers' peak memory, and this process's malloc setting.
"""

from __future__ import annotations

import ctypes
import pickle
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import dask
import numpy as np
from dask._expr import FinalizeCompute
from distributed import Client


def logreg(w, X, y):
    z = X @ w
    return np.mean(np.logaddexp(0.0, z) - y * z)


def logreg_by_hand(w, X, y):
    """Value and gradient as a person writes them: the sigmoid from the forward's
    ``logaddexp`` (``exp(z - logaddexp(0, z))``, which cannot overflow)."""
    z = X @ w
    softplus = np.logaddexp(0.0, z)
    value = np.mean(softplus - y * z)
    return value, X.T @ (np.exp(z - softplus) - y) / len(z)


def mlp(params, X, y):
    h = np.tanh(X @ params["W1"] + params["b1"])
    out = h @ params["w2"] + params["b2"]
    return np.mean((out - y) ** 2)


def mlp_by_hand(params, X, y):
    h = np.tanh(X @ params["W1"] + params["b1"])
    r = h @ params["w2"] + params["b2"] - y
    d_out = (2.0 / len(r)) * r
    d_a = np.outer(d_out, params["w2"])
    d_a *= 1.0 - h * h
    grads = {"W1": X.T @ d_a, "b1": d_a.sum(axis=0), "w2": h.T @ d_out,
             "b2": np.asarray(d_out.sum())}
    return np.mean(r * r), grads


@dataclass(frozen=True)
class Loss:
    """A loss, its hand-written value and gradient, and its starting parameters."""

    key: str
    fn: Callable
    by_hand: Callable
    params: Callable[[int], Any]       # features -> the starting parameters


def _mlp_params(hidden: int) -> Callable[[int], dict]:
    def make(features: int) -> dict:
        rng = np.random.default_rng(1)
        return {"W1": rng.normal(size=(features, hidden)) / np.sqrt(features),
                "b1": np.zeros(hidden), "w2": rng.normal(size=hidden) / np.sqrt(hidden),
                "b2": np.zeros(())}
    return make


def losses(hidden: int) -> dict[str, Loss]:
    return {"logreg": Loss("logreg", logreg, logreg_by_hand,
                           lambda d: np.random.default_rng(1).normal(size=d) * 0.01),
            "mlp": Loss("mlp", mlp, mlp_by_hand, _mlp_params(hidden))}


def labels(X: Any, noise: Any, key: str) -> Any:
    """Labels from a fixed true model: {0, 1} for ``logreg``, real for ``mlp``."""
    truth = np.linspace(-1.0, 1.0, X.shape[1]) / np.sqrt(X.shape[1])
    score = X @ truth + 0.5 * noise
    return (score > 0).astype(float) if key == "logreg" else np.tanh(score)


def dask_data(rows: int, features: int, chunk: int, seed: int = 0) -> tuple:
    """``X`` and the labels' noise as lazy Dask arrays chunked by rows, generated where they
    are computed (``labels(X, noise, key)`` makes ``y``)."""
    import dask.array as da
    rng = da.random.default_rng(seed)
    X = rng.standard_normal((rows, features), chunks=(chunk, features))
    noise = rng.standard_normal(rows, chunks=chunk)
    return X, noise


def flat_nbytes(tree: Any) -> int:
    """Bytes of every array in a value, a tuple of values or a dict of them."""
    if isinstance(tree, dict):
        return sum(flat_nbytes(v) for v in tree.values())
    if isinstance(tree, (tuple, list)):
        return sum(flat_nbytes(v) for v in tree)
    return int(getattr(tree, "nbytes", 8))


def mismatch(got: Any, want: Any) -> str | None:
    """Why the value-and-gradient ``got`` differs from ``want`` (rtol 1e-8), or None."""
    pairs = [(got[0], want[0])]
    g, w = got[1], want[1]
    pairs += [(g[k], w[k]) for k in w] if isinstance(w, dict) else [(g, w)]
    for i, (a, b) in enumerate(pairs):
        a, b = np.asarray(a, dtype=float), np.asarray(b)
        if a.shape != b.shape:
            return f"part {i}: shape {a.shape}, expected {b.shape}"
        scale = float(np.max(np.abs(b))) if b.size else 0.0
        if not np.allclose(a, b, rtol=1e-8, atol=1e-12 * scale):
            return f"part {i}: max abs error {float(np.max(np.abs(a - b))):.3g} (scale {scale:.3g})"
    return None


def chunked(by_hand: Callable, chunk: int) -> Callable:
    """A hand-written value-and-gradient of a mean loss, run over row chunks in a loop: the
    same arithmetic as one call, with temporaries of ``chunk`` rows instead of all of them."""
    def run(params, X, y):
        parts = [(len(y[i:i + chunk]), by_hand(params, X[i:i + chunk], y[i:i + chunk]))
                 for i in range(0, len(y), chunk)]
        value = sum(n * v for n, (v, _) in parts) / len(y)
        if isinstance(params, dict):
            return value, {k: sum(n * g[k] for n, (_, g) in parts) / len(y) for k in params}
        return value, sum(n * g for n, (_, g) in parts) / len(y)
    return run


def descend(params: Any, grads: Any, rate: float) -> Any:
    """One gradient-descent step on an array or a dict of arrays."""
    if isinstance(params, dict):
        return {k: params[k] - rate * np.asarray(grads[k]) for k in params}
    return params - rate * np.asarray(grads)


# ------------------------------------------------- probes the benchmark reads (dask_scaling)
def keep_freed_memory() -> bool:
    """Ask glibc to reuse freed memory for large arrays in this process, instead of giving it
    back and faulting fresh pages in at every step (mallopt: mmap and trim thresholds of
    1 GiB).  Without it, a NumPy step that allocates 100 MB temporaries spent most of its time
    in page faults here, and varied 5x from run to run.  False where glibc is not there."""
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return False
    M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
    return bool(libc.mallopt(M_MMAP_THRESHOLD, 2**30) and libc.mallopt(M_TRIM_THRESHOLD, 2**30))


def graph_facts(lazy: tuple, persisted: tuple) -> tuple[int, int | None]:
    """Tasks in the step's graph, built as ``dask.compute`` builds it, and the bytes of its
    pickle without the persisted data (about what the client sends the scheduler; None when
    the graph does not pickle)."""
    leaves = [lazy[0], *(lazy[1].values() if isinstance(lazy[1], dict) else [lazy[1]])]
    expr = FinalizeCompute(dask.base.collections_to_expr(leaves, True)).optimize()
    graph = dict(expr.__dask_graph__())
    held = {k for a in persisted for k in dask.core.flatten(a.__dask_keys__())}
    try:
        size = len(pickle.dumps({k: v for k, v in graph.items() if k not in held}, protocol=5))
    except Exception:
        size = None
    return len(graph), size


def transferred(client: Client) -> Counter:
    """Bytes the cluster's workers have fetched from one another so far, by task name (the
    key's name without its token: ``chunk_sum``, ``getitem``...)."""
    def fetched(dask_worker: Any) -> dict:
        out = Counter()
        for entry in dask_worker.transfer_incoming_log:
            for key, nbytes in entry["keys"].items():
                out[(key[0] if isinstance(key, tuple) else str(key)).rsplit("-", 1)[0]] += nbytes
        return dict(out)
    return sum((Counter(logs) for logs in client.run(fetched).values()), Counter())


def sample_rss(dask_worker: Any, every: float = 0.01) -> None:
    """Start a thread on a worker that keeps the largest RSS it sees in ``_bench_peak``."""
    import threading

    import psutil
    process = psutil.Process()
    dask_worker._bench_peak = process.memory_info().rss

    def sample() -> None:
        while dask_worker.status.name not in ("closing", "closed"):
            dask_worker._bench_peak = max(dask_worker._bench_peak, process.memory_info().rss)
            time.sleep(every)
    threading.Thread(target=sample, daemon=True).start()


def peak_rss_mib(client: Client) -> str:
    """Each worker's largest RSS since ``sample_rss`` started or was last read, MiB.
    (Not ``ru_maxrss``: a spawned worker inherits its parent's through fork and exec.)"""
    def read(dask_worker: Any) -> int:
        peak, dask_worker._bench_peak = dask_worker._bench_peak, 0
        return peak
    return ", ".join(f"{b / 2**20:.0f}" for b in client.run(read).values())
