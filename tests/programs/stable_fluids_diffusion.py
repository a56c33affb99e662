"""Jos Stam's stable-fluids diffusion: Gauss-Seidel sweeps writing x[i, j] in place, set_bnd."""
import numpy as np

N = 5


def set_bnd(x):
    x[0, :] = x[1, :]
    x[-1, :] = x[-2, :]
    x[:, 0] = x[:, 1]
    x[:, -1] = x[:, -2]
    return x


def diffuse(x0, diff, dt, iters=4):
    a = dt * diff * N * N
    x = x0.copy()
    for _ in range(iters):
        for i in range(1, N + 1):
            for j in range(1, N + 1):
                x[i, j] = (x0[i, j] + a * (x[i - 1, j] + x[i + 1, j]
                                           + x[i, j - 1] + x[i, j + 1])) / (1 + 4 * a)
        x = set_bnd(x)
    return x


def loss(density0, diff, target):
    d = diffuse(density0, diff, 0.1)
    return np.sum((d[1:-1, 1:-1] - target) ** 2)


def example_args():
    rs = np.random.RandomState(56)
    return rs.rand(N + 2, N + 2), 0.05, np.full((N, N), 0.5)


CASE = dict(f=loss, args=example_args, wrt=(0, 1))
