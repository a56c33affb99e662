"""A @dataclass of parameters passed whole and differentiated (as with a JAX pytree dataclass)."""
from dataclasses import dataclass

import numpy as np


@dataclass
class Params:
    W: np.ndarray
    b: np.ndarray
    log_scale: float


def predict(p: Params, x: np.ndarray) -> np.ndarray:
    return np.exp(p.log_scale) * np.tanh(x @ p.W + p.b)


def loss(p: Params, x: np.ndarray, y: np.ndarray) -> float:
    return float(np.mean((predict(p, x) - y) ** 2))


def example_args():
    rs = np.random.RandomState(32)
    return Params(W=rs.randn(3, 2), b=np.zeros(2), log_scale=0.1), rs.randn(5, 3), rs.randn(5, 2)


CASE = dict(f=loss, args=example_args, wrt=0)
