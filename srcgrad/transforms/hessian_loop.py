"""A full Hessian as generated source: the gradient of a scalar function's directional
derivative, compiled as a transform, and one loop over the unit tangents of the argument
added to its module (:mod:`srcgrad.build.hessian`), so that the whole Hessian is one call of
generated code."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from srcgrad.build.hessian import HessianModule, build_hessian

__all__ = ["hessian_function"]


def hessian_function(directional: Callable, p: int, base: str, backend: str,
                     strict: bool) -> tuple[Callable, str, Any] | None:
    """``(hessian, source, gradient transform)`` for a scalar function whose derivative
    along its argument ``p`` is the generated function ``directional`` (its last parameter
    the tangent); None when that gradient is not compiled.  ``base`` names the Hessian's
    function (``<base>_hessian``)."""
    from srcgrad.transforms.grad import Transform
    gradient = Transform(directional, "grad", p, backend=backend, strict=strict)
    code = gradient.code
    if code is None or gradient.source is None:
        return None
    module = HessianModule(gradient.source, code.fn, code.namespace, code.free, base, p)
    built = build_hessian(directional, module, gradient.graph, gradient.backend)
    return built.functions[built.name], built.source, gradient
