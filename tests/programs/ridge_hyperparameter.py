"""Validation loss of a closed-form ridge fit (np.linalg.solve) as a function of log lambda."""
import numpy as np


def ridge_fit(X, y, lam):
    d = X.shape[1]
    A = X.T @ X + lam * np.eye(d)
    return np.linalg.solve(A, X.T @ y)


def validation_loss(log_lam, X_train, y_train, X_val, y_val):
    w = ridge_fit(X_train, y_train, np.exp(log_lam))
    resid = X_val @ w - y_val
    return np.mean(resid ** 2)


def example_args():
    rs = np.random.RandomState(37)
    w_true = rs.randn(4)
    X_train, X_val = rs.randn(10, 4), rs.randn(6, 4)
    return (0.5, X_train, X_train @ w_true + 0.5 * rs.randn(10), X_val,
            X_val @ w_true + 0.5 * rs.randn(6))


CASE = dict(f=validation_loss, args=example_args, wrt=0)
