"""A planar normalising flow's KL, noise from a new-style rng = np.random.default_rng(seed)."""
import numpy as np


def target_log_density(z):
    return -0.5 * np.sum(z ** 2, axis=1) - 0.5 * (np.linalg.norm(z, axis=1) - 2.0) ** 2


def planar_flow(z, u, w, b):
    a = np.tanh(z @ w + b)
    psi = (1 - a ** 2)[:, None] * w
    log_det = np.log(np.abs(1 + psi @ u) + 1e-8)
    return z + a[:, None] * u, log_det


def kl_loss(params, rng, n_samples=6):
    z = rng.normal(size=(n_samples, 2))
    log_q = -0.5 * np.sum(z ** 2, axis=1) - np.log(2 * np.pi)
    for u, w, b in params:
        z, log_det = planar_flow(z, u, w, b)
        log_q = log_q - log_det
    return np.mean(log_q - target_log_density(z))


def example_args():
    rs = np.random.RandomState(61)
    params = [(0.3 * rs.randn(2), 0.3 * rs.randn(2), 0.1) for _ in range(2)]
    return params, np.random.default_rng(5)


CASE = dict(f=kl_loss, args=example_args, wrt=0)
