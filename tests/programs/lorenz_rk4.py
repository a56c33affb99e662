"""Hand-written RK4 integrating the Lorenz system, the right-hand side passed as a callback."""
import numpy as np


def lorenz(state, t, sigma, rho, beta):
    x, y, z = state
    return np.array([sigma * (y - x), x * (rho - z) - y, x * y - beta * z])


def rk4_step(f, y, t, dt, *args):
    k1 = f(y, t, *args)
    k2 = f(y + dt / 2 * k1, t + dt / 2, *args)
    k3 = f(y + dt / 2 * k2, t + dt / 2, *args)
    k4 = f(y + dt * k3, t + dt, *args)
    return y + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)


def integrate(f, y0, ts, *args):
    ys = [y0]
    y = y0
    for i in range(len(ts) - 1):
        dt = ts[i + 1] - ts[i]
        y = rk4_step(f, y, ts[i], dt, *args)
        ys.append(y)
    return np.array(ys)


def fit_loss(theta, y0, ts, observed):
    sigma, rho, beta = theta
    traj = integrate(lorenz, y0, ts, sigma, rho, beta)
    return np.sum((traj - observed) ** 2) / len(ts)


def example_args():
    ts = np.linspace(0, 0.3, 16)
    y0 = np.array([1.0, 1.0, 1.0])
    observed = np.outer(np.linspace(1, 2, 16), np.ones(3))
    return np.array([10.0, 28.0, 8.0 / 3.0]), y0, ts, observed


CASE = dict(f=fit_loss, args=example_args, wrt=0)
