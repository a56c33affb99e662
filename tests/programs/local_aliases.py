"""NumPy aliases: tanh = np.tanh, dot = np.dot, sum_ = np.sum; from numpy import exp."""
import numpy as np
from numpy import exp, log

tanh = np.tanh
dot = np.dot


def logistic(z):
    return 1.0 / (1.0 + exp(-z))


def loss(w, X, y):
    sum_ = np.sum
    mean = np.mean
    h = tanh(dot(X, w[:6].reshape(3, 2)))
    p = logistic(dot(h, w[6:]))
    return -mean(y * log(p) + (1 - y) * log(1 - p)) + 1e-2 * sum_(w ** 2)


def example_args():
    rs = np.random.RandomState(26)
    return 0.5 * rs.randn(8), rs.randn(7, 3), (rs.rand(7) > 0.5).astype(float)


CASE = dict(f=loss, args=example_args, wrt=0)
