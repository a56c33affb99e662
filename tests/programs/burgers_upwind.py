"""A 1-D viscous Burgers / advection solver with np.roll, periodic boundaries, a CFL check."""
import numpy as np

NU = 0.05


def burgers_step(u, dx, dt):
    if dt > dx / (np.max(np.abs(u)) + 1e-12):
        raise ValueError("CFL condition violated")
    u_plus = np.roll(u, -1)
    u_minus = np.roll(u, 1)
    adv = np.where(u > 0, u * (u - u_minus) / dx, u * (u_plus - u) / dx)
    diff = NU * (u_plus - 2 * u + u_minus) / dx ** 2
    return u - dt * adv + dt * diff


def loss(u0, target, n_steps=15):
    n = u0.shape[0]
    dx = 1.0 / n
    dt = 0.2 * dx
    u = u0
    for _ in range(n_steps):
        u = burgers_step(u, dx, dt)
    return np.sum((u - target) ** 2) * dx


def example_args():
    x = np.linspace(0, 1, 16, endpoint=False)
    return 1.0 + 0.5 * np.sin(2 * np.pi * x), np.ones(16)


CASE = dict(f=loss, args=example_args, wrt=0)
