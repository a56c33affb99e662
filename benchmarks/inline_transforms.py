"""``srcgrad.grad(f)(x)`` written inline, as HIPS autograd's users write it, against a transform
made once and called, in one process.

Each call of ``grad(f)`` looks up the transform made before for the same function (its code,
globals, closure values and defaults) instead of building it again.  Prints the cost of an
inline call with the reuse, of one that builds every time (the reuse turned off by clearing
the map), and of a prebuilt transform, for ``grad`` and ``hessian``, and the ratios to the
prebuilt call (1.0 is the floor).  HIPS autograd's own inline ``grad(f)(x)`` is printed beside
them when it is installed.

Run: ``python benchmarks/inline_transforms.py [--repeat N]``.
"""

from __future__ import annotations

import argparse
import importlib.util
import time

import numpy as np

import srcgrad
from srcgrad.transforms.cache import TRANSFORMS


def loss(w, x, y):
    z = np.tanh(x @ w)
    return np.mean((z - y) ** 2)


def _per_call(fn, n: int) -> float:
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, (time.perf_counter() - start) / n)
    return best


def _report(name: str, make, args: tuple, calls: int) -> None:
    prebuilt = make(loss)
    prebuilt(*args)
    made = _per_call(lambda: prebuilt(*args), calls)
    reused = _per_call(lambda: make(loss)(*args), calls)

    def rebuilt():
        TRANSFORMS.clear()
        make(loss)(*args)
    built = _per_call(rebuilt, max(2, calls // 100))
    print(f"{name:8s} prebuilt {made * 1e6:9.1f} us   inline {reused * 1e6:9.1f} us "
          f"({reused / made:.2f}x)   rebuilt every call {built * 1e6:9.1f} us "
          f"({built / made:.0f}x)")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=500)
    n = parser.parse_args().repeat
    rng = np.random.default_rng(0)
    args = rng.normal(size=5), rng.normal(size=(20, 5)), rng.normal(size=20)
    for name, make, calls in (("grad", srcgrad.grad, n), ("hessian", srcgrad.hessian, n // 10)):
        _report(name, make, args, calls)
    if importlib.util.find_spec("autograd") is not None:
        import autograd
        import autograd.numpy as anp

        def aloss(w, x, y):
            return anp.mean((anp.tanh(x @ w) - y) ** 2)
        hips = _per_call(lambda: autograd.grad(aloss)(*args), n)
        print(f"HIPS autograd inline grad {hips * 1e6:.1f} us")


if __name__ == "__main__":
    main()
