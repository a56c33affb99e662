"""The six workloads of ``fused_kernels.py``, each with its hand-written gradient.

Every workload is a function written against a module-level ``np``; the benchmark rebinds that
name to ``jax.numpy`` (and, where the spelling allows, to ``torch``) so that the library
versions run the same code.  ``Workload.torch`` is set only where a literal transcription is
needed (``torch.max`` does not take ``keepdims``).

1. ``chain``: the 10-operation elementwise chain of ``compiled_gradients.py`` on 10^6 floats.
2. ``lse``: a row logsumexp over a 1000 x 1000 array with ``np.where`` (a leaky ramp) and
   ``np.maximum``; half the rows are shifted far below zero, so ``np.maximum(s, 0)`` cuts them.
3. ``tiny_ops``: 100 elementwise operations on a 64-vector (ten blocks of ten: sin, cos, exp,
   tanh, products, sums, differences and quotients by constants and by earlier values), then
   a sum.  The source is generated from one block template, and its gradient from one
   hand-written adjoint template, both written out in full as a person would (no loop).
4. ``rnn``: a tanh RNN, ``h = tanh(W @ h + U @ x_t)``, T = 50, hidden 32, input 16, the loss
   summed over the steps; gradient with respect to W and U.
5. ``small_mlp``: the tiny MLP of ``compiled_gradients.py`` (batch 32, 64-64-1, tanh, MSE).
6. ``large_mlp``: the large MLP of ``compiled_gradients.py`` (batch 512, 784-1024-10, tanh,
   softmax cross-entropy).
"""

from __future__ import annotations

import linecache
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from compiled_gradients import (
    chain,
    chain_by_hand,
    large_mlp,
    large_mlp_by_hand,
    tiny_mlp,
    tiny_mlp_by_hand,
)


@dataclass(frozen=True)
class Workload:
    """One workload: the function, its hand-written gradient, its arguments and ``wrt``."""

    key: str                           # for ``--only``
    name: str
    fn: Callable
    by_hand: Callable
    args: tuple
    wrt: Any
    torch: Callable | None = None      # a transcription when rebinding ``np`` cannot work


# ------------------------------------------------------------------------------ logsumexp
def lse(x):
    m = np.max(x, axis=1, keepdims=True)
    z = np.where(x > 0, x, 0.1 * x)
    s = np.log(np.sum(np.exp(z - m), axis=1)) + m[:, 0]
    return np.sum(np.maximum(s, 0.0))


def lse_by_hand(x):
    """The gradient a person writes: ``m`` is a constant (the rows' softmax sums to one, so
    its adjoint vanishes), and one buffer is reused in place for ``exp``, the softmax and the
    result."""
    m = np.max(x, axis=1, keepdims=True)
    negative = x <= 0
    z = np.multiply(x, 0.1, where=negative, out=x.copy())
    z -= m
    np.exp(z, out=z)
    total = np.sum(z, axis=1)
    active = np.log(total) + m[:, 0] > 0
    z *= (active / total)[:, None]
    np.multiply(z, 0.1, where=negative, out=z)
    return z


def lse_torch(x):
    import torch
    m = torch.amax(x, dim=1, keepdim=True)
    z = torch.where(x > 0, x, 0.1 * x)
    s = torch.log(torch.sum(torch.exp(z - m), dim=1)) + m[:, 0]
    return torch.sum(torch.clamp_min(s, 0.0))


# ------------------------------------------------------------------------- 100 tiny ops
_BLOCK = """\
    s{k} = np.sin(v{k})
    p{k} = s{k} * v{k}
    q{k} = p{k} / {c}
    e{k} = np.exp(q{k})
    a{k} = e{k} + v{k}
    t{k} = np.tanh(a{k})
    u{k} = t{k} * t{k}
    w{k} = u{k} - v{k}
    c{k} = np.cos(w{k})
    v{n} = c{k} / e{k}
"""

_BLOCK_ADJOINT = """\
    dc = d{n} / e{k}
    de = -d{n} * v{n} / e{k}
    dw = -dc * np.sin(w{k})
    dt = 2.0 * dw * t{k}
    da = dt * (1.0 - u{k})
    dp = (de + da) * e{k} / {c}
    d{k} = da - dw + dp * s{k} + dp * v{k} * np.cos(v{k})
"""

_BLOCKS = 10


def _constant(k: int) -> str:
    return repr(2.0 + k / 4)       # sin(v) * v >= 0 for |v| <= pi, so e >= 1 and |v| <= 1


def _tiny_ops_source() -> str:
    """The forward function and its hand-written gradient, as one module's text."""
    blocks = "".join(_BLOCK.format(k=k, n=k + 1, c=_constant(k)) for k in range(_BLOCKS))
    adjoints = "".join(_BLOCK_ADJOINT.format(k=k, n=k + 1, c=_constant(k))
                       for k in reversed(range(_BLOCKS)))
    last = f"v{_BLOCKS}"
    return (f"def tiny_ops(v0):\n{blocks}    return np.sum({last})\n\n\n"
            f"def tiny_ops_by_hand(v0):\n{blocks}    d{_BLOCKS} = np.ones_like({last})\n"
            f"{adjoints}    return d0\n")


def _load_tiny_ops() -> tuple[Callable, Callable]:
    """Exec the generated text under a file name that ``linecache`` (and so ``inspect``,
    which srcgrad reads the source with) knows."""
    text = _tiny_ops_source()
    filename = "<fused_workloads: tiny_ops>"
    linecache.cache[filename] = (len(text), None, text.splitlines(keepends=True), filename)
    namespace = {"np": np, "__name__": __name__}
    exec(compile(text, filename, "exec"), namespace)
    return namespace["tiny_ops"], namespace["tiny_ops_by_hand"]


tiny_ops, tiny_ops_by_hand = _load_tiny_ops()


# ------------------------------------------------------------------------------ tanh RNN
def rnn(w, u, xs, h0):
    h = h0
    total = 0.0
    for t in range(xs.shape[0]):
        h = np.tanh(w @ h + u @ xs[t])
        total = total + np.sum(h * h)
    return total


def rnn_by_hand(w, u, xs, h0):
    hs = [h0]
    for t in range(xs.shape[0]):
        hs.append(np.tanh(w @ hs[-1] + u @ xs[t]))
    d_w, d_u = np.zeros_like(w), np.zeros_like(u)
    d_h = np.zeros_like(h0)
    for t in range(xs.shape[0], 0, -1):
        d_h += 2.0 * hs[t]
        d_a = d_h * (1.0 - hs[t] * hs[t])
        d_w += np.outer(d_a, hs[t - 1])
        d_u += np.outer(d_a, xs[t - 1])
        d_h = w.T @ d_a
    return d_w, d_u


# ----------------------------------------------------------------------------- large MLP
def large_mlp_torch(w1, w2, x, labels):
    import torch
    h = torch.tanh(x @ w1)
    logits = h @ w2
    shifted = logits - torch.amax(logits, dim=1, keepdim=True)
    log_probs = shifted - torch.log(torch.sum(torch.exp(shifted), dim=1, keepdim=True))
    return -torch.mean(torch.sum(labels * log_probs, dim=1))


# ------------------------------------------------------------------------------ the data
def workloads() -> list[Workload]:
    """The six workloads with their arguments (float64, from a fixed seed)."""
    rng = np.random.default_rng(0)
    shifted = rng.normal(size=(1000, 1000)) - rng.uniform(0.0, 140.0, size=(1000, 1))
    w_rnn, u_rnn = rng.normal(size=(32, 32)) / 6.0, rng.normal(size=(32, 16)) / 4.0
    xs, h0 = rng.normal(size=(50, 16)), np.zeros(32)
    x32, y32 = rng.normal(size=(32, 64)), rng.normal(size=(32, 1))
    w1s, w2s = rng.normal(size=(64, 64)) / 8, rng.normal(size=(64, 1)) / 8
    x512 = rng.normal(size=(512, 784))
    labels = np.eye(10)[rng.integers(0, 10, 512)]
    w1l, w2l = rng.normal(size=(784, 1024)) / 28, rng.normal(size=(1024, 10)) / 32
    return [
        Workload("chain", "elementwise chain 1e6", chain, chain_by_hand,
                 (rng.uniform(-1, 1, 10 ** 6),), 0),
        Workload("lse", "row logsumexp 1000²", lse, lse_by_hand, (shifted,), 0, lse_torch),
        Workload("tiny_ops", "100 tiny ops, 64-vector", tiny_ops, tiny_ops_by_hand,
                 (rng.uniform(-1, 1, 64),), 0),
        Workload("rnn", "tanh RNN T=50 h=32", rnn, rnn_by_hand, (w_rnn, u_rnn, xs, h0), (0, 1)),
        Workload("small_mlp", "small MLP", tiny_mlp, tiny_mlp_by_hand,
                 (w1s, w2s, x32, y32), (0, 1)),
        Workload("large_mlp", "large MLP (BLAS)", large_mlp, large_mlp_by_hand,
                 (w1l, w2l, x512, labels), (0, 1), large_mlp_torch),
    ]
