"""Compiled gradients against hand-written NumPy, srcgrad's eager engine and PyTorch eager.

All in one process, on four workloads: a tiny MLP (batch 32, 64-64-1, tanh, MSE), a large MLP
(batch 512, 784-1024-10, softmax cross-entropy), a 10-operation elementwise chain on 10^6
floats, and a scalar function of about 20 operations on Python floats.  Prints, per workload,
the time of each and the ratios compiled / hand-written and compiled gradient / forward, and
the time ``srcgrad.grad`` takes to build each gradient.

Run: ``python benchmarks/compiled_gradients.py [--repeat N]``.
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import math
import time
import timeit

import numpy as np

import srcgrad

rng = np.random.default_rng(0)


# ---------------------------------------------------------------------------- the workloads
def tiny_mlp(w1, w2, x, y):
    h = np.tanh(x @ w1)
    pred = h @ w2
    return np.mean((pred - y) ** 2)


def tiny_mlp_by_hand(w1, w2, x, y):
    h = np.tanh(x @ w1)
    pred = h @ w2
    d_pred = 2 * (pred - y) / pred.size
    d_w2 = h.T @ d_pred
    d_h = d_pred @ w2.T
    d_a = d_h * (1 - h * h)
    return x.T @ d_a, d_w2


def large_mlp(w1, w2, x, labels):
    h = np.tanh(x @ w1)
    logits = h @ w2
    shifted = logits - np.max(logits, axis=1, keepdims=True)
    log_probs = shifted - np.log(np.sum(np.exp(shifted), axis=1, keepdims=True))
    return -np.mean(np.sum(labels * log_probs, axis=1))


def large_mlp_by_hand(w1, w2, x, labels):
    h = np.tanh(x @ w1)
    logits = h @ w2
    shifted = logits - np.max(logits, axis=1, keepdims=True)
    e = np.exp(shifted)
    probs = e / np.sum(e, axis=1, keepdims=True)
    d_logits = (probs - labels) / x.shape[0]
    d_w2 = h.T @ d_logits
    d_a = (d_logits @ w2.T) * (1 - h * h)
    return x.T @ d_a, d_w2


def chain(x):
    y = np.sin(x)
    y = y * x
    y = np.exp(y * 0.1)
    y = y + x
    y = np.tanh(y)
    y = y * y
    y = y - x
    y = np.cos(y)
    y = y * 2.0
    return np.sum(y)


def chain_by_hand(x):
    s = np.sin(x)
    a = s * x
    e = np.exp(a * 0.1)
    b = e + x
    t = np.tanh(b)
    sq = t * t
    c = sq - x
    d_c = -2.0 * np.sin(c)
    d_t = d_c * 2 * t
    d_b = d_t * (1 - t * t)
    d_a = d_b * e * 0.1
    return d_c * -1 + d_b + d_a * (np.cos(x) * x + s)


def scalar(a, b):
    c = a * b + math.sin(a)
    d = math.exp(-c * c) + b / (1.0 + a * a)
    e = math.tanh(d) * c - math.log(1.0 + b * b)
    f = math.sqrt(e * e + 1.0) + a * d
    return f * f + e - c / (2.0 + d * d)


def scalar_by_hand(a, b):
    sa = math.sin(a)
    c = a * b + sa
    ec = math.exp(-c * c)
    q = 1.0 + a * a
    d = ec + b / q
    th = math.tanh(d)
    r = 1.0 + b * b
    e = th * c - math.log(r)
    s = math.sqrt(e * e + 1.0)
    f = s + a * d
    p = 2.0 + d * d
    d_f = 2 * f
    d_e = 1.0 + d_f * e / s
    d_c = -1.0 / p + d_e * th
    d_d = c * d_e * (1 - th * th) + d_f * a + c / (p * p) * 2 * d
    d_a = d_f * d
    d_b = -d_e * 2 * b / r
    d_c += d_d * ec * (-2 * c)
    d_b += d_d / q
    d_a += -d_d * b / (q * q) * 2 * a
    d_a += d_c * (b + math.cos(a))
    d_b += d_c * a
    return d_a, d_b


# ------------------------------------------------------------------------------ measuring
def interleaved(fns: dict, repeat: int) -> dict:
    """The best time of each function, measured in alternation so drift hits all alike."""
    numbers = {}
    for name, fn in fns.items():
        t = timeit.timeit(fn, number=1)
        numbers[name] = max(1, int(0.02 / max(t, 1e-7)))
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(repeat):
        for name, fn in fns.items():
            t = timeit.timeit(fn, number=numbers[name]) / numbers[name]
            best[name] = min(best[name], t)
    return best


def workloads():
    x32, y32 = rng.normal(size=(32, 64)), rng.normal(size=(32, 1))
    w1s, w2s = rng.normal(size=(64, 64)) / 8, rng.normal(size=(64, 1)) / 8
    x512 = rng.normal(size=(512, 784))
    labels = np.eye(10)[rng.integers(0, 10, 512)]
    w1l, w2l = rng.normal(size=(784, 1024)) / 28, rng.normal(size=(1024, 10)) / 32
    big = rng.uniform(-1, 1, 10 ** 6)
    return [
        ("tiny MLP", tiny_mlp, tiny_mlp_by_hand, (w1s, w2s, x32, y32), (0, 1)),
        ("large MLP", large_mlp, large_mlp_by_hand, (w1l, w2l, x512, labels), (0, 1)),
        ("elementwise chain 1e6", chain, chain_by_hand, (big,), 0),
        ("scalar, 20 ops", scalar, scalar_by_hand, (0.7, 1.3), (0, 1)),
    ]


def eager_gradient(lib, name, args):
    """The gradient by an eager engine: PyTorch's, or srcgrad's (the same code)."""
    torch = lib
    t = [torch.tensor(a, requires_grad=True) if isinstance(a, np.ndarray) else
         torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in args]
    if name == "tiny MLP":
        def run():
            for v in t:
                v.grad = None
            h = torch.tanh(t[2] @ t[0])
            ((h @ t[1] - t[3]) ** 2).mean().backward()
    elif name == "large MLP":
        def run():
            for v in t:
                v.grad = None
            logits = torch.tanh(t[2] @ t[0]) @ t[1]
            (-(t[3] * torch.log_softmax(logits, 1)).sum(1).mean()).backward()
    elif name.startswith("elementwise"):
        def run():
            x = t[0]
            x.grad = None
            y = torch.sin(x) * x
            y = torch.tanh(torch.exp(y * 0.1) + x)
            torch.cos(y * y - x).mul(2.0).sum().backward()
    else:
        def run():
            a, b = t
            a.grad = b.grad = None
            c = a * b + torch.sin(a)
            d = torch.exp(-c * c) + b / (1.0 + a * a)
            e = torch.tanh(d) * c - torch.log(1.0 + b * b)
            f = torch.sqrt(e * e + 1.0) + a * d
            (f * f + e - c / (2.0 + d * d)).backward()
    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    args_ = parser.parse_args()
    has_torch = importlib.util.find_spec("torch") is not None
    torch = None
    if has_torch:
        import torch
        torch.set_num_threads(1)
    header = (f"{'workload':24} {'forward':>10} {'by hand':>10} {'compiled':>10} {'eager':>10}"
              f" {'torch':>10} {'comp/hand':>9} {'grad/fwd':>8} {'build ms':>8}")
    start = time.perf_counter()
    srcgrad.grad(lambda x: np.sum(x * x))       # the first build in a process pays imports
    print(f"first grad() in the process: {(time.perf_counter() - start) * 1e3:.0f} ms "
          "(imports included); build times below are warm")
    print(header)
    for name, fn, by_hand, args, wrt in workloads():
        start = time.perf_counter()
        g = srcgrad.grad(fn, wrt=wrt, strict=True)
        build_ms = (time.perf_counter() - start) * 1e3
        ref = by_hand(*args)
        got = g(*args)
        for a, b in zip(got if isinstance(got, tuple) else (got,),
                        ref if isinstance(ref, tuple) else (ref,)):
            np.testing.assert_allclose(a, b, rtol=1e-7, atol=1e-9)
        fns = {"fwd": functools.partial(fn, *args), "hand": functools.partial(by_hand, *args),
               "comp": functools.partial(g, *args),
               "eager": eager_gradient(srcgrad, name, args)}
        if has_torch:
            fns["torch"] = eager_gradient(torch, name, args)
        t = interleaved(fns, args_.repeat)
        t_fwd, t_hand, t_comp, t_eager = t["fwd"], t["hand"], t["comp"], t["eager"]
        t_torch = t.get("torch", float("nan"))
        print(f"{name:24} {t_fwd * 1e6:9.1f}µ {t_hand * 1e6:9.1f}µ {t_comp * 1e6:9.1f}µ "
              f"{t_eager * 1e6:9.1f}µ {t_torch * 1e6:9.1f}µ {t_comp / t_hand:9.2f} "
              f"{t_comp / t_fwd:8.2f} {build_ms:8.1f}")


if __name__ == "__main__":
    main()
