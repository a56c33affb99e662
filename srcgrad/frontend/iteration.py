"""What a ``for`` loop iterates: a structure known when compiling (unrolled), or a sequence
read element by element by the loop counter (the target bound from ``xs[k]``, the trip count
computed once before the loop, as Python evaluates the iterable once).

A loop over a pytree argument or a literal that holds tuples or trees (``for W, b in
layers``, ``enumerate``/``zip``/``reversed`` of such, ``range(len(layers))`` indexing it,
``sorted(d.items())`` of a dict argument) is unrolled: its length and the structure of its
items are known when compiling, and Python runs the body once per item, as the copies do.
"""

from __future__ import annotations

import ast
import contextlib
import copy
from contextlib import AbstractContextManager
from typing import Any, Protocol

from srcgrad.errors import CompileError
from srcgrad.frontend.assignments import Assignments
from srcgrad.frontend.dict_values import Local, ordered_keys
from srcgrad.frontend.dicts import Dicts
from srcgrad.frontend.itertools_loops import chain_written, itertools_items
from srcgrad.frontend.loop_binding import check_indexed, counted, target_binding, trip_expr
from srcgrad.frontend.objects import ArgumentObjects
from srcgrad.frontend.parse import Source
from srcgrad.frontend.scopes import assigned, exposed, exposed_suffixes, read, walk
from srcgrad.frontend.starred import expand, has_starred
from srcgrad.frontend.statics import Statics
from srcgrad.ir import Const, Pack, Stmt, Tree, Var
from srcgrad.runtime.rules.primitives import NotCompiled

__all__ = ["Iteration", "rebound"]

_UNROLL_LIMIT = 256        # copies of a loop body at most (a pytree is rarely longer)


class Host(Protocol):
    """What the lowering of iterables reads of, and asks of, the lowerer that holds it.  The
    names in scope, the line and the source change as lowering goes on (a helper lowered in
    place swaps them): they are read here when needed, never kept."""

    scope: dict[str, Any]
    src: Source
    line: int
    text: str
    treeless: bool                     # compiled before the structure of the arguments
    dicts: Dicts
    assignments: Assignments
    statics: Statics
    objects: ArgumentObjects           # objects passed as arguments

    def statement(self, s: ast.stmt) -> None: ...

    def emit(self, stmt: Stmt) -> Var: ...

    def fresh_internal(self, base: str) -> str: ...

    def error(self, message: str, node: ast.AST) -> CompileError: ...

    def live_after(self) -> set[str]: ...

    def live_as(self, names: set[str]) -> AbstractContextManager: ...


class Iteration:
    """The iterable of a ``for`` loop; the lowerer's ``iteration``."""

    def __init__(self, host: Host) -> None:
        self.host = host

    # ------------------------------------------------------------------- unrolled loops
    def unrolled_items(self, s: ast.For) -> list | None:
        """The items of a loop that is unrolled, or None: the loop is lowered as a loop."""
        host = self.host
        found = self._sequence(s.iter) or host.objects.sequence(s.iter)
        if found is None and host.treeless and _dict_loop(s.iter):
            for n in ast.walk(s.iter):     # refused here when it is not differentiated
                host.dicts.unknown(host.scope.get(getattr(n, "id", None)), s.iter)
            return self._structure_unknown(s)
        if found is None:
            return None
        items, structured = found
        written = chain_written(host, s)
        if written is not None:
            raise host.error("srcgrad unrolls this loop over the items its lists hold when "
                             "it begins, and does not compile a write into one of them in its "
                             "body (Python reads each list as it is then): loop over a copy, "
                             "list(xs)", written)
        if not structured and not self._indexes_structure(s) and not any(
                host.objects.is_object(v) for v in items) and not host.objects.uses_made(
                s.body):                                # objects: unrolled
            return None
        jumps = [n for n in walk(s.body) if isinstance(n, (ast.Break, ast.Continue, ast.Return))]
        if s.orelse or jumps:
            raise host.error("srcgrad unrolls a loop over a pytree or a list of tuples, and "
                             "does not compile break, continue, return or else in it",
                             jumps[0] if jumps else s)
        if len(items) > _UNROLL_LIMIT:
            raise host.error(f"this loop would be unrolled into {len(items)} copies (at most "
                             f"{_UNROLL_LIMIT} are compiled)", s.iter)
        return items

    def unroll(self, s: ast.For, items: list) -> None:
        host = self.host
        after = host.live_after() | exposed(s.body)
        rest = exposed_suffixes(s.body)
        fixed = isinstance(s.target, ast.Name) and s.target.id not in assigned(s.body)
        for item in items:
            host.assignments.assign(s.target, item)
            body = s.body
            if fixed and isinstance(item, Const) and type(item.value) is int:
                body = [self._fold_indices(st, s.target.id, item.value) for st in s.body]
            for i, st in enumerate(body):
                host.line, host.text = st.lineno, host.src.text(st)
                with host.live_as(rest[i + 1] | after):
                    host.statement(st)

    def _structure_unknown(self, s: ast.For) -> list:
        """A loop over a dict, compiled before the structure of the arguments is known (the
        code for arrays): an array has no ``.items()``, and this code raises if it runs;
        the code for a dict argument is compiled at the call, from its structure."""
        self.raise_at_run_time(s, "srcgrad compiles a loop over a dict argument for a "
                                "differentiated (wrt) argument only")
        return []

    def structure_unknown_assign(self, target: ast.Tuple | ast.List, value: Var) -> None:
        """``*rest, last = params`` compiled before the structure of ``params`` is known:
        the code for a list or tuple argument is compiled at the call, from its structure."""
        host = self.host
        self.raise_at_run_time(target, "srcgrad compiles starred unpacking of a list or "
                                "tuple argument for a differentiated (wrt) argument only")
        for n in ast.walk(target):
            if isinstance(n, ast.Name):
                host.scope[n.id] = value             # never read: the code raised before

    def raise_at_run_time(self, node: ast.AST, message: str) -> None:
        host = self.host
        raise_ = ast.Raise(ast.Call(ast.Name("NotCompiled", ast.Load()), [ast.Constant(message)],
                                    []), None)
        for n in ast.walk(raise_):
            ast.copy_location(n, node)
        host.emit(Stmt(None, "effect", params={"defines": {"NotCompiled": NotCompiled}},
                       expr=raise_, uses=()))

    def _fold_indices(self, st: ast.stmt, name: str, value: int) -> ast.stmt:
        """A copy of ``st`` in which an index of a structure computed from the loop
        variable (``layers[i + 1]``) is the constant it is in this copy of the body."""
        host = self.host
        st = copy.deepcopy(st)
        for n in walk([st]):
            if isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name) and \
                    isinstance(host.scope.get(n.value.id), (Tree, Pack)) and \
                    name in read([n.slice]):
                key = self._known_int(n.slice)
                if key is not None:
                    n.slice = ast.copy_location(ast.Constant(key), n.slice)
        return st

    def _sequence(self, node: ast.expr) -> tuple[list, bool] | None:
        """The items of an iterable known when compiling, and whether one of them is a
        structure (a tuple or tree, which a loop counter cannot index)."""
        host = self.host
        found = itertools_items(host, node, self._sequence, self._known_int, _UNROLL_LIMIT)
        if found is not None:
            return found
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                node.func.id not in host.scope:
            return self._call_sequence(node)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr in ("keys", "values", "items") and not node.args:
            base = host.statics.peek(node.func.value)
            if isinstance(base, Tree) and base.kind == "dict":
                return self._dict_items(base, node.func.attr, node)
            return None
        value = host.statics.peek(node)
        if isinstance(value, Tree) and value.kind == "dict":
            return self._dict_items(value, "keys", node)
        if isinstance(value, Tree):
            items = list(value.children.values())
        elif isinstance(value, Pack):
            items = list(value.items)
        else:
            return None
        return items, any(isinstance(v, (Tree, Pack)) for v in items)

    def _call_sequence(self, node: ast.Call) -> tuple[list, bool] | None:
        if has_starred(node):                     # zip(*pairs) of a known structure
            with contextlib.suppress(CompileError):
                node = expand(self.host, node, None) or node
        name, args = node.func.id, node.args
        if has_starred(node):
            return None
        if name == "range" and not node.keywords and 1 <= len(args) <= 3:
            bounds = [self._known_int(a) for a in args]
            if any(b is None for b in bounds) or (len(bounds) == 3 and bounds[2] == 0):
                return None
            steps = range(*bounds)
            if len(steps) > _UNROLL_LIMIT:
                return None
            return [Const(i) for i in steps], False
        if name == "enumerate" and 1 <= len(args) <= 2 and all(
                k.arg == "start" for k in node.keywords) and len(args) + len(node.keywords) <= 2:
            inner = self._sequence(args[0])
            start = args[1] if len(args) == 2 else node.keywords[0].value if node.keywords \
                else ast.Constant(0)
            first = self._known_int(start)
            if inner is None or first is None:
                return None
            return [Pack([Const(first + i), v]) for i, v in enumerate(inner[0])], inner[1]
        if name == "zip" and args and not node.keywords:
            parts = [self._sequence(a) for a in args]
            if any(p is None for p in parts):
                return None
            n = min(len(p[0]) for p in parts)
            return ([Pack([p[0][i] for p in parts]) for i in range(n)],
                    any(p[1] for p in parts))
        if name == "reversed" and len(args) == 1 and not node.keywords:
            inner = self._sequence(args[0])
            return None if inner is None else (inner[0][::-1], inner[1])
        if name == "sorted" and len(args) == 1 and not node.keywords:
            return self._sorted_dict(args[0])
        return None

    def _sorted_dict(self, node: ast.expr) -> tuple[list, bool] | None:
        """``sorted(d)``, ``sorted(d.keys())`` or ``sorted(d.items())`` of a dict argument."""
        host = self.host
        kind = "keys"
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr in ("keys", "items") and not node.args and not node.keywords:
            kind, node = node.func.attr, node.func.value
        tree = host.statics.peek(node)
        if not (isinstance(tree, Tree) and tree.kind == "dict"):
            return None
        try:
            keys = sorted(tree.children)
        except TypeError:
            return None
        if kind == "keys":
            return [Const(k) for k in keys], True
        return [Pack([Const(k), tree.children[k]]) for k in keys], True

    def _dict_items(self, tree: Tree, kind: str, node: ast.AST) -> tuple[list, bool]:
        """The keys, values or items of a dict in insertion order: a dict the function built,
        or a dict argument (whose order the compile cache keys on)."""
        if not isinstance(tree, Local) and getattr(tree, "order", None) is None:
            raise self._unordered(node)
        keys = ordered_keys(tree)
        if kind == "keys":
            return [Const(k) for k in keys], True
        if kind == "values":
            return [tree.children[k] for k in keys], True
        return [Pack([Const(k), tree.children[k]]) for k in keys], True

    def _unordered(self, node: ast.AST) -> Exception:
        host = self.host
        return host.error("a loop over a dict argument runs in its insertion order, which "
                          "srcgrad does not follow (it orders pytree keys); iterate "
                          "sorted(d), sorted(d.keys()) or sorted(d.items())", node)

    def known_int(self, node: ast.expr) -> int | None:
        return self._known_int(node)

    def _known_int(self, node: ast.expr) -> int | None:
        """An integer known when compiling: a constant, a name bound to one, ``len`` of a
        structure, and sums, differences and products of those."""
        host = self.host
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return node.value
        if isinstance(node, ast.Attribute):             # cfg.n_layers of an argument object
            value = host.objects.settled(node)
            return value if type(value) is int else None
        if isinstance(node, ast.Name):
            value = host.scope.get(node.id)
            return value.value if isinstance(value, Const) and type(value.value) is int \
                else None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                node.func.id == "len" and node.func.id not in host.scope and \
                len(node.args) == 1 and not node.keywords:
            value = host.statics.peek(node.args[0])
            if isinstance(value, Tree):
                return len(value.children)
            return len(value.items) if isinstance(value, Pack) else None
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            inner = self._known_int(node.operand)
            return None if inner is None else -inner
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult)):
            a, b = self._known_int(node.left), self._known_int(node.right)
            if a is None or b is None:
                return None
            return a + b if isinstance(node.op, ast.Add) else a - b if isinstance(
                node.op, ast.Sub) else a * b
        return None

    def _indexes_structure(self, s: ast.For) -> bool:
        """Whether the body indexes, by the loop variable, a structure a counter cannot
        index at run time (a pytree or literal holding tuples or trees, or a dict)."""
        host = self.host
        targets = {n.id for n in ast.walk(s.target) if isinstance(n, ast.Name)}
        if any(isinstance(host.scope.get(n), Local) for n in assigned(s.body)):
            return True                    # a dict changed by the body: keys stay known
        grown = True
        while grown:                       # name = f'W{i}'; params[name]: read through names
            grown = False
            for n in walk(s.body):
                if isinstance(n, ast.Assign) and read([n.value]) & targets and \
                        not assigned([n]) <= targets:
                    targets |= assigned([n])
                    grown = True
        for n in walk(s.body):
            if isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name) and \
                    read([n.slice]) & targets:
                value = host.scope.get(n.value.id)
                if isinstance(value, Tree) and (value.kind == "dict" or not all(
                        isinstance(v, Var) for v in value.children.values())):
                    return True
                if isinstance(value, Pack) and any(isinstance(v, (Tree, Pack))
                                                   for v in value.items):
                    return True
        return False

    # ----------------------------------------------------------------- run-time loops
    def hoist_iterable(self, node: ast.expr, rebound: set[str] = frozenset()) -> ast.expr:
        """The iterable evaluated once, before the loop, as Python does: anything but a name
        or ``range``/``enumerate``/``zip``/``reversed`` of such is bound to a temporary, and so
        is a name the loop binds anew (``for r in x: x = x + r`` iterates the first ``x``)."""
        host = self.host
        if isinstance(node, ast.Name) and node.id not in rebound:
            return node
        if isinstance(node, ast.Call) and has_starred(node):     # zip(*[xs, ys])
            with contextlib.suppress(CompileError):
                node = expand(host, node, None) or node
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                node.func.id == "enumerate" and len(node.args) == 1 and \
                [k.arg for k in node.keywords] == ["start"]:
            node = ast.copy_location(ast.Call(node.func, [node.args[0], node.keywords[0].value],
                                              []), node)         # enumerate(xs, start=1)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                node.func.id in ("range", "enumerate", "zip", "reversed") and not node.keywords:
            if node.func.id == "range":
                return node
            new = copy.copy(node)
            new.args = [a if isinstance(a, (ast.Constant, ast.Starred)) else
                        self.hoist_iterable(a, rebound)
                        for a in node.args]          # enumerate(xs, 1): a constant start
            return new
        name = host.fresh_internal("sequence")
        bind = ast.Assign([ast.Name(name, ast.Store())], node)
        for n in ast.walk(bind):
            ast.copy_location(n, node)
        host.statement(bind)
        return ast.copy_location(ast.Name(name, ast.Load()), node)

    def binding(self, s: ast.For, counter: str) -> tuple[list[ast.stmt], Any]:
        """Statements that bind the loop target from the counter, and the trip count."""
        bind, length = target_binding(s, counter)
        for node in counted(length):
            check_indexed(self.host, node, s)
        return [bind], self._trip(length, s)

    def _trip(self, length: Any, node: ast.AST) -> Var:
        """The number of iterations, computed before the loop as a static value."""
        host = self.host
        expr = trip_expr(length)
        for n in ast.walk(expr):
            ast.copy_location(n, node)
        return host.statics.static_expr(expr, hint="trips")


def rebound(nodes: list[ast.AST]) -> set[str]:
    """Names bound anew (``x = ...``, a ``for`` target), not written in place (``x += v``,
    ``x[i] = v``: iterating an array sees those writes, as NumPy's iterator does)."""
    aug = {id(n.target) for n in walk(nodes) if isinstance(n, ast.AugAssign)}
    return {n.id for n in walk(nodes)
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and id(n) not in aug}


def _dict_loop(node: ast.expr) -> bool:
    """Whether an iterable reads a dict (``d.items()``, ``sorted(d)``), perhaps inside
    ``enumerate``, ``zip`` or ``reversed``."""
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    if isinstance(func, ast.Attribute):
        return func.attr in ("items", "keys", "values") and not node.args
    if isinstance(func, ast.Name) and func.id in ("enumerate", "zip", "reversed"):
        return any(_dict_loop(a) for a in node.args)
    return isinstance(func, ast.Name) and func.id == "sorted" and len(node.args) == 1 and (
        isinstance(node.args[0], ast.Name) or _dict_loop(node.args[0]))
