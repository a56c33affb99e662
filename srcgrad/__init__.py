"""srcgrad: source-transformation automatic differentiation for Python and NumPy.

``srcgrad.grad`` and friends compile a NumPy function's gradient ahead of time into readable
source (``srcgrad.transforms.grad``); ``srcgrad.Tensor`` is PyTorch's eager autograd over NumPy
(``srcgrad.runtime``).  Both use one table of derivative rules.
"""

from srcgrad import autograd, cuda, linalg, nn, optim, tree, viz
from srcgrad.errors import ArgumentWriteWarning, CompileError, FallbackWarning
from srcgrad.runtime.device import device
from srcgrad.runtime.eager.anomaly import is_anomaly_check_nan_enabled, is_anomaly_enabled
from srcgrad.runtime.eager.dtypes import bool_ as bool  # noqa: A004
from srcgrad.runtime.eager.dtypes import (
    dtype,
    float16,
    float32,
    float64,
    get_default_dtype,
    int8,
    int16,
    int32,
    int64,
    set_default_dtype,
    uint8,
)
from srcgrad.runtime.eager.factories import (
    arange,
    as_tensor,
    empty,
    empty_like,
    eye,
    from_numpy,
    full,
    full_like,
    linspace,
    manual_seed,
    ones,
    ones_like,
    rand,
    rand_like,
    randint,
    randn,
    randn_like,
    randperm,
    seed,
    tensor,
    zeros,
    zeros_like,
)
from srcgrad.runtime.eager.functions import *  # noqa: F403
from srcgrad.runtime.eager.grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from srcgrad.runtime.eager.linalg import einsum
from srcgrad.runtime.eager.ops import where
from srcgrad.runtime.eager.tensor import Size, Tensor
from srcgrad.runtime.eager.views import cat, stack
from srcgrad.runtime.rules import stop_gradient
from srcgrad.runtime.rules.primitives import defvjp, primitive
from srcgrad.tools.explain import explain
from srcgrad.transforms.base import show
from srcgrad.transforms.compile import compile
from srcgrad.transforms.grad import Transform, grad, value_and_grad, vjp
from srcgrad.transforms.jacobians import hessian, jacfwd, jacrev
from srcgrad.transforms.jvp import jvp

half, double, long, short = float16, float64, int64, int16
float = float32  # noqa: A001
int = int32  # noqa: A001

__version__ = "0.1.0"

_PUBLIC_MODULES = ("autograd", "cuda", "linalg", "nn", "optim", "tree", "viz")
"""The public submodules; the others (``frontend``, ``transforms``, ``codegen`` ...) are
reached by their full path, as internals."""

__all__ = sorted(n for n, v in globals().items()
                 if not n.startswith("_")
                 and (not isinstance(v, type(autograd)) or n in _PUBLIC_MODULES))


def __dir__() -> list[str]:
    """``dir(srcgrad)`` lists the public API only: the import system also binds each loaded
    internal package (``srcgrad.frontend`` ...) as an attribute, which is no part of it."""
    return [*__all__, "__version__"]
