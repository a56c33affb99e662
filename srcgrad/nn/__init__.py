"""``srcgrad.nn``: PyTorch's ``torch.nn`` names over srcgrad's runtime."""

from srcgrad.nn import functional
from srcgrad.runtime.nn import *  # noqa: F403
from srcgrad.runtime.nn import __all__  # noqa: F401
