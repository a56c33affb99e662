"""``srcgrad.optim``: PyTorch's ``torch.optim`` names."""

from srcgrad.runtime.optim import SGD, Adam, Optimizer

__all__ = ["Optimizer", "SGD", "Adam"]
