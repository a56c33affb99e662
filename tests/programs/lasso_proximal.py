"""An elastic-net objective with np.abs, np.sign-style soft thresholding and np.clip'd weights."""
import numpy as np


def soft_threshold(x, lam):
    return np.sign(x) * np.maximum(np.abs(x) - lam, 0.0)


def objective(w, X, y, alpha=0.1, l1_ratio=0.5):
    n = X.shape[0]
    w_eff = soft_threshold(np.clip(w, -3, 3), 0.05)
    resid = y - X @ w_eff
    l1 = np.sum(np.abs(w))
    l2 = 0.5 * np.sum(w ** 2)
    return resid @ resid / (2 * n) + alpha * (l1_ratio * l1 + (1 - l1_ratio) * l2)


def example_args():
    rs = np.random.RandomState(50)
    return np.array([0.7, -0.4, 1.3, -2.0]), rs.randn(9, 4), rs.randn(9)


CASE = dict(f=objective, args=example_args, wrt=0)
