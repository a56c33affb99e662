"""Soft k-means: squared distances by loops over centroids into a preallocated matrix."""
import numpy as np


def soft_kmeans_loss(centroids, X, beta=2.0):
    n, k = X.shape[0], centroids.shape[0]
    d2 = np.empty((n, k))
    for j in range(k):
        d2[:, j] = np.sum((X - centroids[j]) ** 2, axis=1)
    logits = -beta * d2
    m = logits.max(axis=1, keepdims=True)
    resp = np.exp(logits - m)
    resp = resp / resp.sum(axis=1, keepdims=True)
    return np.sum(resp * d2) / n


def example_args():
    rs = np.random.RandomState(51)
    X = np.vstack([rs.randn(5, 2) + 2, rs.randn(5, 2) - 2])
    return rs.randn(3, 2), X


CASE = dict(f=soft_kmeans_loss, args=example_args, wrt=0)
