"""Spectral graph loss: a Laplacian from edge weights, np.linalg.eigh, smallest eigenvalues."""
import numpy as np


def laplacian(weights, edges, n):
    A = np.zeros((n, n))
    for (i, j), w in zip(edges, weights):
        A[i, j] = w
        A[j, i] = w
    return np.diag(A.sum(axis=1)) - A


def loss(log_w, edges, n=4):
    L = laplacian(np.exp(log_w), edges, n)
    evals, evecs = np.linalg.eigh(L)
    fiedler = evals[1]
    return -fiedler + 0.1 * np.sum(np.exp(log_w)) + np.linalg.norm(L, 'fro') * 0.01


def example_args():
    return np.array([0.1, -0.2, 0.3, 0.0, 0.5]), [(0, 1), (1, 2), (2, 3), (3, 0), (0, 2)]


CASE = dict(f=loss, args=example_args, wrt=0)
