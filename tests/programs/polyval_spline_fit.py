"""Piecewise-cubic fit: knots split x with np.searchsorted, each segment a np.polyval of its
own coefficient row, a smoothness penalty from np.polyder at interior knots."""
import numpy as np


def piecewise_cubic(coeffs, knots, x):
    idx = np.searchsorted(knots, x, side="right") - 1
    idx = np.clip(idx, 0, len(knots) - 2)
    out = np.empty_like(x)
    for seg in range(len(knots) - 1):
        sel = idx == seg
        out[sel] = np.polyval(coeffs[seg], x[sel] - knots[seg])
    return out


def continuity_penalty(coeffs, knots):
    pen = 0.0
    for seg in range(len(knots) - 2):
        h = knots[seg + 1] - knots[seg]
        left, right = coeffs[seg], coeffs[seg + 1]
        for d in range(3):
            pen += (np.polyval(np.polyder(left, d), h) - np.polyval(np.polyder(right, d), 0.0)) ** 2
    return pen


def spline_loss(coeffs, knots, x, y, lam=10.0):
    resid = piecewise_cubic(coeffs, knots, x) - y
    return np.mean(resid ** 2) + lam * continuity_penalty(coeffs, knots)


def example_args():
    rs = np.random.RandomState(9)
    knots = np.array([0.0, 1.0, 2.0, 3.0])
    x = np.sort(rs.uniform(0, 3, size=15))
    y = np.sin(2 * x) + 0.1 * rs.randn(15)
    coeffs = rs.randn(3, 4) * 0.1
    return coeffs, knots, x, y


CASE = dict(f=spline_loss, args=example_args, wrt=0)
