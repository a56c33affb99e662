"""A full Hessian as generated source: one loop over the unit tangents of the argument.

Each column of the Hessian of a scalar ``f`` is the gradient of ``f``'s derivative along a
unit tangent (reverse over forward).  The module of that gradient's generated code gets one
more function, which calls it for every unit tangent and stacks the columns, so the whole
Hessian is one call of plain NumPy code, with no Python of srcgrad's between the columns::

    def energy_hessian(x):
        n = np.size(x)
        units = np.eye(n, dtype=np.result_type(x, 1.0)).reshape((n,) + np.shape(x))
        columns = [energy_tangent_grad(x, unit) for unit in units]
        return np.stack(columns, axis=-1).reshape(np.shape(x) + np.shape(x))
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from srcgrad.codegen.module import load
from srcgrad.ir import fresh_name

__all__ = ["hessian_function"]

_LOOP = '''def {name}({params}):
    """The Hessian with respect to {x}: the gradient of the derivative along each unit
    tangent of {x} (one column each)."""
    {n} = np.size({x})
    {units} = np.eye({n}, dtype=np.result_type({x}, 1.0)).reshape(({n},) + np.shape({x}))
    {columns} = [{grad}({params}, {unit}) for {unit} in {units}]
    return np.stack({columns}, axis=-1).reshape(np.shape({x}) + np.shape({x}))
'''


def hessian_function(directional: Callable, p: int, base: str, backend: str,
                     strict: bool) -> tuple[Callable, str, Any] | None:
    """``(hessian, source, gradient transform)`` for a scalar function whose derivative
    along its argument ``p`` is the generated function ``directional`` (its last parameter
    the tangent); None when that gradient is not compiled."""
    from srcgrad.api import Transform
    gradient = Transform(directional, "grad", p, backend=backend, strict=strict)
    if gradient._fn is None or gradient.source is None:
        return None
    params = list(inspect.signature(gradient._fn).parameters)[:-1]
    taken = set(gradient._namespace) | set(params)
    name = fresh_name(f"{base}_hessian", taken)
    local = {k: fresh_name(k, taken) for k in ("n", "units", "unit", "columns")}
    loop = _LOOP.format(name=name, params=", ".join(params), x=params[p],
                        grad=gradient._fn.__name__, **local)
    text = gradient.source.rstrip("\n") + "\n\n\n" + loop
    namespace = load(text, f"hessian {base}", gradient._free,
                     "numpy" if backend == "auto" else backend)
    return namespace[name], text, gradient
