"""A full Hessian's module: a gradient's generated code and one loop over the unit tangents.

Each column of the Hessian of a scalar ``f`` is the gradient of ``f``'s derivative along a
unit tangent (reverse over forward).  The module of that gradient's generated code gets one
more function, which calls it for every unit tangent and stacks the columns, so the whole
Hessian is one call of plain NumPy code, with no Python of srcgrad's between the columns::

    def energy_hessian(x):
        n = np.size(x)
        units = np.eye(n, dtype=np.result_type(x, 1.0)).reshape((n,) + np.shape(x))
        columns = [energy_tangent_grad(x, unit) for unit in units]
        return np.stack(columns, axis=-1).reshape(np.shape(x) + np.shape(x))

When the column function is straight-line code, what does not depend on the tangent is
computed once, before the loop.  Its stages (:data:`HESSIAN`) write that function into the
gradient's module (:class:`HessianModule`), name it, and end with the pipeline's ``finish``.
"""

from __future__ import annotations

import ast
import copy
import inspect
from collections.abc import Callable, Iterable
from typing import Any

import networkx as nx

from srcgrad.build.job import Built, Job
from srcgrad.build.parts import BUILD_LOCK
from srcgrad.build.pipeline import Pipeline, finish
from srcgrad.codegen import Backend, as_backend, load, unparse
from srcgrad.ir import Function, fresh_name
from srcgrad.runtime import quiet as quiet_module

__all__ = ["HESSIAN", "HessianModule", "build_hessian"]


class HessianModule:
    """A gradient's module (its ``source``, the names ``taken`` in it, the ``free`` values it
    reads) with one more function: the Hessian with respect to the gradient's argument
    ``p``, calling the gradient's ``column`` function for each unit tangent (its last
    parameter) or holding its body."""

    def __init__(self, source: str, column: Callable, taken: Iterable[str], free: dict,
                 base: str, p: int) -> None:
        self.source, self.column, self.free, self.base, self.p = source, column, free, base, p
        self.params = list(inspect.signature(column).parameters)[:-1]
        self.taken = set(taken) | set(self.params)
        self.loop: ast.FunctionDef | None = None
        self.imports: list[ast.stmt] = []

    def write(self) -> str:
        """Write the Hessian's function (``<base>_hessian``); its name."""
        name = fresh_name(f"{self.base}_hessian", self.taken)
        column = _column_function(self.source, self.column.__name__)
        taken = set(self.taken)
        if column is not None:
            taken |= {n.id for n in ast.walk(column) if isinstance(n, ast.Name)}
        local = {k: fresh_name(k, taken) for k in ("n", "units", "unit", "columns")}
        params, p = self.params, self.p
        loop = _hoisted(column, name, params, p, local) if column is not None else None
        if loop is None:
            quiet = fresh_name("quiet", taken | set(local.values()))
            self.free = {**self.free, quiet: quiet_module}     # its import line: below
            self.imports = [ast.Import([ast.alias(quiet_module.__name__, quiet)])]
            loop = _function(_LOOP, name, params, p, {**local, "grad": self.column.__name__,
                                                      "quiet": quiet})
        self.loop = loop
        return name

    def finish(self, ir: Function | None, title: str, label: str, backend: Backend, main: str,
               facts: dict | None = None) -> tuple[str, dict]:
        """The module's text, the gradient's followed by the Hessian's function, loaded."""
        imports = "".join(unparse(st) + "\n\n\n" for st in self.imports)
        text = self.source.rstrip("\n") + "\n\n\n" + imports + unparse(self.loop) + "\n"
        return text, load(text, label, self.free, backend)


def _write(job: Job) -> None:
    """The Hessian's function, the module's main one."""
    job.main = job.module.write()


def _title(job: Job) -> None:
    """The label of the module's lines."""
    job.label = f"hessian {job.module.base}"


HESSIAN = Pipeline("hessian", (_write, _title, finish))
"""A Hessian's loop, from its gradient's generated module."""


def build_hessian(fun: Any, module: HessianModule, graph: nx.DiGraph,
                  backend: Backend | str) -> Built:
    """The Hessian's module ``module`` (``graph``: its gradient's), built as a build of
    ``fun`` (the derivative the gradient is of: where an internal error is reported)."""
    return HESSIAN.build(Job(fun, (module.p,), as_backend(backend), module=module,
                             graph=graph))


_LOOP = ast.parse('''
def name(params):
    """The Hessian with respect to x: the gradient of the derivative along each unit
    tangent of x (one column each; the function's prints are the first column's)."""
    n = np.size(x)
    units = np.eye(n, dtype=np.result_type(x, 1.0)).reshape((n,) + np.shape(x))
    columns = [grad(params, unit) for unit in units[:1]]
    with quiet.muted():
        columns += [grad(params, unit) for unit in units[1:]]
    return np.stack(columns, axis=-1).reshape(np.shape(x) + np.shape(x))
''').body[0]
"""The Hessian's function, calling the column function once per unit tangent: its names
(``name``, ``params``, ``x``, ``n`` ...) are placeholders that :func:`_function` replaces."""

_HOISTED = ast.parse('''
def name(params):
    """The Hessian with respect to x: the gradient of the derivative along each unit
    tangent of x (one column each); what does not depend on the tangent is computed once."""
    INVARIANT
    n = np.size(x)
    units = np.eye(n, dtype=np.result_type(x, 1.0)).reshape((n,) + np.shape(x))
    columns = []
    for unit in units:
        tangent = unit
        VARYING
        columns.append(column)
    return np.stack(columns, axis=-1).reshape(np.shape(x) + np.shape(x))
''').body[0]
"""The Hessian as one loop whose body holds only what depends on the tangent: ``INVARIANT``
and ``VARYING`` stand for statement lists, ``column`` for the column's expression."""


def _function(template: ast.FunctionDef, name: str, params: list[str], p: int,
              names: dict[str, str], spliced: dict[str, Any] | None = None) -> ast.FunctionDef:
    """``template`` with its placeholder names replaced: ``params`` (a parameter list or an
    argument list) by ``params``, ``x`` by ``params[p]``, the others by ``names``; a statement
    ``INVARIANT``/``VARYING`` by the statements and ``column`` by the expression in
    ``spliced``."""
    fn = copy.deepcopy(template)
    fn.name = name
    fn.args.args = [ast.arg(q) for q in params]
    rename = {**names, "x": params[p]}
    spliced = spliced or {}
    placeholders = {id(n) for n in ast.walk(fn) if isinstance(n, ast.Name)}

    class Fill(ast.NodeTransformer):
        def visit_Name(self, node: ast.Name) -> Any:
            if id(node) not in placeholders:
                return node
            if node.id in spliced:
                return spliced[node.id]
            node.id = rename.get(node.id, node.id)
            return node

        def visit_Call(self, node: ast.Call) -> Any:
            node.args = [a for arg in node.args for a in (
                [ast.Name(q, ast.Load()) for q in params]
                if isinstance(arg, ast.Name) and arg.id == "params" else [arg])]
            return self.generic_visit(node)

        def visit_Expr(self, node: ast.Expr) -> Any:
            if isinstance(node.value, ast.Name) and node.value.id in spliced:
                return spliced[node.value.id] or [ast.Pass()]
            return self.generic_visit(node)

    fn.body[1:] = Fill().visit(ast.Module(fn.body[1:], [])).body
    doc = fn.body[0].value
    doc.value = doc.value.replace(" x:", f" {params[p]}:").replace("of x ", f"of {params[p]} ")
    return ast.fix_missing_locations(fn)


def _column_function(source: str, name: str) -> ast.FunctionDef | None:
    """The AST of the gradient's generated function ``name`` (one column of the Hessian)."""
    with BUILD_LOCK:                     # CPython makes ast trees one thread at a time
        tree = ast.parse(source)
    return next((node for node in tree.body if isinstance(node, ast.FunctionDef)
                 and node.name == name), None)


def _hoisted(fn: ast.FunctionDef, name: str, params: list[str], p: int,
             local: dict[str, str]) -> ast.FunctionDef | None:
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
    return _function(_HOISTED, name, params, p, {**local, "tangent": tangent},
                     {"INVARIANT": invariant, "VARYING": inside, "column": last.value})


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
