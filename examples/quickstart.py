"""srcgrad in one screen: PyTorch's autograd API over NumPy, then a model that learns.

Run: ``python examples/quickstart.py``.
"""

import numpy as np

import srcgrad

# The autograd tour from PyTorch's tutorial, unchanged but for the import.
a = srcgrad.tensor([2.0, 3.0], requires_grad=True)
b = srcgrad.tensor([6.0, 4.0], requires_grad=True)
Q = 3 * a**3 - b**2
Q.backward(gradient=srcgrad.tensor([1.0, 1.0]))
print("Q       =", Q)
print("dQ/da   =", a.grad, " (9a² =", 9 * a.detach() ** 2, ")")
print("dQ/db   =", b.grad, " (-2b =", -2 * b.detach(), ")")

# NumPy functions on Tensors record differentiable operations.
x = srcgrad.tensor(np.linspace(0.0, 1.0, 4), requires_grad=True)
y = np.sum(np.sin(x) * np.exp(x))
(g,) = srcgrad.autograd.grad(y, x, create_graph=True)
(h,) = srcgrad.autograd.grad(g.sum(), x)
print("d/dx  sum(sin x · e^x) =", g.detach())
print("d²/dx² (summed)        =", h)

# A small classifier trained with nn + optim: the loss falls.
if __name__ == "__main__":
    import pathlib
    import sys
    sys.path.insert(0, str(pathlib.Path(__file__).parent))
    from train_classifier import train
    losses = train(steps=200)
    assert losses[-1] < losses[0] / 3, "the loss should fall"
