"""A cart-pole physics simulation (gym-style equations), a linear policy rolled out with
explicit Euler steps, a state tuple unpacked each step and a progress print every 20 steps."""
import math

import numpy as np

GRAVITY = 9.8
MASSCART = 1.0
MASSPOLE = 0.1
TOTAL_MASS = MASSPOLE + MASSCART
LENGTH = 0.5  # actually half the pole's length
POLEMASS_LENGTH = MASSPOLE * LENGTH
FORCE_MAG = 10.0
TAU = 0.02  # seconds between state updates


def step(state, force):
    x, x_dot, theta, theta_dot = state
    costheta = math.cos(theta)
    sintheta = math.sin(theta)
    temp = (force + POLEMASS_LENGTH * theta_dot ** 2 * sintheta) / TOTAL_MASS
    thetaacc = (GRAVITY * sintheta - costheta * temp) / (
        LENGTH * (4.0 / 3.0 - MASSPOLE * costheta ** 2 / TOTAL_MASS))
    xacc = temp - POLEMASS_LENGTH * thetaacc * costheta / TOTAL_MASS
    x = x + TAU * x_dot
    x_dot = x_dot + TAU * xacc
    theta = theta + TAU * theta_dot
    theta_dot = theta_dot + TAU * thetaacc
    return (x, x_dot, theta, theta_dot)


def rollout_cost(K, init_state, n_steps=60, verbose=False):
    state = tuple(init_state)
    cost = 0.0
    for t in range(n_steps):
        s = np.array(state)
        force = -FORCE_MAG * np.tanh(np.dot(K, s))
        state = step(state, force)
        x, _, theta, _ = state
        cost += x ** 2 + 10.0 * theta ** 2 + 0.001 * force ** 2
        if verbose and t % 20 == 0:
            print("step %3d  x=%+.3f  theta=%+.3f" % (t, x, theta))  # noqa: UP031
    return cost / n_steps


def example_args():
    rs = np.random.RandomState(4)
    K = rs.randn(4) * 0.3
    init_state = [0.0, 0.0, 0.05, 0.0]
    return K, init_state, 60, True


CASE = dict(f=rollout_cost, args=example_args, wrt=0)
