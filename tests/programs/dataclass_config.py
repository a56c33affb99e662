"""A frozen @dataclass config (not differentiated) steering a model whose params are a dict."""
from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class Config:
    n_layers: int = 2
    activation: str = "relu"
    dropout: float = 0.0
    l2: float = 1e-3
    sizes: tuple = field(default=(3, 4, 4, 1))


def activate(x, kind):
    if kind == "relu":
        return np.maximum(x, 0)
    elif kind == "tanh":
        return np.tanh(x)
    raise ValueError(f"unknown activation {kind}")


def loss(params, x, y, cfg: Config):
    for i in range(cfg.n_layers):
        x = activate(x @ params[f"W{i}"] + params[f"b{i}"], cfg.activation)
    out = x @ params["W_out"]
    l2 = sum(np.sum(v ** 2) for k, v in params.items() if k.startswith("W"))
    return np.mean((out - y) ** 2) + cfg.l2 * l2


def example_args():
    rs = np.random.RandomState(34)
    cfg = Config(activation="tanh")
    params = {}
    for i in range(cfg.n_layers):
        params[f"W{i}"] = 0.5 * rs.randn(cfg.sizes[i], cfg.sizes[i + 1])
        params[f"b{i}"] = np.zeros(cfg.sizes[i + 1])
    params["W_out"] = 0.5 * rs.randn(cfg.sizes[-2], cfg.sizes[-1])
    return params, rs.randn(5, 3), rs.randn(5, 1), cfg


CASE = dict(f=loss, args=example_args, wrt=0)
