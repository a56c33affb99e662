"""``srcgrad.nn.init``: PyTorch's ``torch.nn.init`` names."""

from srcgrad.runtime.nn.init import *  # noqa: F403
from srcgrad.runtime.nn.init import (
    __all__,  # noqa: F401
    _calculate_fan_in_and_fan_out,  # noqa: F401
)
