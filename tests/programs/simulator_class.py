"""A Simulator class: __init__ stores dt, step() and run() methods, self.history.append(state)."""
import numpy as np


class Simulator:
    def __init__(self, dt=0.05, steps=25):
        self.dt = dt
        self.steps = steps
        self.history = []

    def step(self, state, params):
        pos, vel = state
        k, c = params
        acc = -k * pos - c * vel
        return (pos + self.dt * vel, vel + self.dt * acc)

    def run(self, state, params):
        self.history = [state]
        for _ in range(self.steps):
            state = self.step(state, params)
            self.history.append(state)
        return state


sim = Simulator()


def loss(params, x0, target):
    pos, vel = sim.run((x0, 0.0), params)
    return (pos - target) ** 2 + sum(p ** 2 for p, _ in sim.history) * 1e-3


def example_args():
    return np.array([2.0, 0.3]), 1.0, -0.5


CASE = dict(f=loss, args=example_args, wrt=0)
