"""``srcgrad.autograd``: PyTorch's ``torch.autograd`` names over srcgrad's engine."""

from srcgrad.autograd import forward_ad, functional
from srcgrad.runtime.eager.anomaly import detect_anomaly, set_detect_anomaly
from srcgrad.runtime.eager.autograd import backward, grad
from srcgrad.runtime.eager.function import Function, FunctionCtx, once_differentiable
from srcgrad.runtime.eager.functional import gradcheck, gradgradcheck
from srcgrad.runtime.eager.grad_mode import enable_grad, no_grad, set_grad_enabled

__all__ = ["backward", "grad", "Function", "FunctionCtx", "once_differentiable", "functional",
           "forward_ad", "gradcheck", "gradgradcheck", "no_grad", "enable_grad", "set_grad_enabled",
           "set_detect_anomaly", "detect_anomaly"]
