"""``srcgrad.nn.functional``: PyTorch's ``torch.nn.functional`` names."""

from srcgrad.runtime.nn.functional import *  # noqa: F403
from srcgrad.runtime.nn.functional import __all__  # noqa: F401
