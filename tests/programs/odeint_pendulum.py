"""A damped pendulum integrated with scipy.integrate.odeint; the loss fits damping and length."""
import numpy as np
from scipy.integrate import odeint


def pendulum(y, t, damping, length):
    theta, omega = y
    return np.array([omega, -damping * omega - 9.81 / length * np.sin(theta)])


def loss(params, y0, t, observed):
    damping, length = params
    sol = odeint(pendulum, y0, t, args=(damping, length), rtol=1e-10, atol=1e-10)
    return np.sum((sol[:, 0] - observed) ** 2)


def example_args():
    t = np.linspace(0, 2, 9)
    observed = 0.5 * np.cos(3 * t) * np.exp(-0.2 * t)
    return np.array([0.3, 1.0]), np.array([0.5, 0.0]), t, observed


CASE = dict(f=loss, args=example_args, wrt=0)
