"""Gradients through loops: peak memory and time against hand-written backpropagation
through time, and PyTorch eager, in one process.

1. Memory: 10,000 iterations updating a 1,000-float state, ``h = tanh(h * w + x)``; the peak
   memory (tracemalloc, which sees NumPy's buffers) of the compiled gradient against a
   hand-written BPTT that stores one state per step.
2. Time: a tanh RNN (T=50, hidden 64, batch 16) against hand-written BPTT and PyTorch eager.

Run: ``python benchmarks/loops.py``.
"""

from __future__ import annotations

import importlib.util
import timeit
import tracemalloc

import numpy as np

import srcgrad

rng = np.random.default_rng(0)


def long_loop(w, x, n):
    h = x * 0.0
    for _ in range(n):
        h = np.tanh(h * w + x)
    return np.sum(h)


def long_loop_by_hand(w, x, n):
    hs = [x * 0.0]
    for _ in range(n):
        hs.append(np.tanh(hs[-1] * w + x))
    d_h = np.ones_like(x)
    d_w = np.zeros_like(w)
    for t in range(n, 0, -1):
        d_a = d_h * (1 - hs[t] * hs[t])
        d_w += d_a * hs[t - 1]
        d_h = d_a * w
    return d_w


def rnn(w_h, w_x, xs, h0):
    h = h0
    for t in range(xs.shape[0]):
        h = np.tanh(h @ w_h + xs[t] @ w_x)
    return np.mean(h ** 2)


def rnn_by_hand(w_h, w_x, xs, h0):
    hs = [h0]
    for t in range(xs.shape[0]):
        hs.append(np.tanh(hs[-1] @ w_h + xs[t] @ w_x))
    d_h = 2 * hs[-1] / hs[-1].size
    d_wh, d_wx = np.zeros_like(w_h), np.zeros_like(w_x)
    for t in range(xs.shape[0], 0, -1):
        d_a = d_h * (1 - hs[t] * hs[t])
        d_wh += hs[t - 1].T @ d_a
        d_wx += xs[t - 1].T @ d_a
        d_h = d_a @ w_h.T
    return d_wh, d_wx


def peak(fn, *args):
    tracemalloc.start()
    fn(*args)
    _, top = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return top


def main() -> None:
    w, x = rng.uniform(0.5, 1.0, 1000), rng.normal(size=1000)
    g = srcgrad.grad(long_loop, strict=True)
    np.testing.assert_allclose(g(w, x, 10_000), long_loop_by_hand(w, x, 10_000), rtol=1e-8)
    compiled_peak = peak(g, w, x, 10_000)
    hand_peak = peak(long_loop_by_hand, w, x, 10_000)
    print(f"10,000 steps x 1,000 floats: peak memory compiled {compiled_peak / 2**20:.1f} MiB, "
          f"by hand {hand_peak / 2**20:.1f} MiB, ratio {compiled_peak / hand_peak:.2f}")

    w_h, w_x = rng.normal(size=(64, 64)) / 8, rng.normal(size=(32, 64)) / 6
    xs, h0 = rng.normal(size=(50, 16, 32)), np.zeros((16, 64))
    r = srcgrad.grad(rnn, wrt=(0, 1), strict=True)
    for a, b in zip(r(w_h, w_x, xs, h0), rnn_by_hand(w_h, w_x, xs, h0)):
        np.testing.assert_allclose(a, b, rtol=1e-8, atol=1e-12)
    times = {"by hand": rnn_by_hand, "compiled": r}
    best = {k: min(timeit.repeat(lambda f=f: f(w_h, w_x, xs, h0), number=20, repeat=7)) / 20
            for k, f in times.items()}
    line = (f"tanh RNN T=50 hidden 64 batch 16: by hand {best['by hand'] * 1e3:.2f} ms, "
            f"compiled {best['compiled'] * 1e3:.2f} ms (ratio "
            f"{best['compiled'] / best['by hand']:.2f})")
    if importlib.util.find_spec("torch") is not None:
        import torch
        torch.set_num_threads(1)
        tw_h = torch.tensor(w_h, requires_grad=True)
        tw_x = torch.tensor(w_x, requires_grad=True)
        txs, th0 = torch.tensor(xs), torch.tensor(h0)

        def torch_rnn():
            tw_h.grad = tw_x.grad = None
            h = th0
            for t in range(50):
                h = torch.tanh(h @ tw_h + txs[t] @ tw_x)
            (h ** 2).mean().backward()
        t_torch = min(timeit.repeat(torch_rnn, number=20, repeat=7)) / 20
        line += f", PyTorch eager {t_torch * 1e3:.2f} ms (ratio {best['compiled'] / t_torch:.2f})"
    print(line)


if __name__ == "__main__":
    main()
