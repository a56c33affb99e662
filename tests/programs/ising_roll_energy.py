"""A continuous-spin Ising / XY-like lattice energy with periodic boundaries via np.roll,
a mean-field magnetisation term and a coupling matrix of neighbours in both axes."""
import numpy as np


def lattice_energy(spins, J, h):
    right = np.roll(spins, -1, axis=1)
    down = np.roll(spins, -1, axis=0)
    interaction = -J * np.sum(spins * right + spins * down)
    field = -h * np.sum(spins)
    return interaction + field


def free_energy(theta, J, h, beta):
    spins = np.tanh(theta)
    E = lattice_energy(spins, J, h)
    p = (1 + spins) / 2
    entropy = -np.sum(p * np.log(p) + (1 - p) * np.log(1 - p))
    return E - entropy / beta


def example_args():
    rs = np.random.RandomState(3)
    theta = rs.randn(5, 6) * 0.5
    return theta, 1.0, 0.2, 0.7


CASE = dict(f=free_energy, args=example_args, wrt=0)
