"""Inverted dropout in training mode: mask = (rs.rand(*h.shape) < p) / p, a train flag."""
import numpy as np


def forward(params, X, rs, p_keep=0.8, train=True):
    W1, b1, W2, b2 = params
    H1 = np.maximum(0, X @ W1 + b1)
    if train:
        mask = (rs.rand(*H1.shape) < p_keep) / p_keep
        H1 *= mask
    return H1 @ W2 + b2


def loss(params, X, y, rs):
    out = forward(params, X, rs)
    return np.mean((out.ravel() - y) ** 2)


def example_args():
    rs = np.random.RandomState(47)
    params = (0.5 * rs.randn(3, 6), 0.1 + np.zeros(6), 0.5 * rs.randn(6, 1), np.zeros(1))
    return params, rs.randn(5, 3), rs.randn(5), np.random.RandomState(4)


CASE = dict(f=loss, args=example_args, wrt=0)
