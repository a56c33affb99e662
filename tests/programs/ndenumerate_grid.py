"""A membrane (height-field) energy written with Python loops over np.ndenumerate: a stretch
term to the right/down neighbours guarded by bounds checks, a load term, and a pinned border
where `if i in (0, n - 1)` skips cells."""
import numpy as np


def membrane_energy(h, load, k_stretch=1.0):
    n, m = h.shape
    energy = 0.0
    for (i, j), hij in np.ndenumerate(h):
        if i in (0, n - 1) or j in (0, m - 1):
            energy += 10.0 * hij ** 2          # pinned border
            continue
        if i + 1 < n:
            energy += 0.5 * k_stretch * (h[i + 1, j] - hij) ** 2
        if j + 1 < m:
            energy += 0.5 * k_stretch * (h[i, j + 1] - hij) ** 2
        energy -= load[i, j] * hij
    return energy


def example_args():
    rs = np.random.RandomState(39)
    return rs.randn(5, 4) * 0.1, np.abs(rs.randn(5, 4))


CASE = dict(f=membrane_energy, args=example_args, wrt=0)
