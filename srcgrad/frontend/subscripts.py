"""Subscripts lowered: of arrays (a ``getitem`` primitive with a static index), of tuple and
list literals and of pytree arguments (a constant key selects an item when compiling), of a
list built at run time, and of the tuple a helper returned (an ``unpack``).

An index is a static parameter: a Python value when it is a literal (slices included), else a
static name computed by the code; an index that carries a gradient (``np.r_[a, b]``) is
refused.  Pytree arguments are read leaf by leaf (:meth:`Subscripts.tree`).
"""

from __future__ import annotations

import ast
from typing import Any, Protocol

from srcgrad.errors import CompileError
from srcgrad.frontend.dicts import Dicts
from srcgrad.frontend.lists import Lists
from srcgrad.frontend.primitives import Primitives
from srcgrad.frontend.randomness import Randomness
from srcgrad.frontend.statics import Statics, call_form
from srcgrad.frontend.tables import constructs as T
from srcgrad.frontend.user_calls import UserCalls
from srcgrad.ir import Const, Pack, Stmt, Tree, Var

__all__ = ["Subscripts"]

_CONTAINERS = (list, tuple, dict, str, bytes, range)
"""Constants whose subscript only selects (anything else may compute, as ``np.r_`` does)."""


class Host(Protocol):
    """What the lowering of subscripts reads of, and asks of, the lowerer that holds it.  The
    names in scope change as lowering goes on (a helper lowered in place swaps them): they are
    read here when needed, never kept."""

    scope: dict[str, Any]
    body: list[Stmt]
    source_names: dict[str, str]
    lists: Lists
    dicts: Dicts
    user_calls: UserCalls
    prims: Primitives
    statics: Statics
    randomness: Randomness             # the draws lowered

    def expr(self, node: ast.expr) -> Any: ...

    def emit(self, stmt: Stmt) -> Var: ...

    def fresh(self, base: str) -> str: ...

    def error(self, message: str, node: ast.AST) -> CompileError: ...

    def node_of_line(self) -> ast.AST: ...


class Subscripts:
    """The lowering of subscripts and slices, and the leaves of pytree arguments; the
    lowerer's ``subscripts``."""

    def __init__(self, host: Host) -> None:
        self.host = host

    def slice_value(self, node: ast.Slice) -> Any:
        """``a:b:c`` in a subscript of a list or tuple: a constant slice, or a static one."""
        host = self.host
        parts = [host.expr(p) if p is not None else Const(None)
                 for p in (node.lower, node.upper, node.step)]
        if all(isinstance(p, Const) for p in parts):
            return Const(slice(*(p.value for p in parts)))
        if any(host.prims.carries(p) for p in parts):
            raise host.error("a slice bound that carries a gradient is not compiled", node)
        return host.statics.static_expr(call_form(node), hint="part")

    def tree(self, root: Var, structure: Any, hint: str, path: tuple) -> Any:
        """Leaf variables for a pytree argument, each read once at the top of the function."""
        host = self.host
        if structure is None:
            name = host.fresh(hint)
            host.source_names[name] = hint
            return host.emit(Stmt(name, "leaf", args=[root], params={"path": path}))
        kind, keys, children = structure[:3]          # a dict's insertion order: [3]
        keys = keys if keys is not None else list(range(len(children)))
        out = {}
        for key, child in zip(keys, children):
            label = key if isinstance(key, str) and key.isidentifier() else f"{hint}_{key}"
            out[key] = self.tree(root, child, label, path + (key,))
        tree = Tree(kind, out)
        if kind == "dict" and len(structure) > 3:
            tree.order = list(structure[3])    # the compile cache keys on it: loops follow it
        return tree

    def tree_pack(self, tree: Tree) -> Pack:
        """A list or tuple argument used whole where a value is expected (``np.polyval(c,
        x)``, ``sum(lst, start)``, ``V @ c``): the literal of its leaves, which NumPy reads
        as ``np.asarray`` of it.  A dict has no array value: refused."""
        host = self.host
        if tree.kind == "dict":
            raise host.error("a dict argument is used whole as a value here; srcgrad compiles "
                             "reads of its items (p['k']) and loops over p.values()/p.items()",
                             host.node_of_line())
        return Pack([self.tree_pack(v) if isinstance(v, Tree) else v
                     for v in tree.children.values()], is_list=tree.kind is list)

    def read(self, node: ast.Subscript) -> Any:
        host = self.host
        base = host.expr(node.value)
        if isinstance(base, Tree) and base.kind == "dict":
            return host.dicts.read(base, node)
        if isinstance(base, Tree):
            key = host.expr(node.slice)
            items = list(base.children.values())
            if isinstance(key, Const) and base.kind != "dict":   # a list or tuple argument
                if isinstance(key.value, slice):
                    return Pack(items[key.value], base.kind is list)
                if isinstance(key.value, int) and -len(items) <= key.value < len(items):
                    return items[key.value]
            if all(isinstance(v, Var) for v in items):
                return host.lists.item(Pack(items, is_list=True), node)   # xs[t] in a loop
            raise host.error("this list or tuple holds lists, tuples or dicts, and is indexed "
                             "by a value known only when the code runs; srcgrad compiles "
                             "such an index when it is a constant, or the index of a loop it "
                             "unrolls (a range of known length)", node.slice)
        if isinstance(base, Pack):
            key = _literal_slice(node.slice) or host.expr(node.slice)    # pairs[:], xs[1:]
            if isinstance(key, Const) and isinstance(key.value, int):
                if not -len(base.items) <= key.value < len(base.items):
                    raise host.error(f"index {key.value} is out of range for "
                                     f"{len(base.items)} items", node.slice)
                return base.items[key.value]
            if isinstance(key, Const) and isinstance(key.value, slice):
                return Pack(base.items[key.value], base.is_list)
            return host.lists.item(base, node)
        if host.lists.is_runtime_list(base):
            return host.lists.item(base, node)
        items = host.user_calls.tuple_items(base)
        if items is not None:                      # t = helper(x); t[0]
            try:
                key = Const(ast.literal_eval(node.slice))
            except (ValueError, SyntaxError, TypeError):
                key = host.expr(node.slice)
            if not (isinstance(key, Const) and type(key.value) is int
                    and -items <= key.value < items):
                raise host.error("a tuple returned by a helper is indexed by a constant in "
                                 "range here", node.slice)
            part = host.fresh(f"{base.name}_{key.value % items}")
            return host.emit(Stmt(part, "unpack", args=[base],
                                  params={"index": key.value % items}))
        if isinstance(base, Const) and not isinstance(base.value, _CONTAINERS) and \
                self.key_carries(node.slice):
            raise host.error(f"{ast.unparse(node.value)}[...] of values that carry a gradient "
                             "is not compiled (use np.concatenate or np.stack)", node)
        if host.statics.is_static(base):
            return host.statics.static_expr(node)
        index = host.statics.index_param(node.slice)
        return host.prims.prim(T.lookup("getitem"), [base], {"index": index},
                               f"{base.name if isinstance(base, Var) else 'item'}_at", node)

    def key_carries(self, key: ast.expr) -> bool:
        """Whether an index expression may carry a gradient (``np.r_[a, b]``)."""
        host = self.host
        mark, drawn = len(host.body), dict(host.randomness.lowered)
        try:
            parts = key.elts if isinstance(key, ast.Tuple) else [key]
            return any(host.prims.carries(host.expr(p)) for p in parts
                       if not isinstance(p, ast.Slice))
        except Exception:  # noqa: BLE001 - judged by the names it reads instead
            return any(host.prims.carries(host.scope[n.id]) for n in ast.walk(key)
                       if isinstance(n, ast.Name) and n.id in host.scope)
        finally:
            del host.body[mark:]
            host.randomness.lowered = drawn         # the draws it lowered: dropped too


def _literal_slice(node: ast.expr) -> Const | None:
    """``xs[a:b:c]`` whose bounds are int literals (or left out): the slice, as a constant."""
    if not isinstance(node, ast.Slice):
        return None
    parts = []
    for part in (node.lower, node.upper, node.step):
        if part is None:
            parts.append(None)
        elif isinstance(part, ast.Constant) and type(part.value) is int:
            parts.append(part.value)
        elif isinstance(part, ast.UnaryOp) and isinstance(part.op, ast.USub) and \
                isinstance(part.operand, ast.Constant) and type(part.operand.value) is int:
            parts.append(-part.operand.value)
        else:
            return None
    return Const(slice(*parts))
