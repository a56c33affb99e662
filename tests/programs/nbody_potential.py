"""Lennard-Jones energy of a small cluster: pairwise distances by broadcasting, np.triu_indices."""
import numpy as np


def lj_energy(positions, epsilon=1.0, sigma=1.0):
    n = positions.shape[0]
    diff = positions[:, None, :] - positions[None, :, :]
    r2 = np.sum(diff ** 2, axis=-1)
    iu = np.triu_indices(n, k=1)
    r2 = r2[iu]
    sr6 = (sigma ** 2 / r2) ** 3
    return np.sum(4 * epsilon * (sr6 ** 2 - sr6))


def example_args():
    rs = np.random.RandomState(44)
    grid = np.array([[0, 0, 0], [1.1, 0, 0], [0, 1.1, 0], [0, 0, 1.1], [1.1, 1.1, 0]], float)
    return (grid + 0.05 * rs.randn(5, 3),)


CASE = dict(f=lj_energy, args=example_args, wrt=0)
