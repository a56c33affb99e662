"""A spectrum fit with np.interp onto a grid and np.trapezoid for the normalising integral."""
import numpy as np

GRID = np.linspace(0.0, 1.0, 21)


def model_spectrum(amplitudes, knots):
    curve = np.interp(GRID, knots, amplitudes)
    return curve / np.trapezoid(curve, GRID)


def loss(amplitudes, knots, observed):
    pred = model_spectrum(np.exp(amplitudes), knots)
    return np.trapezoid((pred - observed) ** 2, GRID)


def example_args():
    knots = np.array([0.0, 0.3, 0.6, 1.0])
    observed = 1 + 0.5 * np.sin(2 * np.pi * GRID)
    return np.array([0.1, -0.2, 0.3, 0.0]), knots, observed


CASE = dict(f=loss, args=example_args, wrt=0)
