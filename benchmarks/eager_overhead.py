"""Per-operation cost of the eager engine against PyTorch's eager autograd, in one process.

A tiny tensor (4 floats) goes through a chain of 100 elementwise operations, then backward.
What is measured is pure framework overhead: the arithmetic itself is negligible.  Prints the
microseconds per operation (forward + its share of backward) of each and the ratio
srcgrad / PyTorch (below 1 means srcgrad is faster).

Run: ``python benchmarks/eager_overhead.py [--repeat N]``.
"""

from __future__ import annotations

import argparse
import importlib.util
import timeit

import numpy as np

import srcgrad

OPS = 100


def chain(lib, x):
    y = x
    for k in range(OPS // 4):
        y = y * 1.0001
        y = y + 0.5
        y = y.tanh() if k % 2 else y.sin()
        y = y - 0.25
    return y.sum()


def run(lib, x):
    x.grad = None
    chain(lib, x).backward()


def measure(lib, make, repeat: int, number: int) -> float:
    x = make()
    run(lib, x)                                   # warm up
    best = min(timeit.repeat(lambda: run(lib, x), number=number, repeat=repeat))
    return best / number / OPS * 1e6            # µs per op


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--number", type=int, default=50)
    args = parser.parse_args()
    data = np.linspace(0.1, 0.4, 4).astype(np.float32)
    ours = measure(srcgrad, lambda: srcgrad.tensor(data, requires_grad=True), args.repeat,
                   args.number)
    print(f"srcgrad eager : {ours:6.2f} µs per op (forward + backward, {OPS}-op chain, 4 floats)")
    if importlib.util.find_spec("torch") is None:
        print("PyTorch not installed: no ratio")
        return
    import torch
    torch.set_num_threads(1)
    theirs = measure(torch, lambda: torch.tensor(data, requires_grad=True), args.repeat,
                     args.number)
    print(f"PyTorch eager : {theirs:6.2f} µs per op")
    print(f"ratio srcgrad / PyTorch = {ours / theirs:.2f}")


if __name__ == "__main__":
    main()
