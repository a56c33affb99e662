"""Robust regression with a Huber loss written with if/else over Python floats in a loop."""
import numpy as np


def huber(r, delta):
    if abs(r) <= delta:
        return 0.5 * r * r
    else:
        return delta * (abs(r) - 0.5 * delta)


def robust_loss(w, X, y, delta=1.0):
    total = 0.0
    for xi, yi in zip(X, y):
        r = float(xi @ w - yi)
        total += huber(r, delta)
    return total / len(y)


def example_args():
    rs = np.random.RandomState(48)
    X = rs.randn(8, 2)
    y = X @ np.array([1.0, 2.0]) + rs.standard_t(2, size=8)
    return np.array([0.3, 0.1]), X, y


CASE = dict(f=robust_loss, args=example_args, wrt=0)
