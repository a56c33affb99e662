"""A Lennard-Jones cluster energy: pair indices from np.triu_indices, minimum-image periodic
wrapping with np.round, a cutoff mask via np.where, plus a harmonic tether to the box centre."""
import numpy as np


def lj_energy(positions, box, epsilon=1.0, sigma=1.0, r_cut=2.5):
    n = positions.shape[0]
    i, j = np.triu_indices(n, k=1)
    rij = positions[i] - positions[j]
    rij -= box * np.round(rij / box)
    r2 = np.sum(rij ** 2, axis=1)
    sr6 = (sigma ** 2 / r2) ** 3
    e_pair = 4.0 * epsilon * (sr6 ** 2 - sr6)
    e_cut = 4.0 * epsilon * ((sigma / r_cut) ** 12 - (sigma / r_cut) ** 6)
    e_pair = np.where(r2 < r_cut ** 2, e_pair - e_cut, 0.0)
    return e_pair.sum()


def total_energy(positions, box, k_tether=0.1):
    centre = np.full(3, box / 2)
    tether = 0.5 * k_tether * np.sum((positions - centre) ** 2)
    return lj_energy(positions, box) + tether


def example_args():
    rs = np.random.RandomState(31)
    grid = np.array([[x, y, z] for x in range(2) for y in range(2) for z in range(2)], float)
    positions = 1.5 + 1.2 * grid + 0.05 * rs.randn(8, 3)
    return positions, 5.0


CASE = dict(f=total_energy, args=example_args, wrt=0)
