"""MAML-style meta-loss: a few inner SGD steps with a hand-written gradient, then the outer loss."""
import numpy as np


def inner_grad(w, X, y):
    return 2 * X.T @ (X @ w - y) / len(y)


def adapt(w, X, y, lr, steps=3):
    for _ in range(steps):
        w = w - lr * inner_grad(w, X, y)
    return w


def meta_loss(w0, log_lr, tasks):
    lr = np.exp(log_lr)
    total = 0.0
    for X_tr, y_tr, X_te, y_te in tasks:
        w = adapt(w0, X_tr, y_tr, lr)
        total = total + np.mean((X_te @ w - y_te) ** 2)
    return total / len(tasks)


def example_args():
    rs = np.random.RandomState(43)
    tasks = []
    for _ in range(3):
        w = rs.randn(2)
        X_tr, X_te = rs.randn(5, 2), rs.randn(4, 2)
        tasks.append((X_tr, X_tr @ w, X_te, X_te @ w))
    return np.zeros(2), np.log(0.1), tasks


CASE = dict(f=meta_loss, args=example_args, wrt=(0, 1))
