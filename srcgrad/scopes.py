"""What a block of statements assigns, reads, and reads before assigning (its live-in names):
the facts the lowering of branches and loops decides their inputs and outputs by."""

from __future__ import annotations

import ast

__all__ = ["assigned", "read", "exposed", "own_statements", "walk"]


def walk(stmts: list[ast.stmt]):
    """Every node of ``stmts``, not entering nested functions, lambdas or classes."""
    for s in stmts:
        stack = [s]
        while stack:
            node = stack.pop()
            if isinstance(node, (ast.FunctionDef, ast.Lambda, ast.ClassDef)):
                continue
            yield node
            stack.extend(ast.iter_child_nodes(node))


def assigned(stmts: list[ast.stmt]) -> set[str]:
    """Names a block assigns (targets of assignments and of ``for``, arrays written into)."""
    names = set()
    for n in walk(stmts):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            names.add(n.id)
        elif isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Store):
            base = n.value
            while isinstance(base, ast.Subscript):
                base = base.value
            if isinstance(base, ast.Name):
                names.add(base.id)                     # y[i] = v makes a new y
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and \
                n.func.attr == "append" and isinstance(n.func.value, ast.Name):
            names.add(n.func.value.id)                 # so does xs.append(v)
    return names


def read(stmts: list[ast.AST]) -> set[str]:
    """Names a block reads."""
    return {n.id for n in walk(stmts) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def own_statements(stmts: list[ast.stmt]):
    """The statements of a block and of its branches, not of the loops nested in it."""
    for st in stmts:
        yield st
        if isinstance(st, ast.If):
            yield from own_statements(st.body)
            yield from own_statements(st.orelse)
        elif isinstance(st, (ast.With, ast.Try)):
            yield from own_statements(st.body)


def exposed(stmts: list[ast.stmt]) -> set[str]:
    """Names a sequence reads before assigning them (what must be live on entry)."""
    killed: set[str] = set()
    out: set[str] = set()
    for s in stmts:
        if isinstance(s, ast.For):
            reads = read([s.iter]) | (exposed(s.body) - _targets(s.target)) | read(s.orelse)
        elif isinstance(s, (ast.Assign, ast.AnnAssign)) and s.value is not None:
            targets = s.targets if isinstance(s, ast.Assign) else [s.target]
            reads = read([s.value]) | set().union(*(read([t]) for t in targets))
        else:
            reads = read([s])
        out |= reads - killed
        if isinstance(s, (ast.Assign, ast.AnnAssign)):
            targets = s.targets if isinstance(s, ast.Assign) else [s.target]
            killed |= set().union(*(_targets(t) for t in targets))
    return out


def _targets(target: ast.expr) -> set[str]:
    """Names bound by an assignment target (a subscript write binds nothing new)."""
    if isinstance(target, ast.Name):
        return {target.id}
    if isinstance(target, (ast.Tuple, ast.List)):
        return set().union(*(_targets(t) for t in target.elts))
    return set()
