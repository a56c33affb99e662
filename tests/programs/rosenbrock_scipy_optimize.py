"""The n-dimensional Rosenbrock function written with slices x[1:], x[:-1], checked against
scipy.optimize.rosen in an assert, plus a trust-region style penalty through max()."""
import numpy as np
from scipy.optimize import rosen


def rosenbrock(x, a=1.0, b=100.0):
    return np.sum(b * (x[1:] - x[:-1] ** 2.0) ** 2.0 + (a - x[:-1]) ** 2.0)


def objective(x, x0, radius):
    f = rosenbrock(x)
    assert np.isclose(f, rosen(x)), "rosenbrock disagrees with scipy"
    step = x - x0
    penalty = max(0.0, np.dot(step, step) - radius ** 2)
    return f + 10.0 * penalty ** 2


def example_args():
    return np.array([-1.2, 1.0, 0.8, 1.1, 0.5]), np.array([-1.0, 1.0, 1.0, 1.0, 0.4]), 0.3


CASE = dict(f=objective, args=example_args, wrt=0)
