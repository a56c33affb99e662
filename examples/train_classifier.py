"""Train a small classifier with srcgrad's PyTorch-style ``nn`` and ``optim`` (eager autograd).

Two interleaved spirals, a 2-32-32-2 MLP, cross-entropy, Adam.  The loss falls from about 0.69
to well under 0.1; run ``python examples/train_classifier.py``.
"""

from __future__ import annotations

import numpy as np

import srcgrad
import srcgrad.nn as nn


def spirals(n: int = 200, seed: int = 0) -> tuple[srcgrad.Tensor, srcgrad.Tensor]:
    rng = np.random.default_rng(seed)
    t = rng.uniform(0.25, 1.0, n) * 3 * np.pi
    arm = rng.integers(0, 2, n)
    r = t / (3 * np.pi)
    x = np.stack([r * np.cos(t + np.pi * arm), r * np.sin(t + np.pi * arm)], axis=1)
    x += rng.normal(0, 0.02, x.shape)
    return srcgrad.tensor(x, dtype=srcgrad.float32), srcgrad.tensor(arm)


def train(steps: int = 300, verbose: bool = True) -> list[float]:
    srcgrad.manual_seed(0)
    x, y = spirals()
    model = nn.Sequential(nn.Linear(2, 32), nn.Tanh(), nn.Linear(32, 32), nn.Tanh(),
                          nn.Linear(32, 2))
    optimizer = srcgrad.optim.Adam(model.parameters(), lr=0.02)
    loss_fn = nn.CrossEntropyLoss()
    losses = []
    for step in range(steps):
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        if verbose and step % 50 == 0:
            print(f"step {step:3d}  loss {loss.item():.4f}")
    model.eval()
    with srcgrad.no_grad():
        accuracy = (model(x).argmax(1) == y).float().mean().item()
    if verbose:
        print(f"final loss {losses[-1]:.4f}, training accuracy {accuracy:.1%}")
    return losses


if __name__ == "__main__":
    train()
