"""A neural ODE integrated by forward Euler, the dynamics an MLP over (t, y) in a params dict."""
import numpy as np


def dynamics(params, y, t):
    inp = np.concatenate([y, [t]])
    h = np.tanh(params['W1'] @ inp + params['b1'])
    return params['W2'] @ h + params['b2']


def odeint_euler(func, y0, t, params):
    ys = [y0]
    y = y0
    for i in range(1, len(t)):
        y = y + (t[i] - t[i - 1]) * func(params, y, t[i - 1])
        ys.append(y)
    return np.stack(ys)


def loss(params, y0, t, target):
    pred = odeint_euler(dynamics, y0, t, params)
    return np.mean((pred - target) ** 2)


def example_args():
    rs = np.random.RandomState(18)
    params = {'W1': 0.5 * rs.randn(4, 3), 'b1': np.zeros(4),
              'W2': 0.5 * rs.randn(2, 4), 'b2': np.zeros(2)}
    t = np.linspace(0, 1, 11)
    target = np.stack([np.cos(t), np.sin(t)], axis=1)
    return params, np.array([1.0, 0.0]), t, target


CASE = dict(f=loss, args=example_args, wrt=0)
