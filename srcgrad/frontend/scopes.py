"""What a block of statements assigns, reads, and reads before assigning (its live-in names):
the facts the lowering of branches and loops decides their inputs and outputs by."""

from __future__ import annotations

import ast

__all__ = ["assigned", "bound", "read", "exposed", "exposed_suffixes", "own_statements", "walk"]


_SCOPES = (ast.Lambda, ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)


def walk(stmts: list[ast.AST]):
    """Every node of ``stmts`` in their own scope: not entering nested functions and classes,
    nor lambdas and comprehensions (yielded, not entered: their names are their own)."""
    for s in stmts:
        stack = [s]
        while stack:
            node = stack.pop()
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                continue
            yield node
            if not isinstance(node, _SCOPES):
                stack.extend(ast.iter_child_nodes(node))


def stored_base(node: ast.AST) -> str | None:
    """The array name a subscript store writes into (``y`` of ``y[i][j] = v``), or None."""
    if not (isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store)):
        return None
    base = node.value
    while isinstance(base, ast.Subscript):
        base = base.value
    return base.id if isinstance(base, ast.Name) else None


_CHANGING = frozenset({"append", "update", "pop", "setdefault", "popitem", "clear"})
"""Methods that change the list or dict they are called on."""


def assigned(stmts: list[ast.stmt]) -> set[str]:
    """Names a block assigns (targets of assignments and of ``for``, arrays written into)."""
    names = set()
    for n in walk(stmts):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            names.add(n.id)
        elif stored_base(n) is not None:
            names.add(stored_base(n))                  # y[i] = v makes a new y
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and \
                n.func.attr in _CHANGING and isinstance(n.func.value, ast.Name):
            names.add(n.func.value.id)                 # so do xs.append(v), d.update(e)
    return names


def read(stmts: list[ast.AST]) -> set[str]:
    """Names a block reads (a lambda's or comprehension's free names included)."""
    names = set()
    for n in walk(stmts):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
            names.add(n.id)
        elif isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name):
            names.add(n.target.id)                     # n += 1 reads n
        elif isinstance(n, _SCOPES):
            names |= _free(n)
    return names


def _free(node: ast.AST) -> set[str]:
    """The names a lambda or a comprehension reads from the scope around it."""
    if isinstance(node, ast.Lambda):
        return read([node.body]) - {a.arg for a in ast.walk(node.args) if isinstance(a, ast.arg)}
    bound: set[str] = set()
    out: set[str] = set()
    for k, gen in enumerate(node.generators):
        out |= read([gen.iter]) - (bound if k else set())   # the first runs outside
        bound |= {n.id for n in ast.walk(gen.target) if isinstance(n, ast.Name)}
        out |= read(gen.ifs) - bound
    parts = [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
    return out | (read(parts) - bound)


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
        reads, kills = _reads_kills(s)
        out |= reads - killed
        killed |= kills
    return out


def exposed_suffixes(stmts: list[ast.stmt], defs=None) -> list[set[str]]:
    """``exposed(stmts[i:])`` for every ``i`` (and ``len(stmts)``: nothing), in one backward
    pass: what is live after each statement, at a cost linear in the block.  ``defs(node)``:
    the names a nested ``def`` reads, added to every suffix that holds it."""
    out, free = [set()], [set()]
    for s in reversed(stmts):
        reads, kills = _reads_kills(s)
        out.append(reads | (out[-1] - kills))
        fn = defs is not None and isinstance(s, ast.FunctionDef)
        free.append(free[-1] | defs(s) if fn else free[-1])
    return [live | names if names else live for live, names in zip(out[::-1], free[::-1])]


def _reads_kills(s: ast.stmt) -> tuple[set[str], set[str]]:
    """What a statement reads before assigning it, and what it surely assigns."""
    if isinstance(s, ast.If):            # each branch reads what it does not assign first
        reads = read([s.test]) | exposed(s.body) | exposed(s.orelse)
        return reads, _definite(s.body) & _definite(s.orelse)
    if isinstance(s, ast.For):
        reads = read([s.iter]) | (exposed(s.body) - _targets(s.target)) | read(s.orelse)
    elif isinstance(s, (ast.Assign, ast.AnnAssign)) and s.value is not None:
        targets = s.targets if isinstance(s, ast.Assign) else [s.target]
        reads = read([s.value]) | set().union(*(read([t]) for t in targets))
    else:
        reads = read([s])
    if isinstance(s, (ast.Assign, ast.AnnAssign)):
        targets = s.targets if isinstance(s, ast.Assign) else [s.target]
        return reads, set().union(*(_targets(t) for t in targets))
    return reads, set()


def _definite(stmts: list[ast.stmt]) -> set[str]:
    """Names a block surely assigns (by its own assignments, or in both branches of an if)."""
    names: set[str] = set()
    for s in stmts:
        if isinstance(s, ast.Assign):
            names |= set().union(*(_targets(t) for t in s.targets))
        elif isinstance(s, ast.AnnAssign) and s.value is not None:
            names |= _targets(s.target)
        elif isinstance(s, ast.If):
            names |= _definite(s.body) & _definite(s.orelse)
    return names


def _targets(target: ast.expr) -> set[str]:
    """Names bound by an assignment target (a subscript write binds nothing new)."""
    if isinstance(target, ast.Name):
        return {target.id}
    if isinstance(target, (ast.Tuple, ast.List)):
        return set().union(*(_targets(t) for t in target.elts))
    return set()


def bound(s: ast.stmt) -> set[str]:
    """The names an assignment statement binds."""
    if not isinstance(s, (ast.Assign, ast.AnnAssign)):
        return set()
    targets = s.targets if isinstance(s, ast.Assign) else [s.target]
    return {n.id for t in targets for n in ast.walk(t)
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
