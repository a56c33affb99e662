"""Functions whose generated gradient source is kept in tests/codegen/snapshots/ for review."""

import numpy as np


def mlp_loss(params, x, y):
    """A two-layer tanh MLP with a mean squared error."""
    h = np.tanh(x @ params["W1"] + params["b1"])
    pred = h @ params["W2"] + params["b2"]
    return np.mean((pred - y) ** 2)


def logistic_regression(w, b, x, y):
    """Binary cross-entropy of a logistic model, written with log1p for stability."""
    z = x @ w + b
    return np.mean(np.log1p(np.exp(-z)) + (1 - y) * z)


def softmax_cross_entropy(w, x, labels):
    """Softmax cross-entropy with one-hot labels, the log-sum-exp shifted by the max."""
    logits = x @ w
    shifted = logits - np.max(logits, axis=1, keepdims=True)
    log_probs = shifted - np.log(np.sum(np.exp(shifted), axis=1, keepdims=True))
    return -np.mean(np.sum(labels * log_probs, axis=1))


def rnn_states(h0, w_h, w_x, xs):
    """A tanh RNN that keeps its states in a list and scores their mean square."""
    hs = [h0]
    for x in xs:
        hs.append(np.tanh(hs[-1] @ w_h + x @ w_x))
    return np.mean(np.stack(hs[1:]) ** 2)


def prefix_sums(x, decay):
    """A decayed running sum filled in element by element, with an early stop."""
    y = np.zeros_like(x)
    y[0] = x[0]
    for i in range(1, x.shape[0]):
        if y[i - 1] > 10.0:
            break
        y[i] = y[i - 1] * decay + x[i]
    return np.sum(y ** 2)


def energy(x):
    """A chain of coupled particles: a quartic well per particle and a coupling between
    neighbours (its jvp and its Hessian are kept)."""
    return np.sum(x ** 4) / 4.0 - np.sum(np.sin(x[:-1] * x[1:]))


def cubic(x):
    """A scalar function of a scalar (its grad of grad is kept)."""
    return np.sin(x) * x ** 3


def elementwise_chain(x):
    """The ten-operation elementwise chain of benchmarks/compiled_gradients.py: with
    ``backend="numba"`` its gradient is one fused loop (its snapshot is the specialised
    module)."""
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


def row_logsumexp(x):
    """The row logsumexp of benchmarks/fused_workloads.py, with a leaky ramp and a ReLU of
    the rows' results: loops that end in reductions."""
    m = np.max(x, axis=1, keepdims=True)
    z = np.where(x > 0, x, 0.1 * x)
    s = np.log(np.sum(np.exp(z - m), axis=1)) + m[:, 0]
    return np.sum(np.maximum(s, 0.0))
