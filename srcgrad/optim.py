"""``srcgrad.optim``: PyTorch's ``torch.optim`` names, and ``srcgrad.optim.lr_scheduler``."""

import sys

from srcgrad.runtime import lr_scheduler
from srcgrad.runtime.optim import SGD, Adam, AdamW, Optimizer, RMSprop

# ``from srcgrad.optim.lr_scheduler import StepLR`` works as it does for torch.optim.
sys.modules[__name__ + ".lr_scheduler"] = lr_scheduler

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "lr_scheduler"]
