"""The statements of a loop body, checked and respelled for a numba loop kernel.

:class:`Body` walks straight-line generated code (assignments, ``+=``, comments), infers
the shape, dtype and kind (:data:`~srcgrad.codegen.backends.numba.loop_sites.Fact`) of every value
from
those of its inputs, and rewrites what numba does not compile into what it does, for the
shapes it knows: ``np.shape(x)`` becomes the constant tuple, ``unbroadcast`` and
``match_input`` of a value already of the right shape become the value, and
``matmul_lhs_grad``/``matmul_rhs_grad`` become ``np.outer``, ``g @ a`` or ``a.T @ g``.
Anything else (another helper, a slice, a 0-d array, a dtype other than float64 and bool)
raises :class:`Refused`, and the loop keeps its generic code.  The inferred facts are
checked against those the first call saw (:meth:`Body.check`), so that an inference that
went wrong refuses rather than compiles.
"""

from __future__ import annotations

import ast
import copy

import numpy as np

from srcgrad.codegen.backends.numba.loop_grads import (
    BOOL,
    F8,
    I8,
    Refused,
    full,
    helper,
    np_call,
    of,
    reduce_axis,
    scalar,
    transposed,
)
from srcgrad.codegen.backends.numba.loop_sites import Fact
from srcgrad.codegen.common.markers import is_comment
from srcgrad.runtime.rules.core import scatter_add
from srcgrad.runtime.rules.operators import operation

__all__ = ["Body", "Refused", "is_comment", "ADD_OUTER", "F8", "BOOL", "I8"]

_SCATTER = scatter_add.__name__
_ARITH = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow)
_COMPARE = (ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Eq, ast.NotEq)
_scalar, _of, _np_call = scalar, of, np_call


ADD_OUTER = '''@njit(cache=True, error_model='numpy')
def {name}(out, a, b):
    """``out += np.outer(a, b)``, in place and with no temporary."""
    for i in range(a.shape[0]):
        a_i = a[i]
        for j in range(b.shape[0]):
            out[i, j] += a_i * b[j]'''
"""The source of the in-place outer product that ``Body`` calls (``name``: its name)."""


def _scatter(node: ast.expr) -> bool:
    """Whether ``node`` is ``scatter_add(name, index, g)`` (``name[index] += g``)."""
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id == _SCATTER and len(node.args) == 3 and not node.keywords
            and isinstance(node.args[0], ast.Name))


class Body:
    """Facts of the names of one kernel, as its statements run; ``shapes``: names bound to
    constant shape tuples (``x_shape = np.shape(x)``), folded into their uses; ``outer``:
    the name of the kernel that adds an outer product in place (:data:`ADD_OUTER`), which
    ``d += np.outer(a, b)`` calls (``outer_used`` says whether one did)."""

    def __init__(self, env: dict[str, Fact], outer: str | None = None) -> None:
        self.outer, self.outer_used = outer, False
        for name, fact in env.items():
            self._allowed(fact, name)
        self.env = dict(env)
        self.shapes: dict[str, tuple[int, ...]] = {}
        self.indices: dict[str, ast.Tuple] = {}
        self.assigned: set[str] = set()

    @staticmethod
    def _allowed(fact: Fact | None, what: str) -> Fact:
        if fact is None:
            raise Refused(f"no single shape for {what}")
        shape, dtype, kind = fact
        if kind == "array" and (not shape or dtype not in (F8, BOOL)):
            raise Refused(f"{what} is a {len(shape)}-d {dtype} array")
        if kind == "scalar" and dtype not in (F8, BOOL):
            raise Refused(f"{what} is a {dtype} scalar")
        return fact

    # ----------------------------------------------------------------------- statements
    def statements(self, body: list[ast.stmt]) -> list[ast.stmt]:
        """``body`` respelled; shape statements dropped (their tuples are folded)."""
        out = []
        for st in body:
            if is_comment(st):
                out.append(st)
            elif isinstance(st, ast.Assign) and len(st.targets) == 1 \
                    and isinstance(st.targets[0], ast.Name):
                name = st.targets[0].id
                if _np_call(st.value) is np.shape and len(st.value.args) == 1:
                    self.shapes[name] = self.shape_of(st.value)
                    continue
                if isinstance(st.value, ast.Tuple) and name not in self.env:
                    self.indices[name] = self._index(st.value)[0]     # index = (t, 0)
                    continue
                if _scatter(st.value):           # d_x = scatter_add(d_x, t, g): d_x[t] += g
                    into, index, value = st.value.args
                    target = ast.Subscript(copy.deepcopy(into), copy.deepcopy(index), ast.Store())
                    out.append(self._update(ast.AugAssign(target, ast.Add(), value)))
                    st = ast.Assign([st.targets[0]], into, lineno=0)
                value, fact = self.expr(st.value)
                self.env[name] = self._allowed(fact, name)
                self.assigned.add(name)
                out.append(ast.Assign([ast.Name(name, ast.Store())], value, lineno=0))
            elif isinstance(st, ast.AugAssign) and isinstance(st.op, _ARITH[:3]):
                out.append(self._update(st))
            else:
                raise Refused(f"a statement a loop kernel does not run: {ast.unparse(st)}")
        return out

    def _update(self, st: ast.AugAssign) -> ast.stmt:
        """``d_w += g`` (in place for an array) or ``d_x[t] += g``: the value must already
        have the target's shape, which the update keeps."""
        value, fact = self.expr(st.value)
        target = st.target
        if isinstance(target, ast.Name) and target.id in self.assigned:
            have = self.env[target.id]
        elif isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name) \
                and target.value.id in self.assigned:
            have = self._item(self.env[target.value.id], target.slice)
            target = ast.Subscript(ast.Name(target.value.id, ast.Load()),
                                   self._index(target.slice)[0], ast.Store())
        else:
            raise Refused(f"an update of a value the adjoint does not own: {ast.unparse(st)}")
        if have[0] != np.broadcast_shapes(have[0], fact[0]) or have[1] != F8:
            raise Refused(f"an update that changes its target: {ast.unparse(st)}")
        if self.outer and isinstance(st.op, ast.Add) and isinstance(target, ast.Name) \
                and _np_call(value) is np.outer and fact[0] == have[0]:
            self.outer_used = True                 # d_w += np.outer(g, h), no temporary
            call = ast.Call(ast.Name(self.outer, ast.Load()),
                            [ast.Name(target.id, ast.Load()), *value.args], [])
            return ast.Expr(call)
        return ast.AugAssign(copy.deepcopy(target), st.op, value, lineno=0)

    def check(self, seen: dict[str, Fact], names: set[str]) -> None:
        """Every name of ``names`` has the fact the first call saw, in every iteration (a
        float for a float64 0-d array, as ``unbroadcast`` to ``()`` makes)."""
        for name in sorted(names):
            have = self.env.get(name)
            if have == _scalar(F8) and seen.get(name) == ((), F8, "array"):
                continue              # a 0-d array of the generic code: a float in numba
            if seen.get(name) != have:
                raise Refused(f"{name}: inferred {self.env.get(name)}, seen {seen.get(name)}")

    # ---------------------------------------------------------------------- expressions
    def shape_of(self, node: ast.expr) -> tuple[int, ...]:
        """A constant shape: a tuple of ints, a folded name, or ``np.shape(x)``."""
        if isinstance(node, ast.Name) and node.id in self.shapes:
            return self.shapes[node.id]
        if _np_call(node) is np.shape and len(node.args) == 1 and not node.keywords:
            return self.expr(node.args[0])[1][0]
        if isinstance(node, ast.Tuple) and all(isinstance(e, ast.Constant) and type(e.value)
                                               is int for e in node.elts):
            return tuple(e.value for e in node.elts)
        raise Refused(f"not a constant shape: {ast.unparse(node)}")

    def expr(self, node: ast.expr) -> tuple[ast.expr, Fact]:
        """The expression respelled for numba, and its value's fact."""
        if isinstance(node, ast.Constant):
            kind = type(node.value)
            if kind not in (float, int, bool):
                raise Refused(f"a constant {node.value!r}")
            return node, _scalar(F8 if kind is float else BOOL if kind is bool else I8)
        if isinstance(node, ast.Name):
            if node.id not in self.env:
                raise Refused(f"{node.id} has no known shape")
            return ast.Name(node.id, ast.Load()), self.env[node.id]
        if isinstance(node, ast.BinOp):
            return self._binop(node)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            value, fact = self.expr(node.operand)
            if fact[1] == BOOL:
                raise Refused("the negative of a bool")
            return ast.UnaryOp(ast.USub(), value), fact
        if isinstance(node, ast.Compare) and len(node.ops) == 1 \
                and isinstance(node.ops[0], _COMPARE):
            (left, a), (right, b) = self.expr(node.left), self.expr(node.comparators[0])
            return (ast.Compare(left, node.ops, [right]),
                    _of(np.broadcast_shapes(a[0], b[0]), BOOL))
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
            value, fact = self.expr(node.value)
            index, _ = self._index(node.slice)
            return ast.Subscript(value, index, ast.Load()), self._item(fact, node.slice)
        if isinstance(node, ast.Attribute) and node.attr == "T":
            value, fact = self.expr(node.value)
            if fact[2] != "array" or len(fact[0]) != 2:
                raise Refused("a transpose of other than a matrix")
            return ast.Attribute(value, "T", ast.Load()), (fact[0][::-1], fact[1], "array")
        if isinstance(node, ast.Call):
            return self._call(node)
        raise Refused(f"an expression a loop kernel does not run: {ast.unparse(node)}")

    def _index(self, node: ast.expr) -> tuple[ast.expr, int]:
        """An index of ints (``t`` or ``t, 0``) and how many axes it takes."""
        if isinstance(node, ast.Name) and node.id in self.indices:
            node = self.indices[node.id]
        items = node.elts if isinstance(node, ast.Tuple) else [node]
        spelled = []
        for item in items:
            value, fact = self.expr(item)
            if fact[2] != "int":
                raise Refused(f"an index other than an int: {ast.unparse(node)}")
            spelled.append(value)
        if len(spelled) == 1:
            return spelled[0], 1
        return ast.Tuple(spelled, ast.Load()), len(spelled)

    def _item(self, fact: Fact, index: ast.expr) -> Fact:
        _, taken = self._index(index)
        if fact[2] != "array" or len(fact[0]) < taken:
            raise Refused("an index into a scalar")
        return _of(fact[0][taken:], fact[1])

    def _binop(self, node: ast.BinOp) -> tuple[ast.expr, Fact]:
        (left, a), (right, b) = self.expr(node.left), self.expr(node.right)
        out = ast.BinOp(left, node.op, right)
        if isinstance(node.op, ast.MatMult):
            return out, self._matmul(a, b)
        if not isinstance(node.op, _ARITH):
            raise Refused(f"the operator {type(node.op).__name__}")
        if "array" not in (a[2], b[2]) and isinstance(node.op, (ast.Div, ast.Pow)) and not (
                isinstance(node.op, ast.Div) and isinstance(right, ast.Constant)
                and right.value != 0):                 # a size folded into a number, say
            raise Refused("a division or power of two numbers (Python's may raise where the "
                          "kernel's gives inf or nan)")
        if a[2] == b[2] == "int":
            if isinstance(node.op, ast.Pow):
                raise Refused("an int power")
            return out, _scalar(F8) if isinstance(node.op, ast.Div) else a
        if BOOL in (a[1], b[1]) and (a[1] == b[1] or not isinstance(node.op, ast.Mult)):
            raise Refused("arithmetic on bools")
        return out, _of(np.broadcast_shapes(a[0], b[0]), F8)

    @staticmethod
    def _matmul(a: Fact, b: Fact) -> Fact:
        (sa, da, _), (sb, db, _) = a, b
        if da != F8 or db != F8 or not 1 <= len(sa) <= 2 or not 1 <= len(sb) <= 2 \
                or sa[-1] != sb[0]:
            raise Refused(f"a matrix product of {sa} and {sb}")
        return _of(sa[:-1] + sb[1:], F8)

    def _call(self, node: ast.Call) -> tuple[ast.expr, Fact]:
        func = _np_call(node)
        if func is None:
            return self._helper(node)
        name = node.func.attr
        if func in (np.sum, np.mean) and (node.keywords or len(node.args) == 2):
            return self._reduce(node, func is np.mean)
        if func is np.transpose and (len(node.args) == 1 or len(node.args) == 2 and isinstance(
                node.args[1], ast.Constant) and node.args[1].value is None) and not node.keywords:
            return transposed(*self.expr(node.args[0]))
        if node.keywords:
            raise Refused(f"np.{name} with keywords")
        if func is np.full and len(node.args) == 2:
            shape = self.shape_of(node.args[0])
            value, fact = self.expr(node.args[1])
            if fact[2] != "scalar" or fact[1] != F8:
                raise Refused("np.full of other than a float")
            return full(shape, value), _of(shape, F8)
        parts = [self.expr(a) for a in node.args]
        args = [p[0] for p in parts]
        facts = [p[1] for p in parts]
        call = ast.Call(ast.Attribute(ast.Name("np", ast.Load()), name, ast.Load()), args, [])
        prim = operation(func)
        if prim is not None and prim.numba_arrays and len(args) == func.nin:   # np.exp(x)
            return call, _of(np.broadcast_shapes(*(f[0] for f in facts)), F8)
        if func is np.where and len(args) == 3 and facts[0][1] == BOOL:
            shape = np.broadcast_shapes(*(f[0] for f in facts))
            if not shape:             # numba's np.where of numbers is a 0-d array
                return ast.IfExp(args[0], args[1], args[2]), _scalar(F8)
            return call, _of(shape, F8)
        if func in (np.sum, np.mean) and len(args) == 1 and facts[0][1] == F8 \
                and facts[0][2] == "array":
            return call, _scalar(F8)
        if func is np.outer and len(args) == 2 and all(f[2] == "array" and len(f[0]) == 1
                                                      for f in facts):
            return call, (facts[0][0] + facts[1][0], F8, "array")
        if func is np.dot and len(args) == 2:
            return call, self._matmul(*facts)
        raise Refused(f"np.{name} with these arguments")

    def _reduce(self, node: ast.Call, mean: bool) -> tuple[ast.expr, Fact]:
        """``np.sum(x, axis=k)`` or ``np.mean(x, k)``: one constant axis, no other option."""
        kw = {k.arg: k.value for k in node.keywords}
        if len(node.args) + len(kw) != 2 or len(node.args) == 2 and kw or set(kw) - {"axis"}:
            raise Refused(f"a reduction with these arguments: {ast.unparse(node)}")
        axis = node.args[1] if len(node.args) == 2 else kw["axis"]
        return reduce_axis(mean, *self.expr(node.args[0]), axis)

    def _helper(self, node: ast.Call) -> tuple[ast.expr, Fact]:
        """The generated code's helpers, spelled for the shapes they are called with."""
        return helper(node, self.expr, self.shape_of)

    def names_read(self, body: list[ast.stmt]) -> set[str]:
        """The names ``body`` reads before (or without) assigning them."""
        out: set[str] = set()
        bound: set[str] = set()
        for st in body:
            if is_comment(st):
                continue
            value = st.value if isinstance(st, (ast.Assign, ast.AugAssign, ast.Expr)) else st
            loads = {n.id for n in ast.walk(value) if isinstance(n, ast.Name)}
            if isinstance(st, ast.AugAssign):
                loads |= {n.id for n in ast.walk(st.target) if isinstance(n, ast.Name)}
            out |= loads - bound
            if isinstance(st, ast.Assign):
                bound |= {n.id for t in st.targets for n in ast.walk(t)
                          if isinstance(n, ast.Name)}
        return out

