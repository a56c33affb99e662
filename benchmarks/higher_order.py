"""Forward mode and second derivatives against NumPy by hand, ``jax.jit`` and ``torch.func``.

All in one process, in float64, three sections:

* Hessian-vector products ``srcgrad.jvp(srcgrad.grad(f), (x,), (v,))`` (the gradient and
  the HVP) against ``jax.jit`` of ``jax.jvp(jax.grad(f))``, ``torch.func.jvp`` of
  ``torch.func.grad(f)`` and an HVP written by hand (Pearlmutter's R-operator), on a 2-layer
  tanh MLP loss in its parameters (144 and 8320 of them) and on a sum of elementwise
  functions of a vector of 10^3 and 10^5 floats (the jitted JAX function returns the HVP
  alone, the others the gradient too);
* full Hessians of 50-parameter functions (a small MLP loss, Rosenbrock): ``srcgrad.hessian``
  against ``jax.jit(jax.hessian(f))``, ``torch.func.hessian`` and NumPy by hand;
* ``srcgrad.jvp(f, (x,), (t,))`` against ``jax.jit`` of ``jax.jvp(f)``, ``torch.func.jvp``
  and a forward derivative by hand, on the same MLPs and elementwise functions.

Each function is written once over a module ``xp`` (NumPy, ``jax.numpy`` or ``torch``);
srcgrad compiles the NumPy one, with ``strict=True`` so that an eager fallback is an error
rather than a slow number.  Times are the best of ``--repeat`` short rounds, measured in
alternation, in the process's CPU time by default: every library runs on one thread, so on
an idle machine that is the wall-clock time, and on a shared one it leaves out the time the
process waited for a core (``--clock wall`` measures wall-clock time).  Ratios are to the
NumPy by hand.  srcgrad's build time (until its first call returns) and the first call of
``jax.jit`` (trace and compile) are reported apart, in wall-clock time.

Run: ``python benchmarks/higher_order.py [--quick] [--repeat N] [--clock cpu|wall]``.
"""

from __future__ import annotations

import os

# One BLAS thread, as PyTorch and XLA below: on a shared machine, OpenBLAS's threads make
# NumPy's small matrix-vector products slower by tens.  (It must be set before NumPy loads.)
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false "
                                   "intra_op_parallelism_threads=1")

import argparse  # noqa: E402
import functools  # noqa: E402
import time  # noqa: E402
import timeit  # noqa: E402
from collections.abc import Callable  # noqa: E402

import numpy as np  # noqa: E402

import srcgrad  # noqa: E402

rng = np.random.default_rng(0)


# ---------------------------------------------------------------------------- the workloads
def make_mlp(xp, X, y, d: int, k: int) -> Callable:
    """The mean squared error of ``tanh(X @ w1) @ w2`` in the flat parameters ``(w1, w2)``."""
    def mlp(p):
        w1 = p[:d * k].reshape(d, k)
        w2 = p[d * k:]
        h = xp.tanh(X @ w1)
        return xp.mean((h @ w2 - y) ** 2)
    return mlp


def make_elementwise(xp) -> Callable:
    def elementwise(x):
        return xp.sum(xp.sin(x) * x + xp.exp(-x * x) + xp.log1p(x * x))
    return elementwise


def make_rosenbrock(xp) -> Callable:
    def rosenbrock(x):
        return xp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)
    return rosenbrock


def mlp_hvps_by_hand(p, V, X, y, d: int, k: int):
    """The gradient of the MLP loss and its products with the rows of ``V`` (R-operator)."""
    w1, w2 = p[:d * k].reshape(d, k), p[d * k:]
    V1, v2 = V[:, :d * k].reshape(-1, d, k), V[:, d * k:]
    n = X.shape[0]
    h = np.tanh(X @ w1)
    s = 1 - h * h
    dr = 2 * (h @ w2 - y) / n
    dh = np.outer(dr, w2)
    grad = np.concatenate([(X.T @ (dh * s)).ravel(), h.T @ dr])
    Rh = s * (X @ V1)                                    # (m, n, k)
    Rdr = 2 * (Rh @ w2 + v2 @ h.T) / n                   # (m, n)
    Rdh = Rdr[:, :, None] * w2 + dr[:, None] * v2[:, None, :]
    Rda = Rdh * s - 2 * dh * h * Rh
    HV = np.concatenate([(X.T @ Rda).reshape(len(V), -1),
                         (Rh.swapaxes(1, 2) @ dr) + Rdr @ h], axis=1)
    return grad, HV


def mlp_jvp_by_hand(p, t, X, y, d: int, k: int):
    w1, w2 = p[:d * k].reshape(d, k), p[d * k:]
    t1, t2 = t[:d * k].reshape(d, k), t[d * k:]
    h = np.tanh(X @ w1)
    r = h @ w2 - y
    Rr = ((1 - h * h) * (X @ t1)) @ w2 + h @ t2
    return np.mean(r * r), 2 * np.mean(r * Rr)


def elementwise_hvp_by_hand(x, v):
    s, c, e, q = np.sin(x), np.cos(x), np.exp(-x * x), 1 + x * x
    grad = c * x + s - 2 * x * e + 2 * x / q
    return grad, (2 * c - x * s + (4 * x * x - 2) * e + (2 - 2 * x * x) / (q * q)) * v


def elementwise_jvp_by_hand(x, t):
    s, e, q = np.sin(x), np.exp(-x * x), x * x
    value = np.sum(s * x + e + np.log1p(q))
    return value, (np.cos(x) * x + s - 2 * x * e + 2 * x / (1 + q)) @ t


def rosenbrock_hessian_by_hand(x):
    n = len(x)
    i = np.arange(n - 1)
    H = np.zeros((n, n))
    H[i, i + 1] = H[i + 1, i] = -400 * x[:-1]
    diagonal = np.zeros(n)
    diagonal[:-1] = 1200 * x[:-1] ** 2 - 400 * x[1:] + 2
    diagonal[1:] += 200
    H[np.arange(n), np.arange(n)] = diagonal
    return H


def mlp_case(name: str, n: int, d: int, k: int):
    """``(name, factory, argument, hand-written functions)`` of an MLP of ``d·k + k``
    parameters on ``n`` samples; the factory makes the loss over a module (NumPy, jax.numpy,
    torch) and a converter of its data."""
    X, y = rng.normal(size=(n, d)), rng.normal(size=n)
    p = rng.normal(size=d * k + k) / np.sqrt(d)
    hands = {
        "hvp": lambda p, v: (lambda g, HV: (g, HV[0]))(*mlp_hvps_by_hand(p, v[None], X, y, d, k)),
        "hessian": lambda p: mlp_hvps_by_hand(p, np.eye(len(p)), X, y, d, k)[1],
        "jvp": lambda p, t: mlp_jvp_by_hand(p, t, X, y, d, k),
    }
    return name, lambda xp, to: make_mlp(xp, to(X), to(y), d, k), p, hands


def cases(section: str) -> list:
    x3, x5, x50 = rng.uniform(-2, 2, 10 ** 3), rng.uniform(-2, 2, 10 ** 5), rng.uniform(-1, 1, 50)
    elem = {"hvp": elementwise_hvp_by_hand, "jvp": elementwise_jvp_by_hand}
    elementwise = lambda xp, to: make_elementwise(xp)
    if section == "hessian":
        return [mlp_case("MLP 32x4-10-1, 50 params", 32, 4, 10),
                ("Rosenbrock, 50", lambda xp, to: make_rosenbrock(xp), x50,
                 {"hessian": rosenbrock_hessian_by_hand})]
    return [mlp_case("MLP 32x8-16-1, 144 params", 32, 8, 16),
            mlp_case("MLP 256x64-128-1, 8320 p.", 256, 64, 128),
            ("elementwise, 1e3", elementwise, x3, elem),
            ("elementwise, 1e5", elementwise, x5, elem)]


# ------------------------------------------------------------------------------ measuring
def best_times(fns: dict, repeat: int, target: float, timer: Callable[[], float]) -> dict:
    """The best time of each function, measured in alternation so drift hits all alike."""
    numbers = {}
    for name, fn in fns.items():
        t = timeit.timeit(fn, number=1, timer=timer)
        numbers[name] = max(1, int(target / max(t, 1e-7)))
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(repeat):
        for name, fn in fns.items():
            t = timeit.timeit(fn, number=numbers[name], timer=timer) / numbers[name]
            best[name] = min(best[name], t)
    return best


def first_call(make: Callable[[], Callable], *args) -> tuple[Callable, float, object]:
    """The function ``make()`` builds, the seconds until its first call returned, and that
    call's result."""
    start = time.perf_counter()
    fn = make()
    out = fn(*args)
    return fn, time.perf_counter() - start, out


def check(name: str, got, want, rtol: float) -> None:
    for a, b in zip(got if isinstance(got, tuple) else (got,),
                    want if isinstance(want, tuple) else (want,)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=1e-9,
                                   err_msg=name)


class Frameworks:
    """JAX and PyTorch, imported once, with the conversions to their arrays."""

    def __init__(self) -> None:
        import jax
        import torch
        jax.config.update("jax_enable_x64", True)
        torch.set_num_threads(1)
        self.jax, self.jnp, self.torch = jax, jax.numpy, torch

    def jax_array(self, a):
        return self.jax.device_put(np.asarray(a))

    def torch_tensor(self, a):
        return self.torch.from_numpy(np.asarray(a))

    def jit(self, fn: Callable) -> Callable:
        jitted = self.jax.jit(fn)
        return lambda *a: self.jax.block_until_ready(jitted(*a))


def transforms(section: str, fw: Frameworks, factory: Callable) -> dict:
    """The section's derivative by each library, as ``name: make()`` (built when called)."""
    jax, func = fw.jax, fw.torch.func
    f_np = factory(np, np.asarray)
    f_jax, f_torch = factory(fw.jnp, fw.jax_array), factory(fw.torch, fw.torch_tensor)
    if section == "hvp":
        return {
            "srcgrad": lambda: (lambda g: lambda x, v: srcgrad.jvp(g, (x,), (v,), strict=True))(
                srcgrad.grad(f_np, strict=True)),
            "jax": lambda: fw.jit(lambda x, v: jax.jvp(jax.grad(f_jax), (x,), (v,))[1]),
            "torch": lambda: lambda x, v: func.jvp(func.grad(f_torch), (x,), (v,)),
        }
    if section == "hessian":
        return {
            "srcgrad": lambda: srcgrad.hessian(f_np, strict=True),
            "jax": lambda: fw.jit(jax.hessian(f_jax)),
            "torch": lambda: func.hessian(f_torch),
            "jacfwd(grad)": lambda: srcgrad.jacfwd(srcgrad.grad(f_np, strict=True), strict=True),
        }
    return {
        "srcgrad": lambda: lambda x, t: srcgrad.jvp(f_np, (x,), (t,), strict=True),
        "jax": lambda: fw.jit(lambda x, t: jax.jvp(f_jax, (x,), (t,))),
        "torch": lambda: lambda x, t: func.jvp(f_torch, (x,), (t,)),
    }


TITLES = {"hvp": "Hessian-vector product: jvp(grad(f), (x,), (v,))",
          "hessian": "Full Hessian: hessian(f)",
          "jvp": "Forward mode: jvp(f, (x,), (t,))"}


def run_section(section: str, fw: Frameworks, repeat: int, target: float,
                timer: Callable[[], float]) -> None:
    print(f"\n{TITLES[section]}  (µs; ratios to NumPy by hand; build/compile: first call, ms)")
    print(f"{'workload':27} {'f(x)':>8} {'by hand':>8} {'srcgrad':>8} {'jax.jit':>8}"
          f" {'torch':>8} {'sg/hand':>7} {'jit/hand':>8} {'tch/hand':>8}"
          f" {'sg build':>8} {'jit comp':>8}")
    for name, factory, x, hands in cases(section):
        v = rng.normal(size=np.shape(x))
        args = (x,) if section == "hessian" else (x, v)
        hand = hands[section]
        want = hand(*args)
        f_np = factory(np, np.asarray)
        fns = {"f(x)": functools.partial(f_np, x), "hand": functools.partial(hand, *args)}
        builds = {}
        for lib, make in transforms(section, fw, factory).items():
            lib_args = args
            if lib == "jax":
                lib_args = tuple(map(fw.jax_array, args))
            elif lib == "torch":
                lib_args = tuple(map(fw.torch_tensor, args))
            fn, builds[lib], got = first_call(make, *lib_args)
            if section == "hvp" and lib == "jax":
                got = (want[0], got)                   # the jitted function gives the HVP only
            check(f"{section} {name} {lib}", got, want, 1e-7 if lib == "srcgrad" else 1e-6)
            fns[lib] = functools.partial(fn, *lib_args)
        t = best_times(fns, repeat, target, timer)
        h = t["hand"]
        print(f"{name:27} {t['f(x)'] * 1e6:8.1f} {h * 1e6:8.1f} {t['srcgrad'] * 1e6:8.1f}"
              f" {t['jax'] * 1e6:8.1f} {t['torch'] * 1e6:8.1f} {t['srcgrad'] / h:7.2f}"
              f" {t['jax'] / h:8.2f} {t['torch'] / h:8.2f} {builds['srcgrad'] * 1e3:8.1f}"
              f" {builds['jax'] * 1e3:8.1f}")
        if "jacfwd(grad)" in t:
            print(f"{'':27} srcgrad.jacfwd(srcgrad.grad(f)): {t['jacfwd(grad)'] * 1e6:.1f} µs, "
                  f"{t['jacfwd(grad)'] / h:.2f} × by hand, build "
                  f"{builds['jacfwd(grad)'] * 1e3:.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer and shorter rounds")
    parser.add_argument("--repeat", type=int, default=None, help="rounds (default 20, quick 4)")
    parser.add_argument("--clock", choices=("cpu", "wall"), default="cpu",
                        help="the process's CPU time (the default) or wall-clock time")
    args = parser.parse_args()
    repeat = args.repeat or (4 if args.quick else 20)
    target = 0.002 if args.quick else 0.005   # many short rounds: on a shared machine, the
    # best of them is likelier to have run undisturbed than the best of a few long ones
    timer = time.process_time if args.clock == "cpu" else time.perf_counter
    start = time.perf_counter()
    fw = Frameworks()
    srcgrad.jvp(srcgrad.grad(lambda x: np.sum(x * x)), (np.ones(2),), (np.ones(2),))
    print(f"imports and a first srcgrad build: {time.perf_counter() - start:.1f} s; "
          "build times below are warm")
    for section in ("hvp", "hessian", "jvp"):
        run_section(section, fw, repeat, target, timer)
    print(f"\ntotal {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
