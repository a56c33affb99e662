"""``srcgrad.nn``: modules, parameters and losses with PyTorch's names."""

from srcgrad.runtime.nn import functional, init
from srcgrad.runtime.nn.conv import Conv1d, Conv2d
from srcgrad.runtime.nn.layers import *  # noqa: F403
from srcgrad.runtime.nn.layers import __all__ as _layers
from srcgrad.runtime.nn.module import Module, Parameter

__all__ = ["functional", "init", "Module", "Parameter", "Conv1d", "Conv2d", *_layers]
