"""Functional style: map, zip(*pairs), functools.partial and reduce over a list of layers."""
import functools

import numpy as np


def dense(x, W, b, activation):
    return activation(x @ W + b)


def compose(*fs):
    return functools.reduce(lambda f, g: lambda x: g(f(x)), fs, lambda x: x)


def loss(params, x, y):
    Ws, bs = zip(*params)
    activations = [np.tanh] * (len(Ws) - 1) + [lambda z: z]
    layers = list(map(lambda args: functools.partial(dense, W=args[0], b=args[1],
                                                     activation=args[2]),
                      zip(Ws, bs, activations)))
    net = compose(*layers)
    preds = net(x)
    penalties = map(lambda W: np.sum(W ** 2), Ws)
    return np.mean((preds - y) ** 2) + 1e-3 * sum(penalties)


def example_args():
    rs = np.random.RandomState(24)
    params = [(0.4 * rs.randn(2, 4), np.zeros(4)), (0.4 * rs.randn(4, 1), np.zeros(1))]
    return params, rs.randn(6, 2), rs.randn(6, 1)


CASE = dict(f=loss, args=example_args, wrt=0)
