"""``srcgrad.autograd.forward_ad``: forward-mode AD, as ``torch.autograd.forward_ad``."""

from srcgrad.runtime.eager.forward_ad import (
    UnpackedDualTensor,
    dual_level,
    enter_dual_level,
    exit_dual_level,
    make_dual,
    unpack_dual,
)

__all__ = ["UnpackedDualTensor", "dual_level", "enter_dual_level", "exit_dual_level",
           "make_dual", "unpack_dual"]
