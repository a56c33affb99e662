"""What the random programs drawn with objects take as arguments or read as globals: arrays
held in a plain class (applied by its methods), in a dataclass and in a namedtuple, layers,
activation and loss callbacks, and a logger.  A real module, so that their source can be read."""

from __future__ import annotations

import collections
import functools
import logging
from dataclasses import dataclass

import numpy as np

LOGGER = logging.getLogger("srcgrad.random_programs")
"""Below its level at debug: its calls print nothing."""


class Affine:
    """A layer whose weights are attributes of a plain object (not differentiated)."""

    def __init__(self, w: np.ndarray, b: np.ndarray) -> None:
        self.w = w
        self.b = b

    def forward(self, h):
        return h @ self.w + self.b

    def __call__(self, h):
        return np.tanh(self.forward(h))


@dataclass
class Params:
    """A weight vector and a float bias (a pytree: differentiated)."""

    w: np.ndarray
    b: float


@dataclass
class Dense:
    """One layer of a list of layers (a pytree: differentiated)."""

    w: np.ndarray
    b: np.ndarray

    def apply(self, h):
        return h @ self.w + self.b


Pair = collections.namedtuple("Pair", ["u", "v"])


def softplus(t):
    return np.log1p(np.exp(t))


def scaled(t, k=1.0):
    return np.sin(t) * k


def sq_loss(pred, target):
    return np.mean((pred - target) ** 2)


def smooth_l1(pred, target, delta=1.0):
    r = pred - target
    return np.sum(np.sqrt(r * r + delta ** 2) - delta)


MODEL = Affine(np.linspace(-0.5, 0.5, 16).reshape(4, 4), np.linspace(0.1, 0.4, 4))

ACTIVATIONS = (np.tanh, softplus, functools.partial(scaled, k=0.7), np.sin)
LOSSES = (sq_loss, smooth_l1, functools.partial(smooth_l1, delta=0.5))

NAMES = ["Affine", "Dense", "LOGGER", "MODEL", "Pair", "Params", "scaled", "softplus",
         "sq_loss", "smooth_l1"]
"""What a program's module imports from here."""


def draw_objects(rng: np.random.Generator, seed: int) -> tuple[list[str], list, list[bool]]:
    """Further arguments, each drawn or not: (names, values, whether differentiated)."""
    names, args, wrt = [], [], []

    def add(name, value, differentiated):
        names.append(name)
        args.append(value)
        wrt.append(differentiated)

    def u(*shape):
        return rng.uniform(-1.0, 1.0, shape)

    if rng.random() < 0.4:
        add("prm", Params(u(4), float(rng.uniform(0.3, 1.2))), True)
    if rng.random() < 0.3:
        add("nt", Pair(u(4), float(rng.uniform(0.3, 1.2))), True)
    if rng.random() < 0.35:
        add("layers", [Dense(u(4, 4) * 0.6, u(4) * 0.3) for _ in range(2)], True)
    if rng.random() < 0.35:
        add("model", Affine(u(4, 4) * 0.6, u(4) * 0.3), False)
    if rng.random() < 0.45:
        add(*(("rs", np.random.RandomState(seed % 10007)) if rng.random() < 0.5 else
              ("rng", np.random.default_rng(seed % 10007))), False)
    if rng.random() < 0.35:
        add("act", ACTIVATIONS[int(rng.integers(len(ACTIVATIONS)))], False)
    if rng.random() < 0.25:
        add("loss", LOSSES[int(rng.integers(len(LOSSES)))], False)
    if rng.random() < 0.4:
        cfg = {"scale": float(rng.uniform(0.3, 1.2)), "steps": int(rng.integers(1, 3)),
               "center": bool(rng.random() < 0.5)}
        if rng.random() < 0.5:
            cfg["eps"] = 1e-3
        add("cfg", cfg, False)
    return names, args, wrt
