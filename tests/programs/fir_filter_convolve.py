"""Fitting FIR filter taps: np.convolve(signal, taps, mode='same') against a target signal."""
import numpy as np


def filtered(signal, taps):
    return np.convolve(signal, taps, mode='same')


def loss(taps, signal, target):
    out = filtered(signal, taps)
    smooth = np.sum(np.diff(taps) ** 2)
    return np.mean((out - target) ** 2) + 0.01 * smooth


def example_args():
    rs = np.random.RandomState(49)
    t = np.linspace(0, 1, 24)
    signal = np.sin(8 * t) + 0.3 * rs.randn(24)
    return np.ones(5) / 5, signal, np.sin(8 * t)


CASE = dict(f=loss, args=example_args, wrt=0)
