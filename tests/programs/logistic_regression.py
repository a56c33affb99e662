"""Plain logistic regression with a hand-written sigmoid, L2 penalty and clipping for log(0)."""
import numpy as np


def sigmoid(z):
    return 1 / (1 + np.exp(-z))


def cost(theta, X, y, lam=0.1):
    m = len(y)
    h = sigmoid(X @ theta)
    h = np.clip(h, 1e-10, 1 - 1e-10)
    J = -(1 / m) * (y @ np.log(h) + (1 - y) @ np.log(1 - h))
    J += lam / (2 * m) * np.sum(theta[1:] ** 2)
    return J


def example_args():
    rs = np.random.RandomState(35)
    X = np.hstack([np.ones((8, 1)), rs.randn(8, 2)])
    y = (rs.rand(8) > 0.5).astype(float)
    return np.zeros(3), X, y


CASE = dict(f=cost, args=example_args, wrt=0)
