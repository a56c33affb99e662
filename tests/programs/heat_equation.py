"""Explicit heat equation, preallocate then fill (out = np.zeros(n); out[i] = ...)."""
import numpy as np

NX = 12
NT = 20


def step(u, alpha, dx, dt):
    n = len(u)
    out = np.zeros(n)
    out[0] = u[0]
    out[n - 1] = u[n - 1]
    for i in range(1, n - 1):
        out[i] = u[i] + alpha * dt / dx ** 2 * (u[i + 1] - 2 * u[i] + u[i - 1])
    return out


def simulate(u0, alpha, dx=0.1, dt=0.002):
    u = u0.copy()
    for _ in range(NT):
        u = step(u, alpha, dx, dt)
    return u


def loss(u0, alpha, target):
    u = simulate(u0, alpha)
    return np.sum((u - target) ** 2)


def example_args():
    x = np.linspace(0, 1, NX)
    u0 = np.sin(np.pi * x)
    target = 0.5 * np.sin(np.pi * x)
    return u0, 1.5, target


CASE = dict(f=loss, args=example_args, wrt=(0, 1))
