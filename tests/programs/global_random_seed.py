"""Noise from the global NumPy RNG, reseeded in the loss: np.random.seed(seed), np.random.randn."""
import numpy as np


def noisy_loss(w, X, y, seed=0, noise_std=0.1):
    np.random.seed(seed)
    noise = noise_std * np.random.randn(*X.shape)
    pred = (X + noise) @ w
    return np.mean((pred - y) ** 2)


def example_args():
    rs = np.random.RandomState(58)
    return rs.randn(3), rs.randn(6, 3), rs.randn(6)


CASE = dict(f=noisy_loss, args=example_args, wrt=0)
