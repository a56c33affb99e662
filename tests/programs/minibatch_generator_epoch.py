"""An epoch's mean loss over minibatches from a generator: iterate_minibatches yields slices
of a permutation (rs.permutation, range(0, n, batch_size)), a running average with
enumerate(start=1), a softmax-regression loss per batch with a one-hot built by np.eye[y]."""
import numpy as np


def iterate_minibatches(X, y, batch_size, rs, shuffle=True):
    n = X.shape[0]
    indices = rs.permutation(n) if shuffle else np.arange(n)
    for start in range(0, n, batch_size):
        excerpt = indices[start:start + batch_size]
        yield X[excerpt], y[excerpt]


def batch_loss(W, b, Xb, yb):
    logits = Xb @ W + b
    logits -= logits.max(axis=1, keepdims=True)
    log_probs = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    onehot = np.eye(W.shape[1])[yb]
    return -(onehot * log_probs).sum() / len(yb)


def epoch_loss(W, b, X, y, rs, batch_size=4):
    running = 0.0
    for i, (Xb, yb) in enumerate(iterate_minibatches(X, y, batch_size, rs), start=1):
        running += (batch_loss(W, b, Xb, yb) - running) / i
    return running + 1e-3 * np.sum(W ** 2)


def example_args():
    rs = np.random.RandomState(23)
    X = rs.randn(10, 3)
    y = rs.randint(3, size=10)
    return rs.randn(3, 3) * 0.1, np.zeros(3), X, y, np.random.RandomState(0)


CASE = dict(f=epoch_loss, args=example_args, wrt=(0, 1))
