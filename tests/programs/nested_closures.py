"""Nested defs reading outer variables: a loss factory returning a closure over the data."""
import numpy as np


def make_loss(X, y, l2=0.1):
    n = X.shape[0]

    def predict(w):
        return X @ w

    def residuals(w):
        return predict(w) - y

    def loss(w):
        r = residuals(w)
        penalty = l2 * np.sum(w ** 2)
        return np.dot(r, r) / n + penalty

    return loss


_rs = np.random.RandomState(27)
_X = _rs.randn(8, 3)
_y = _X @ np.array([1.0, -2.0, 0.5]) + 0.1 * _rs.randn(8)
ridge_loss = make_loss(_X, _y)


def example_args():
    return (np.zeros(3),)


CASE = dict(f=ridge_loss, args=example_args, wrt=0)
