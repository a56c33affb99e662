"""Gradients through loops: peak memory and time against hand-written backpropagation
through time, and PyTorch eager, in one process.

1. Memory: 10,000 iterations updating a 1,000-float state, ``h = tanh(h * w + x)``; the peak
   memory (tracemalloc, which sees NumPy's buffers) of the compiled gradient against a
   hand-written BPTT that stores one state per step.
2. Time: a tanh RNN (T=50, hidden 64, batch 16) against hand-written BPTT and PyTorch eager,
   written with a loop-carried state and with a list of states (``hs.append``, ``np.stack``).
3. Time: a recurrence that fills an array element by element (``y[i] = y[i-1] * a + x[i]``),
   n = 1,000 and 4,000, against a hand-written reverse loop: the cost per iteration shows
   whether it grows with n (it does: each write copies the array).

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


def rnn_listed(w_h, w_x, xs, h0):
    hs = [h0]
    for x in xs:
        hs.append(np.tanh(hs[-1] @ w_h + x @ w_x))
    return np.mean(np.stack(hs[1:])[-1] ** 2)


def recurrence(x, a):
    y = np.zeros_like(x)
    y[0] = x[0]
    for i in range(1, x.shape[0]):
        y[i] = y[i - 1] * a + x[i]
    return np.sum(y ** 2)


def recurrence_by_hand(x, a):
    n = x.shape[0]
    y = np.zeros(n)
    y[0] = x[0]
    for i in range(1, n):
        y[i] = y[i - 1] * a + x[i]
    d_y, d_x, d_a = 2 * y, np.zeros(n), 0.0
    for i in range(n - 1, 0, -1):
        d_x[i] += d_y[i]
        d_a += d_y[i] * y[i - 1]
        d_y[i - 1] += d_y[i] * a
    d_x[0] += d_y[0]
    return d_x, d_a


def best_of(fn, *args, number=20):
    return min(timeit.repeat(lambda: fn(*args), number=number, repeat=7)) / number


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
    listed = srcgrad.grad(rnn_listed, wrt=(0, 1), strict=True)
    for a, b in zip(listed(w_h, w_x, xs, h0), rnn_by_hand(w_h, w_x, xs, h0)):
        np.testing.assert_allclose(a, b, rtol=1e-8, atol=1e-12)
    times = {"by hand": rnn_by_hand, "compiled": r, "list": listed}
    best = {k: min(timeit.repeat(lambda f=f: f(w_h, w_x, xs, h0), number=20, repeat=7)) / 20
            for k, f in times.items()}
    line = (f"tanh RNN T=50 hidden 64 batch 16: by hand {best['by hand'] * 1e3:.2f} ms, "
            f"compiled {best['compiled'] * 1e3:.2f} ms (ratio "
            f"{best['compiled'] / best['by hand']:.2f}), with a list of states "
            f"{best['list'] * 1e3:.2f} ms (ratio {best['list'] / best['by hand']:.2f})")
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

    fill = srcgrad.grad(recurrence, wrt=(0, 1), strict=True)
    for n in (1_000, 4_000):
        x, a = rng.normal(size=n) * 0.1, 0.9
        for got, want in zip(fill(x, a), recurrence_by_hand(x, a)):
            np.testing.assert_allclose(got, want, rtol=1e-8, atol=1e-12)
        compiled, hand = best_of(fill, x, a, number=3), best_of(recurrence_by_hand, x, a, number=3)
        print(f"element-wise recurrence n={n:,}: by hand {hand * 1e3:.2f} ms, compiled "
              f"{compiled * 1e3:.2f} ms (ratio {compiled / hand:.1f}; "
              f"{compiled / n * 1e6:.1f} us per iteration)")


if __name__ == "__main__":
    main()
