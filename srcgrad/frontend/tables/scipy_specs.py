"""SciPy calls lowered by their :class:`~srcgrad.runtime.rules.scipy_specs.Spec` (the
``scipy.linalg`` solves and factorizations, ``scipy.signal``'s correlations), and the SciPy
callables whose result carries no gradient
(:data:`~srcgrad.runtime.rules.scipy_coverage.SCIPY_NO_GRADIENT`).

A call is bound by SciPy's own signature; the array arguments are the spec's inputs, every
other argument must be a literal or a named constant (it picks the primitives and their
parameters, as the spec's ``choose`` says, or the refusal it gives).
"""

from __future__ import annotations

import ast
import inspect
from typing import Any

from srcgrad.frontend.callees import bind_call
from srcgrad.ir import Const, Pack, Var, literal
from srcgrad.runtime.rules.primitives import Primitive
from srcgrad.runtime.rules.scipy_coverage import SCIPY_NO_GRADIENT, SCIPY_SPECS, public_name
from srcgrad.runtime.rules.scipy_specs import Spec

__all__ = ["spec_lowering", "no_gradient_reason"]

_NOT_STATIC = object()


def _static(value: Any) -> Any:
    """A lowered static argument as a Python value (_NOT_STATIC: not a literal)."""
    if isinstance(value, Const):
        return value.value if literal(value.value) or value.value is None else _NOT_STATIC
    if isinstance(value, Pack):
        items = [_static(v) for v in value.items]
        return _NOT_STATIC if _NOT_STATIC in items else tuple(items)
    if isinstance(value, (Var, ast.AST)):
        return _NOT_STATIC
    return value


def _lower_spec(spec: Spec) -> Any:
    def lower(lowerer: Any, args: list, kwargs: dict, node: ast.Call) -> Any:
        if spec.variadic:
            if kwargs:
                raise lowerer.error(f"{spec.name}() takes no keyword arguments", node)
            if any(isinstance(a, Pack) for a in args):
                raise lowerer.error(f"{spec.name}(): pass arrays, not list or tuple literals",
                                    node)
            prim, params = spec.choose({})
            return lowerer.prims.prim(prim, list(args), params, "blocks", node)
        sig = spec.signature
        bound = bind_call(lowerer, None, args, kwargs, node, spec.name, signature=sig)
        inputs, statics = [], {}
        for param in sig.parameters.values():
            value = bound.get(param.name, inspect.Parameter.empty)
            if param.name in spec.inputs:
                if value is inspect.Parameter.empty:
                    raise lowerer.error(f"{spec.name}(): {param.name} is missing", node)
                value = lowerer.expr(value) if isinstance(value, ast.AST) else value
                if isinstance(value, Pack):
                    raise lowerer.error(f"{spec.name}(): pass {param.name} as an array, not "
                                        "a list or tuple literal", node)
                inputs.append(value)
                continue
            if value is inspect.Parameter.empty:
                statics[param.name] = param.default
                continue
            if isinstance(value, ast.AST):
                value = lowerer.prims.param(value)
            statics[param.name] = _static(value)
        chosen = spec.choose(statics)                # a value not known here is refused:
        unknown = [k for k, v in statics.items() if v is _NOT_STATIC]   # by the spec if it
        if not isinstance(chosen, str) and unknown:                     # says why
            chosen = f"{spec.name}()'s {unknown[0]} must be a literal or a named constant"
        if isinstance(chosen, str):
            return _refused(lowerer, spec, chosen, inputs, node)
        if isinstance(chosen[0], Primitive):
            return lowerer.prims.prim(chosen[0], inputs, chosen[1], _hint(spec), node)
        return Pack([lowerer.prims.prim(prim, inputs, params, _hint(spec), node)
                     for prim, params in chosen])
    return lower


def _refused(lowerer: Any, spec: Spec, why: str, inputs: list, node: ast.Call) -> Any:
    """Refused when the call runs (on the path taken: a branch not taken compiles): the
    value lowered in its place is never read."""
    lowerer.iteration.raise_at_run_time(node, str(lowerer.error(why, node)))   # with the line
    return inputs[0] if len(spec.prims) == 1 else Pack([inputs[0]] * len(spec.prims))


def _hint(spec: Spec) -> str:
    return spec.name.rsplit(".", 1)[-1]


def spec_lowering(f: Any) -> Any:
    """The lowering of SciPy's ``f`` by its spec, or None (it has none)."""
    name = public_name(f)
    spec = SCIPY_SPECS.get(name) if name is not None else None
    return None if spec is None else _lower_spec(spec)


def no_gradient_reason(f: Any) -> str | None:
    """Why SciPy's ``f`` returns no gradient (None: not one of those)."""
    name = public_name(f)
    return None if name is None else SCIPY_NO_GRADIENT.get(name)
