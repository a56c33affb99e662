"""t-SNE's objective: Gaussian affinities P with np.fill_diagonal and symmetrisation, a
Student-t Q from squared pairwise distances via the ||a||^2 - 2ab + ||b||^2 trick, KL(P||Q)."""
import numpy as np


def x2p(X, perplexity_beta=1.0):
    sum_X = np.sum(np.square(X), 1)
    D = np.add(np.add(-2 * np.dot(X, X.T), sum_X).T, sum_X)
    P = np.exp(-D * perplexity_beta)
    np.fill_diagonal(P, 0.0)
    P = P / np.sum(P, axis=1, keepdims=True)
    P = P + np.transpose(P)
    P = P / np.sum(P)
    P = np.maximum(P, 1e-12)
    return P


def tsne_loss(Y, P):
    n = Y.shape[0]
    sum_Y = np.sum(np.square(Y), 1)
    num = -2. * np.dot(Y, Y.T)
    num = 1. / (1. + np.add(np.add(num, sum_Y).T, sum_Y))
    num[range(n), range(n)] = 0.
    Q = num / np.sum(num)
    Q = np.maximum(Q, 1e-12)
    return np.sum(P * np.log(P / Q))


def example_args():
    rs = np.random.RandomState(2)
    X = rs.randn(8, 5)
    P = x2p(X)
    Y = rs.randn(8, 2) * 1e-1
    return Y, P


CASE = dict(f=tsne_loss, args=example_args, wrt=0)
