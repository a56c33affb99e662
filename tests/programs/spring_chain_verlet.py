"""A mass-spring chain under velocity Verlet: forces accumulated pair by pair (f[i] += ...)."""
import numpy as np


def forces(x, k, rest):
    n = len(x)
    f = np.zeros(n)
    for i in range(n - 1):
        stretch = x[i + 1] - x[i] - rest
        f[i] += k[i] * stretch
        f[i + 1] -= k[i] * stretch
    return f


def simulate(k, x0, v0, rest=1.0, dt=0.05, steps=20):
    x, v = x0.copy(), v0.copy()
    a = forces(x, k, rest)
    for _ in range(steps):
        x = x + v * dt + 0.5 * a * dt ** 2
        a_new = forces(x, k, rest)
        v = v + 0.5 * (a + a_new) * dt
        a = a_new
    return x, v


def loss(k, x0, v0, target):
    x, v = simulate(k, x0, v0)
    return np.sum((x - target) ** 2) + 0.1 * np.sum(v ** 2)


def example_args():
    x0 = np.array([0.0, 1.2, 1.9, 3.1])
    return np.array([1.0, 2.0, 1.5]), x0, np.zeros(4), np.array([0.0, 1.0, 2.0, 3.0])


CASE = dict(f=loss, args=example_args, wrt=0)
