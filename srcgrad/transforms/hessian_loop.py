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

import ast
import inspect
from collections.abc import Callable
from typing import Any

from srcgrad.build.parts import BUILD_LOCK
from srcgrad.codegen.module import load
from srcgrad.codegen.printer import unparse
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
    from srcgrad.transforms.grad import Transform
    gradient = Transform(directional, "grad", p, backend=backend, strict=strict)
    if gradient._fn is None or gradient.source is None:
        return None
    params = list(inspect.signature(gradient._fn).parameters)[:-1]
    taken = set(gradient._namespace) | set(params)
    name = fresh_name(f"{base}_hessian", taken)
    column = _column_function(gradient)
    if column is not None:
        taken |= {n.id for n in ast.walk(column) if isinstance(n, ast.Name)}
    local = {k: fresh_name(k, taken) for k in ("n", "units", "unit", "columns")}
    loop = _hoisted(column, name, params, p, local) if column is not None else None
    if loop is None:
        loop = _LOOP.format(name=name, params=", ".join(params), x=params[p],
                            grad=gradient._fn.__name__, **local)
    text = gradient.source.rstrip("\n") + "\n\n\n" + loop
    namespace = load(text, f"hessian {base}", gradient._free,
                     "numpy" if backend == "auto" else backend)
    return namespace[name], text, gradient


_HOISTED = '''def {name}({params}):
    """The Hessian with respect to {x}: the gradient of the derivative along each unit
    tangent of {x} (one column each); what does not depend on the tangent is computed once."""
{invariant}
    {n} = np.size({x})
    {units} = np.eye({n}, dtype=np.result_type({x}, 1.0)).reshape(({n},) + np.shape({x}))
    {columns} = []
    for {unit} in {units}:
        {tangent} = {unit}
{varying}
        {columns}.append({column})
    return np.stack({columns}, axis=-1).reshape(np.shape({x}) + np.shape({x}))
'''


def _column_function(gradient: Any) -> ast.FunctionDef | None:
    """The AST of the gradient's generated function (one column of the Hessian)."""
    with BUILD_LOCK:                     # CPython makes ast trees one thread at a time
        tree = ast.parse(gradient.source)
    return next((node for node in tree.body if isinstance(node, ast.FunctionDef)
                 and node.name == gradient._fn.__name__), None)


def _hoisted(fn: ast.FunctionDef, name: str, params: list[str], p: int,
             local: dict[str, str]) -> str | None:
    """The Hessian as one loop over the unit tangents whose body holds only the statements
    that depend on the tangent (the rest computed once, before it), or None when the column
    function is not straight-line code this can split."""
    tangent = fn.args.args[-1].arg
    *body, last = fn.body
    if not isinstance(last, ast.Return) or last.value is None or not all(
            isinstance(st, (ast.Assign, ast.AugAssign, ast.Expr)) for st in body):
        return None
    varying, invariant, moved, kept = {tangent}, [], set(), set()
    for st in body:
        stored = {n.id for n in ast.walk(st) if isinstance(n, ast.Name)
                  and isinstance(n.ctx, ast.Store)} | _written(st)
        read = {n.id for n in ast.walk(st) if isinstance(n, ast.Name)
                and isinstance(n.ctx, ast.Load)} | (stored if isinstance(st, ast.AugAssign)
                                                     else set())
        if read & varying or isinstance(st, ast.Expr) and not isinstance(st.value, ast.Call):
            varying |= stored
            kept |= stored
        else:
            invariant.append(st)
            moved |= stored
    if moved & kept or tangent in moved:
        return None
    inside = [st for st in body if st not in invariant]

    def lines(statements: list[ast.stmt], indent: str) -> str:
        return "\n".join(indent + line for st in statements
                         for line in unparse(st).splitlines()) or f"{indent}pass"
    return _HOISTED.format(name=name, params=", ".join(params), x=params[p], tangent=tangent,
                           invariant=lines(invariant, "    "), varying=lines(inside, "        "),
                           column=unparse(last.value), **local)


_WRITERS = {"scatter_add", "add_at", "pop_gradient"}     # helpers that change an argument


def _written(st: ast.stmt) -> set[str]:
    """Names a statement changes in place: the first argument of a helper that writes into
    it (``scatter_add(out, ...)``), the list of ``xs.append(...)``."""
    out = set()
    for node in ast.walk(st):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id in _WRITERS and node.args and isinstance(
                node.args[0], ast.Name):
            out.add(node.args[0].id)
        elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and \
                func.attr in ("append", "pop", "extend", "sort", "fill"):
            out.add(func.value.id)
    return out
