"""Pictures of both graphs of a small MLP.

- ``mlp_eager_graph.svg``: the eager backward graph of the loss (``srcgrad.viz.make_dot``, as
  torchviz draws it): one box per ``grad_fn``, the parameters as named leaves.
- ``mlp_compiled_graph.svg``: the compiled gradient's graph (``srcgrad.viz.draw``): the
  primal values, active or not, and their adjoints, each with its source line.

Run: ``python examples/mlp_graphs.py`` (rewrites both files next to this script).  They are
drawn by srcgrad's own SVG renderer, so they come out the same on every machine; with the
``[viz]`` extra and Graphviz installed, ``picture.render("x.png")`` uses Graphviz instead.
"""

from __future__ import annotations

import pathlib

import numpy as np

import srcgrad
from srcgrad import nn
from srcgrad.viz import draw, make_dot

HERE = pathlib.Path(__file__).resolve().parent


def mlp_loss(W1, b1, W2, b2, x, y):
    """Mean squared error of a one-hidden-layer tanh network."""
    h = np.tanh(x @ W1 + b1)
    out = h @ W2 + b2
    return np.mean((out - y) ** 2)


def pictures(folder: pathlib.Path = HERE) -> list[str]:
    """Draw both graphs into ``folder``; return the paths written."""
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(8, 3)), rng.normal(size=(8, 1))

    # The eager graph: the same network with srcgrad.nn, as PyTorch code would write it.
    srcgrad.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
    loss = ((model(srcgrad.tensor(x)) - srcgrad.tensor(y)) ** 2).mean()
    eager = make_dot(loss, params=dict(model.named_parameters()))

    # The compiled graph: the gradient of the NumPy function with respect to the weights.
    grad = srcgrad.grad(mlp_loss, wrt=(0, 1, 2, 3))
    compiled = draw(grad)
    return [eager.render(folder / "mlp_eager_graph.svg", renderer="builtin"),
            compiled.render(folder / "mlp_compiled_graph.svg", renderer="builtin")]


if __name__ == "__main__":
    for path in pictures():
        print("wrote", path)
