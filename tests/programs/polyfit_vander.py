"""Polynomial regression with np.vander and np.polyval, coefficients highest degree first."""
import numpy as np


def loss(coeffs, x, y):
    V = np.vander(x, N=len(coeffs))
    fit = V @ coeffs
    check = np.polyval(coeffs, x)
    return np.mean((fit - y) ** 2) + np.mean((check - y) ** 2)


def example_args():
    rs = np.random.RandomState(52)
    x = np.linspace(-1, 1, 10)
    return rs.randn(4), x, np.cos(2 * x)


CASE = dict(f=loss, args=example_args, wrt=0)
