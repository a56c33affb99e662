"""srcgrad in one screen: a NumPy function's gradient as readable source, then the eager API.

Run: ``python examples/quickstart.py``.
"""

import numpy as np

import srcgrad


@srcgrad.grad
def loss(w, x, y):
    """Mean squared error of a one-layer tanh model."""
    z = np.tanh(x @ w)
    return np.mean((z - y) ** 2)


rng = np.random.default_rng(0)
w, x, y = rng.normal(size=3), rng.normal(size=(8, 3)), rng.normal(size=8)

head, body = loss.source.split("def loss_grad")
helpers = [line[4:].split("(")[0] for line in head.splitlines() if line.startswith("def ")]
print("The gradient srcgrad generated ahead of time (loss.source; the module also defines")
print(f"the helpers it calls: {', '.join(helpers)}):\n")
print("def loss_grad" + body)
print("d loss / d w =", loss(w, x, y))

# The same gradient by the eager engine: PyTorch's API over NumPy.
wt = srcgrad.tensor(w, requires_grad=True)
zt = (srcgrad.tensor(x) @ wt).tanh()
((zt - srcgrad.tensor(y)) ** 2).mean().backward()
print("eager       =", wt.grad.numpy())
assert np.allclose(wt.grad.numpy(), loss(w, x, y))

if __name__ == "__main__":
    import pathlib
    import sys
    sys.path.insert(0, str(pathlib.Path(__file__).parent))
    from train_classifier import train
    print("\nA small classifier trained with srcgrad.nn and srcgrad.optim:")
    losses = train(steps=200)
    assert losses[-1] < losses[0] / 3, "the loss should fall"
