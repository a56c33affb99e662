"""A list of collections.namedtuple layers, unpacked positionally: for W, b in layers."""
from collections import namedtuple

import numpy as np

Layer = namedtuple("Layer", ["W", "b"])


def init_layers(rs, sizes):
    return [Layer(0.5 * rs.randn(m, n), np.zeros(n)) for m, n in zip(sizes[:-1], sizes[1:])]


def loss(layers, x, y):
    for W, b in layers[:-1]:
        x = np.tanh(x @ W + b)
    W, b = layers[-1]
    logits = x @ W + b
    return np.mean(np.log1p(np.exp(-y * logits[:, 0])))


def example_args():
    rs = np.random.RandomState(64)
    return init_layers(rs, [2, 3, 1]), rs.randn(6, 2), np.sign(rs.randn(6))


CASE = dict(f=loss, args=example_args, wrt=0)
