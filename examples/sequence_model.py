"""Train a small RNN to predict the next value of a noisy sine wave, through lists.

The model keeps its hidden states in a Python list (``hs.append``), reads the previous one
with ``hs[-1]``, turns every state into a prediction with a list comprehension and scores
them with ``np.stack``.  ``srcgrad.value_and_grad`` compiles all of it: the adjoint of
``append`` pops each state's gradient off a list, and the gradients of the weights that every
step reads are accumulated in place.  Plain gradient descent with momentum then fits it.
Run: ``python examples/sequence_model.py``.
"""

from __future__ import annotations

import numpy as np

import srcgrad


def loss(params, inputs, targets):
    """Mean squared error of one-step-ahead predictions over a whole sequence."""
    hs = [np.zeros(params["w_h"].shape[0])]
    for x in inputs:
        hs.append(np.tanh(params["w_h"] @ hs[-1] + params["w_x"] * x + params["b"]))
    predictions = [params["w_o"] @ h for h in hs[1:]]
    return np.mean((np.stack(predictions) - targets) ** 2)


def sequence(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    t = np.linspace(0.0, 6.0 * np.pi, n + 1)
    wave = np.sin(t) + 0.05 * rng.standard_normal(n + 1)
    return wave[:-1], wave[1:]


def train(steps: int = 150, hidden: int = 8, verbose: bool = True) -> list[float]:
    rng = np.random.default_rng(0)
    params = {"w_h": rng.normal(size=(hidden, hidden)) * 0.3,
              "w_x": rng.normal(size=hidden), "b": np.zeros(hidden),
              "w_o": rng.normal(size=hidden) * 0.3}
    inputs, targets = sequence(60, rng)
    step = srcgrad.value_and_grad(loss, strict=True)
    velocity = {k: np.zeros_like(v) for k, v in params.items()}
    losses = []
    for k in range(steps):
        value, grads = step(params, inputs, targets)
        losses.append(float(value))
        for name in params:
            velocity[name] = 0.9 * velocity[name] - 0.05 * grads[name]
            params[name] = params[name] + velocity[name]
        if verbose and k % 25 == 0:
            print(f"step {k:3d}  loss {value:.5f}")
    if verbose:
        print(f"final loss {losses[-1]:.5f} (from {losses[0]:.5f})")
    return losses


if __name__ == "__main__":
    train()
