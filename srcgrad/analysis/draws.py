"""Random draws read no differentiated value.

A draw (a ``static`` statement the lowering marks ``draw``: ``rs.normal(mu, 1.0)``) carries no
gradient, so a value that depends on a differentiated argument may not reach its arguments:
the gradient through it would be dropped silently.  The check follows the differentiated
values into the branches and loop bodies a statement hands them to, and into helpers
lowered already (a helper lowered later is checked when its own code is built).
"""

from __future__ import annotations

from srcgrad.errors import CompileError, Location
from srcgrad.ir import Function, Stmt, Var

__all__ = ["check_draws"]


def check_draws(fn: Function, varied: set[str]) -> None:
    """Refuse a draw of ``fn`` (or of a block it runs) whose arguments read a value of
    ``varied`` or one computed from them."""
    varied = set(varied)
    for st in fn.body:
        if st.kind == "static" and st.params.get("draw"):
            _refuse(fn, st, varied)
            continue
        for block, pairs in _handed(st):
            inside = {p for p, a in pairs if isinstance(a, Var) and a.name in varied}
            if inside:
                check_draws(block, inside)
        if st.target is not None and any(
                isinstance(a, Var) and a.name in varied for a in st.args):
            varied.add(st.target)


def _refuse(fn: Function, st: Stmt, varied: set[str]) -> None:
    for u in st.uses[1:] if st.params.get("owner") else st.uses:   # not the generator
        if u in varied:
            user = fn.source_names.get(u, u)
            raise CompileError(
                f"{st.params['draw']}(...) with an argument that carries a gradient is not "
                f"compiled: it reads {user!r}, which depends on a differentiated argument, "
                "and srcgrad does not differentiate a random draw with respect to its "
                "parameters (draw standard values, then scale and shift them: "
                "mu + sigma * rs.standard_normal(shape))",
                Location(fn.filename, st.line, 0, 0, st.text, fn.name))


def _handed(st: Stmt) -> list[tuple[Function, list]]:
    """The blocks (and helpers lowered already) ``st`` runs, each with its parameters paired
    with the arguments it is handed."""
    if st.kind == "loop":
        body = st.fn[0]
        return [(body, list(zip(body.params[1:], st.args)))]
    if st.kind == "branch":
        return [(ir, list(zip(ir.params, st.args[1:]))) for ir in st.fn
                if isinstance(ir, Function)]
    if st.kind == "call" and isinstance(st.fn, Function):
        return [(st.fn, list(zip(st.fn.params, st.args)))]
    return []
