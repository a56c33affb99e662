"""The statements of a loop body, checked and respelled for a numba loop kernel.

:class:`Body` walks straight-line generated code (assignments, ``+=``, comments), infers
the shape, dtype and kind (:data:`~srcgrad.codegen.loop_sites.Fact`) of every value from
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

from srcgrad.codegen.loop_sites import Fact
from srcgrad.codegen.support import match_input
from srcgrad.runtime.primitives import unbroadcast
from srcgrad.runtime.rules.core import matmul_lhs_grad, matmul_rhs_grad, scatter_add

__all__ = ["Body", "Refused", "is_comment", "ADD_OUTER"]

F8, BOOL, I8 = np.dtype(np.float64), np.dtype(bool), np.dtype(np.int64)

_UNARY = frozenset({np.tanh, np.exp, np.log, np.sin, np.cos, np.tan, np.sqrt, np.absolute,
                    np.negative, np.sign, np.square, np.log1p, np.expm1, np.sinh, np.cosh,
                    np.arctan, np.arcsin, np.arccos, np.fabs, np.log2, np.log10})
_BINARY = frozenset({np.maximum, np.minimum, np.arctan2, np.hypot, np.add, np.subtract,
                     np.multiply, np.divide})
_UNBROADCAST, _MATCH, _SCATTER = unbroadcast.__name__, match_input.__name__, scatter_add.__name__
_LHS, _RHS = matmul_lhs_grad.fn.__name__, matmul_rhs_grad.fn.__name__   # primitives
_ARITH = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow)
_COMPARE = (ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Eq, ast.NotEq)


class Refused(Exception):
    """The loop cannot become a kernel (the reason is the message)."""


def is_comment(st: ast.stmt) -> bool:
    """Whether ``st`` is a comment marker of the generated code."""
    from srcgrad.codegen.primal import COMMENT
    return (isinstance(st, ast.Expr) and isinstance(st.value, ast.Call)
            and isinstance(st.value.func, ast.Name) and st.value.func.id == COMMENT)


def _scalar(dtype: np.dtype) -> Fact:
    return (), dtype, "int" if dtype == I8 else "scalar"


def _of(shape: tuple[int, ...], dtype: np.dtype) -> Fact:
    return (shape, dtype, "array") if shape else _scalar(dtype)


def _np_call(node: ast.expr) -> object | None:
    """NumPy's function ``np.name`` for a call ``np.name(...)``."""
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name) and node.func.value.id == "np"):
        return getattr(np, node.func.attr, None)
    return None


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
        """Every name of ``names`` has the fact the first call saw, in every iteration."""
        for name in sorted(names):
            if seen.get(name) != self.env.get(name):
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

    def _index(self, node: ast.expr) -> tuple[ast.expr, Fact]:
        value, fact = self.expr(node)
        if fact[2] != "int":
            raise Refused(f"an index other than an int: {ast.unparse(node)}")
        return value, fact

    def _item(self, fact: Fact, index: ast.expr) -> Fact:
        self._index(index)
        if fact[2] != "array":
            raise Refused("an index into a scalar")
        return _of(fact[0][1:], fact[1])

    def _binop(self, node: ast.BinOp) -> tuple[ast.expr, Fact]:
        (left, a), (right, b) = self.expr(node.left), self.expr(node.right)
        out = ast.BinOp(left, node.op, right)
        if isinstance(node.op, ast.MatMult):
            return out, self._matmul(a, b)
        if not isinstance(node.op, _ARITH):
            raise Refused(f"the operator {type(node.op).__name__}")
        if a[2] == b[2] == "int":
            if isinstance(node.op, (ast.Div, ast.Pow)):
                raise Refused("int division or power")
            return out, a
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
        if node.keywords:
            raise Refused(f"np.{name} with keywords")
        if func is np.full and len(node.args) == 2:
            shape = self.shape_of(node.args[0])
            value, fact = self.expr(node.args[1])
            if fact[2] != "scalar" or fact[1] != F8:
                raise Refused("np.full of other than a float")
            return self._full(shape, value), _of(shape, F8)
        parts = [self.expr(a) for a in node.args]
        args = [p[0] for p in parts]
        facts = [p[1] for p in parts]
        call = ast.Call(ast.Attribute(ast.Name("np", ast.Load()), name, ast.Load()), args, [])
        if func in _UNARY and len(args) == 1:
            return call, _of(facts[0][0], F8)
        if func in _BINARY and len(args) == 2:
            return call, _of(np.broadcast_shapes(facts[0][0], facts[1][0]), F8)
        if func is np.where and len(args) == 3 and facts[0][1] == BOOL:
            return call, _of(np.broadcast_shapes(*(f[0] for f in facts)), F8)
        if func is np.sum and len(args) == 1 and facts[0][1] == F8:
            return call, _scalar(F8)
        if func is np.outer and len(args) == 2 and all(f[2] == "array" and len(f[0]) == 1
                                                      for f in facts):
            return call, (facts[0][0] + facts[1][0], F8, "array")
        if func is np.dot and len(args) == 2:
            return call, self._matmul(*facts)
        raise Refused(f"np.{name} with these arguments")

    def _helper(self, node: ast.Call) -> tuple[ast.expr, Fact]:
        """The generated code's helpers, spelled for the shapes they are called with."""
        func = node.func.id if isinstance(node.func, ast.Name) else None
        kw = {k.arg: k.value for k in node.keywords}
        if func == _UNBROADCAST and len(node.args) == 2 and not kw:
            value, fact = self.expr(node.args[0])
            if fact[0] != self.shape_of(node.args[1]):
                raise Refused("an unbroadcast that sums")
            return value, fact
        if func == _MATCH and len(node.args) == 2 and not kw:
            (g, gf), (_, xf) = self.expr(node.args[0]), self.expr(node.args[1])
            if xf[1] != F8 or gf[1] != F8:
                raise Refused("a gradient of other than a float64")
            if gf[0] == xf[0]:
                return g, xf
            if not gf[0]:
                return self._full(xf[0], g), xf
            raise Refused("a gradient of another shape than its input")
        if func in (_LHS, _RHS) and len(node.args) == 2 \
                and set(kw) == {"a_shape" if func == _LHS else "b_shape"}:
            shape = self.shape_of(next(iter(kw.values())))
            (g, gf), (other, of) = self.expr(node.args[0]), self.expr(node.args[1])
            return self._matmul_grad(func == _LHS, g, gf, other, of, shape)
        raise Refused(f"a call a loop kernel does not run: {ast.unparse(node)}")

    @staticmethod
    def _full(shape: tuple[int, ...], value: ast.expr) -> ast.expr:
        if not shape:
            return value
        return ast.Call(ast.Attribute(ast.Name("np", ast.Load()), "full", ast.Load()),
                        [ast.Constant(shape), value], [])

    @staticmethod
    def _matmul_grad(lhs: bool, g: ast.expr, gf: Fact, other: ast.expr, of: Fact,
                     shape: tuple[int, ...]) -> tuple[ast.expr, Fact]:
        """The gradient of ``a @ b`` with respect to ``a`` (``lhs``; ``other`` is ``b``) or
        to ``b`` (``other`` is ``a``), of ``shape``, for matrices and vectors."""
        def t(e: ast.expr) -> ast.expr:
            return ast.Attribute(e, "T", ast.Load())

        def np_(name: str, *args: ast.expr) -> ast.expr:
            return ast.Call(ast.Attribute(ast.Name("np", ast.Load()), name, ast.Load()),
                            list(args), [])
        dims = (len(shape), len(of[0]), len(gf[0]))
        if gf[1] != F8 or of[1] != F8:
            raise Refused("a matrix product of other than float64")
        if lhs:       # a @ b: d_a from g and b
            spelled = {(2, 1, 1): lambda: np_(np.outer.__name__, g, other),
                       (2, 2, 2): lambda: ast.BinOp(g, ast.MatMult(), t(other)),
                       (1, 2, 1): lambda: ast.BinOp(other, ast.MatMult(), g)}
            result = {(2, 1, 1): gf[0] + of[0], (2, 2, 2): gf[0][:1] + of[0][:1],
                      (1, 2, 1): of[0][:1]}
        else:         # a @ b: d_b from g and a
            spelled = {(1, 2, 1): lambda: ast.BinOp(g, ast.MatMult(), other),
                       (2, 2, 2): lambda: ast.BinOp(t(other), ast.MatMult(), g),
                       (2, 1, 1): lambda: np_(np.outer.__name__, other, g)}
            result = {(1, 2, 1): of[0][1:], (2, 2, 2): of[0][1:] + gf[0][1:],
                      (2, 1, 1): of[0] + gf[0]}
        if dims not in spelled or result[dims] != shape:
            raise Refused(f"a matrix product's gradient of shape {shape}")
        return spelled[dims](), (shape, F8, "array")

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

