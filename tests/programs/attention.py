"""Scaled dot-product attention over a batch, K.transpose(0, 2, 1) and a stable softmax."""
import numpy as np


def softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def attention(Q, K, V, mask=None):
    d_k = Q.shape[-1]
    scores = Q @ K.transpose(0, 2, 1) / np.sqrt(d_k)
    if mask is not None:
        scores = np.where(mask, scores, -1e9)
    weights = softmax(scores, axis=-1)
    return weights @ V


def loss(Wq, Wk, Wv, x, target):
    Q = x @ Wq
    K = x @ Wk
    V = x @ Wv
    T = x.shape[1]
    causal = np.tril(np.ones((T, T), dtype=bool))
    out = attention(Q, K, V, mask=causal)
    return np.mean((out - target) ** 2)


def example_args():
    rs = np.random.RandomState(3)
    Wq, Wk, Wv = (0.3 * rs.randn(4, 4) for _ in range(3))
    x = rs.randn(2, 5, 4)
    target = rs.randn(2, 5, 4)
    return Wq, Wk, Wv, x, target


CASE = dict(f=loss, args=example_args, wrt=(0, 1, 2))
