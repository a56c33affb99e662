"""A namedtuple of parameters (typing.NamedTuple), fields read by name and ._replace'd."""
from typing import NamedTuple

import numpy as np


class LinearParams(NamedTuple):
    weight: np.ndarray
    bias: np.ndarray


class ModelParams(NamedTuple):
    hidden: LinearParams
    out: LinearParams


def linear(p: LinearParams, x):
    return x @ p.weight + p.bias


def loss(params: ModelParams, x, y):
    h = np.tanh(linear(params.hidden, x))
    logits = linear(params.out, h)
    return np.mean(np.logaddexp(0, -y * logits.ravel()))


def example_args():
    rs = np.random.RandomState(33)
    params = ModelParams(hidden=LinearParams(rs.randn(2, 3), np.zeros(3)),
                         out=LinearParams(rs.randn(3, 1), np.zeros(1)))
    return params, rs.randn(6, 2), np.sign(rs.randn(6))


CASE = dict(f=loss, args=example_args, wrt=0)
