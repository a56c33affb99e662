"""A triplet-margin embedding loss with np.linalg.norm(axis=1) and a normalised projection."""
import numpy as np


def embed(W, X):
    Z = X @ W
    return Z / np.linalg.norm(Z, axis=1, keepdims=True)


def triplet_loss(W, anchors, positives, negatives, margin=0.5):
    a, p, n = embed(W, anchors), embed(W, positives), embed(W, negatives)
    d_pos = np.linalg.norm(a - p, axis=1)
    d_neg = np.linalg.norm(a - n, axis=1)
    return np.mean(np.maximum(d_pos - d_neg + margin, 0.0))


def example_args():
    rs = np.random.RandomState(63)
    return rs.randn(4, 3), rs.randn(5, 4), rs.randn(5, 4), rs.randn(5, 4)


CASE = dict(f=triplet_loss, args=example_args, wrt=0)
