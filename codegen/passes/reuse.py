"""Buffer reuse for the NumPy backend's shape-specialised modules.

Plain NumPy allocates one array per operation.  Where liveness proves a temporary dead, an
elementwise statement writes into its buffer instead (``y_2 = np.exp(y_1, out=y_1)``,
``d_x += t``, ``z -= m``), as a person writing in-place NumPy would: fewer allocations, a
smaller working set.  Only the main function's top-level, straight-line statements are
rewritten, and a buffer only when it is

- *fresh*: made by an expression that always returns a new array (an operator, a ufunc,
  ``np.where``, a reduction, ``np.full``...) of ndim >= 1; never a view, a parameter or a
  helper's result (``unbroadcast`` may return its argument itself);
- *never aliased*: every read of the name consumes it (an operand of an operator or of a NumPy
  function with a new result, ``.shape``, a return), so no other name, container or closure
  sees the buffer;
- *dead*: no later statement reads it before it is bound again;
- *of the result's shape and dtype*, exactly (no broadcasting into it, no casting).

Shapes and dtypes come from ``facts`` (for a name bound once) and are carried through
elementwise operations by NumPy's own promotion rules.
"""

from __future__ import annotations

import ast
from itertools import chain
from typing import Any

import numpy as np

from srcgrad.codegen.passes.liveness import (
    NP,
    bound_names,
    escaped,
    live_after,
    makes_new,
    numpy_function,
    only_reads,
    params,
    reads,
    store_counts,
    tree_copy,
    ufunc,
)
from srcgrad.runtime.rules.operators import OPERATORS

__all__ = ["reuse_buffers"]

Info = tuple  # (shape, dtype): an np.dtype, or float / int / complex for a Python scalar

# Python's elementwise operators on arrays, as the ufuncs NumPy calls for them (not ``@``)
_ELEMENTWISE = {op: p.fn for op, p in OPERATORS.items() if p.fn.signature is None}
_MATMUL = OPERATORS[ast.MatMult].fn
_CREATE = frozenset({np.zeros, np.ones, np.full, np.empty})   # new arrays from a shape
_DYNAMIC = frozenset({"locals", "vars", "eval", "exec", "globals"})
_PURE_NODES = (ast.Name, ast.Constant, ast.BinOp, ast.UnaryOp, ast.Compare, ast.Call,
               ast.Attribute, ast.Subscript, ast.Slice, ast.Tuple, ast.keyword,
               ast.expr_context, ast.operator, ast.unaryop, ast.cmpop)


def reuse_buffers(fn: ast.FunctionDef, facts: dict) -> None:
    """Reuse dead temporaries' buffers in ``fn``'s top-level body, in place.

    ``facts`` maps a local name to ``(shape, dtype)`` (dtype ``float`` for a Python float);
    a name missing from it is unknown and never touched.  Nested functions and the bodies of
    compound statements are left as they are.
    """
    stores = store_counts(fn)
    if stores.get(NP) or any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
                              and n.func.id in _DYNAMIC for n in ast.walk(fn)):
        return
    fn.body = [tree_copy(st) for st in fn.body]   # generated code may share nodes between uses
    _Pass(fn, facts, stores).run()


class _Pass:
    """The walk over the top-level statements, with what is known before each."""

    def __init__(self, fn: ast.FunctionDef, facts: dict, stores: dict[str, int]) -> None:
        self.fn, self.facts, self.stores = fn, facts, stores
        self.escaped = escaped(fn)
        self.live = live_after(fn.body)
        self.env: dict[str, Info | None] = {}     # the current value's shape and dtype
        self.fresh: set[str] = set()               # names owning an unshared new array
        self.env.update((a, facts.get(a) if stores[a] == 1 else None) for a in params(fn))
        self.free: dict[Info, dict[str, None]] = {}   # owned buffers no longer read, by kind

    def run(self) -> None:
        body: list[ast.stmt] = []
        for i, st in enumerate(self.fn.body):
            update = self.binding(st)
            self.index, self.given = i, set()
            body.extend(self.rewrite(st))
            for name, info, fresh in update:
                self.env[name] = info
                (self.fresh.add if fresh else self.fresh.discard)(name)
            self.fresh -= self.given - {_assigned(st)}
            for name in {name for name, _, _ in update} | self.given:
                for names in self.free.values():
                    names.pop(name, None)              # the name holds another value now
            for name in (reads(st) | set(bound_names(st))) - self.live[i]:
                if name in self.fresh and name not in self.escaped and _array(self.env[name]):
                    self.free.setdefault(self.env[name], {})[name] = None   # its last read
        self.fn.body = body

    # ------------------------------------------------------------------ what is known
    def binding(self, st: ast.stmt) -> list[tuple[str, Info | None, bool]]:
        """The names ``st`` binds, with the shape and dtype of each and whether it is fresh."""
        name = _assigned(st)
        if name is not None:
            info = self.infer(st.value)
            if info is None and self.stores.get(name) == 1:
                info = self.facts.get(name)
            return [(name, info, _array(info) and self.makes_new(st.value))]
        if isinstance(st, ast.AugAssign) and isinstance(st.target, ast.Name):
            name = st.target.id                        # in place on an array: unchanged
            info = self.env.get(name)
            if _array(info):
                return [(name, info, name in self.fresh)]
            return [(name, None, False)]
        return [(n, None, False) for n in set(bound_names(st))]

    def infer(self, node: ast.expr) -> Info | None:
        """The shape and dtype of ``node``'s value, when NumPy's rules give them from what is
        known (names, constants, elementwise operations and ``np.where``)."""
        if isinstance(node, ast.Constant):
            if type(node.value) is bool:
                return (), np.dtype(bool)
            return ((), type(node.value)) if type(node.value) in (int, float, complex) else None
        if isinstance(node, ast.Name):
            return self.env.get(node.id)
        if numpy_function(node) is np.where and len(node.args) == 3 and not node.keywords:
            infos = [self.infer(a) for a in node.args]
            if None in infos:
                return None
            values = [d if isinstance(d, np.dtype) else d(0) for _, d in infos[1:]]
            return _broadcast(infos, np.result_type(*values))
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
            return _matmul(self.infer(node.left), self.infer(node.right))
        if isinstance(node, ast.Attribute) and node.attr == "T":   # a view: never fresh
            info = self.infer(node.value)
            return (info[0][::-1], info[1]) if _array(info) else None
        ops = _operands(node)
        if ops is None:
            return None
        func, args = ops
        infos = [self.infer(a) for a in args]
        if None in infos:
            return None
        if not isinstance(node, ast.Call) and not any(isinstance(d, np.dtype) for _, d in infos):
            kinds = {d for _, d in infos}           # Python numbers only: a Python number
            kind = complex if complex in kinds else float if float in kinds else int
            exact = isinstance(node, ast.UnaryOp) or isinstance(node, ast.BinOp) and not (
                isinstance(node.op, ast.Pow) or kind is int and isinstance(node.op, ast.Div))
            return ((), kind) if exact else None
        try:    # NumPy's loop resolution, Python scalars weak (NEP 50)
            dtype = func.resolve_dtypes(tuple(d for _, d in infos) + (None,))[-1]
        except TypeError:          # no loop for these dtypes (a UFuncTypeError, ...)
            return None
        return _broadcast(infos, dtype)

    def makes_new(self, node: ast.expr) -> bool:
        """Whether ``node`` always evaluates to a new array that shares no memory."""
        if _operands(node) is not None:
            return self.infer(node) is not None        # operands known: arrays or numbers
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
            return self.infer(node) is not None
        if numpy_function(node) in _CREATE:
            return all(k.arg not in (None, "like") for k in node.keywords)
        return (makes_new(node) and all(k.arg not in (None, "out") for k in node.keywords)
                and all(self.infer(a) is not None for a in node.args))

    # ------------------------------------------------------------------ the rewrite
    def rewrite(self, st: ast.stmt) -> list[ast.stmt]:
        """``st``, and before it the statements its hoisted parts became."""
        if _assigned(st) is not None or isinstance(st, ast.Return) and st.value is not None:
            top, scope = st.value, st.value
        elif isinstance(st, ast.AugAssign) and isinstance(st.target, ast.Name):
            top, scope = None, st
        else:
            return [st]
        self.scope, self.target = scope, _assigned(st)
        hoisted: list[ast.stmt] = []
        if _pure(st):
            st.value = _Hoist(self, top, hoisted).visit(st.value)
        if top is None:
            return [*hoisted, st]
        if (buffer := self.buffer(top, statement=st)) is None:
            return [*hoisted, st]
        self.given.add(buffer)  # ``target`` now owns it
        if self.target == buffer and _operand_at(top, buffer) == 0 and isinstance(top, ast.BinOp):
            new: ast.stmt = ast.AugAssign(ast.Name(buffer, ast.Store()), top.op, top.right)
        else:
            st.value = _out_call(top, buffer)
            new = st
        return [*hoisted, ast.copy_location(new, st)]

    def buffer(self, node: ast.expr, statement: ast.stmt | None = None) -> str | None:
        """A dead, owned buffer ``node`` may write its result into: one of its operands, or
        (for an assignment's whole value) a buffer no longer read."""
        ops = _operands(node)
        info = self.infer(node) if ops is not None else None
        if not _array(info):
            return None
        for k, arg in enumerate(ops[1]):
            if not (isinstance(arg, ast.Name) and self.owned(arg.id, info)
                    and self.only_operand(arg.id, node)):
                continue
            augmented = isinstance(node, ast.BinOp) and k == 0 and (
                statement is None or arg.id == self.target)      # ``b op= c``
            if augmented or _out_ok(node, self):
                return arg.id
        if statement is None or self.target is None or not _out_ok(node, self):
            return None
        used = {n.id for n in ast.walk(statement.value) if isinstance(n, ast.Name)}
        pool = self.free.get(info, {})       # the target's own, else the last one freed
        return next((n for n in chain([self.target], reversed(pool)) if n in pool
                     and n not in used and self.owned(n, info)), None)

    def owned(self, name: str, info: Info) -> bool:
        """Whether ``name`` owns a buffer of shape and dtype ``info`` that is dead after the
        current statement (an assignment to the name itself ends its value too)."""
        return (name in self.fresh and name not in self.escaped and name not in self.given
                and _array(self.env.get(name)) and self.env[name] == info
                and (name not in self.live[self.index] or name == self.target))

    def only_operand(self, name: str, node: ast.expr) -> bool:
        """Whether every mention of ``name`` in the statement is a direct operand of
        ``node`` (nothing else reads the buffer while it is written)."""
        mentions = sum(isinstance(n, ast.Name) and n.id == name for n in ast.walk(self.scope))
        direct = sum(isinstance(a, ast.Name) and a.id == name for a in _operands(node)[1])
        return mentions == direct


class _Hoist(ast.NodeTransformer):
    """Elementwise parts of a pure statement that can write into a dead operand's buffer,
    moved before it (in evaluation order) as in-place statements, leaving the buffer's name.
    Only an operand of an elementwise operation is hoisted: the buffer is then read into a
    new array, never kept (a subscript, an attribute or a tuple would keep a view of it)."""

    def __init__(self, reuse: _Pass, top: ast.expr | None, hoisted: list[ast.stmt]) -> None:
        self.reuse, self.top, self.hoisted = reuse, top, hoisted
        self.parents: list[ast.AST] = []

    def visit(self, node: ast.AST) -> ast.AST:
        self.parents.append(node)
        try:
            return super().visit(node)
        finally:
            self.parents.pop()

    def generic_visit(self, node: ast.AST) -> ast.AST:
        node = super().generic_visit(node)
        if node is self.top or not isinstance(node, ast.expr) or len(self.parents) < 2:
            return node
        operands = _operands(self.parents[-2])
        if operands is None or not any(a is node for a in operands[1]):
            return node
        if (buffer := self.reuse.buffer(node)) is None:
            return node
        if isinstance(node, ast.BinOp) and _operand_at(node, buffer) == 0:
            st: ast.stmt = ast.AugAssign(ast.Name(buffer, ast.Store()), node.op, node.right)
        else:
            st = ast.Expr(_out_call(node, buffer))
        self.hoisted.append(ast.copy_location(st, node))
        return ast.Name(buffer, ast.Load())


def _assigned(st: ast.stmt | None) -> str | None:
    """The name ``st`` assigns, for ``name = value``."""
    if (isinstance(st, ast.Assign) and len(st.targets) == 1
            and isinstance(st.targets[0], ast.Name)):
        return st.targets[0].id
    return None


def _out_ok(node: ast.expr, reuse: _Pass) -> bool:
    """Whether ``np.<ufunc>(..., out=b)`` computes exactly ``node``: ``a ** 2`` is
    ``np.square`` in NumPy, not ``np.power``, when the exponent is a scalar."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
        info = reuse.infer(node.right)
        return info is not None and info[0] != ()
    return True


def _operand_at(node: ast.expr, name: str) -> int:
    return next(k for k, a in enumerate(_operands(node)[1])
                if isinstance(a, ast.Name) and a.id == name)


def _out_call(node: ast.expr, buffer: str) -> ast.Call:
    """``node`` as a ufunc call writing into ``buffer``."""
    func, args = _operands(node)
    spelled = node.func if isinstance(node, ast.Call) else ast.Attribute(
        ast.Name(NP, ast.Load()), func.__name__, ast.Load())
    return ast.Call(spelled, list(args), [ast.keyword("out", ast.Name(buffer, ast.Load()))])


def _operands(node: ast.AST) -> tuple[Any, list[ast.expr]] | None:
    """The ufunc an elementwise node computes, and its operands."""
    if isinstance(node, ast.BinOp) and type(node.op) in _ELEMENTWISE:
        return _ELEMENTWISE[type(node.op)], [node.left, node.right]
    if isinstance(node, ast.UnaryOp) and type(node.op) in _ELEMENTWISE:
        return _ELEMENTWISE[type(node.op)], [node.operand]
    if (isinstance(node, ast.Compare) and len(node.ops) == 1
            and type(node.ops[0]) in _ELEMENTWISE):
        return _ELEMENTWISE[type(node.ops[0])], [node.left, node.comparators[0]]
    func = ufunc(node)
    if (func is not None and not node.keywords and len(node.args) == func.nin
            and not any(isinstance(a, ast.Starred) for a in node.args)):
        return func, list(node.args)
    return None


def _array(info: Info | None) -> bool:
    """Whether ``info`` describes an array of ndim >= 1 (a buffer, not a scalar)."""
    return info is not None and isinstance(info[1], np.dtype) and len(info[0]) >= 1


def _broadcast(infos: list[Info], dtype: Any) -> Info | None:
    try:
        return np.broadcast_shapes(*(s for s, _ in infos)), dtype
    except ValueError:
        return None


def _matmul(a: Info | None, b: Info | None) -> Info | None:
    """The shape and dtype of ``a @ b`` for arrays (NumPy's rules for 1-d operands)."""
    if not (a and b and isinstance(a[1], np.dtype) and isinstance(b[1], np.dtype)
            and a[0] and b[0]):
        return None
    (sa, da), (sb, db) = a, b
    left, right = (sa if len(sa) > 1 else (1, *sa)), (sb if len(sb) > 1 else (*sb, 1))
    if left[-1] != right[-2]:
        return None
    try:
        batch = np.broadcast_shapes(left[:-2], right[:-2])
        dtype = _MATMUL.resolve_dtypes((da, db, None))[-1]
    except (TypeError, ValueError):
        return None
    rows = (left[-2],) if len(sa) > 1 else ()           # a 1-d operand's axis goes
    columns = (right[-1],) if len(sb) > 1 else ()
    return (*batch, *rows, *columns), dtype


def _pure(st: ast.stmt) -> bool:
    """Whether evaluating ``st``'s value has no effect but its result (NumPy calls,
    operators, names, constants, indexing): its parts may then be computed in another order."""
    return all(isinstance(n, _PURE_NODES) and (not isinstance(n, ast.Call) or only_reads(n)
                                               or numpy_function(n) in _CREATE)
               for n in ast.walk(st.value))


# ---------------------------------------------------------------------- whole-function facts
