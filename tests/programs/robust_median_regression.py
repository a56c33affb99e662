"""Robust regression: residuals scaled by the median absolute deviation (np.median), a
Tukey-style trimmed loss that drops residuals above the 90th np.percentile, sorted with argsort."""
import numpy as np


def mad_scale(r):
    return 1.4826 * np.median(np.abs(r - np.median(r)))


def trimmed_loss(beta, X, y, trim=90):
    r = y - X @ beta
    s = mad_scale(r)
    z = r / s
    cutoff = np.percentile(np.abs(z), trim)
    keep = np.abs(z) <= cutoff
    order = np.argsort(np.abs(z[keep]))
    kept = z[keep][order]
    return np.sum(np.log1p(kept ** 2)) / len(kept) + np.log(s)


def example_args():
    rs = np.random.RandomState(21)
    X = np.column_stack([np.ones(20), rs.randn(20)])
    y = X @ np.array([1.0, 2.0]) + 0.3 * rs.randn(20)
    y[[3, 11]] += np.array([8.0, -6.0])
    return np.array([0.8, 1.7]), X, y


CASE = dict(f=trimmed_loss, args=example_args, wrt=0)
