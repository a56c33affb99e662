"""The forward emitter: each primal statement followed by its tangent, as Python AST.

A value that depends on a differentiated input carries a tangent, named after it (``z`` and
``z_dot``).  A primitive's tangent comes from its forward rule in the shared rule table
(``Primitive.jvp``), called on symbolic values and printed, exactly as the reverse emitter
prints the reverse rules; broadcasting is done once, here.  Tuples carry a tuple of tangents,
lists a list of them (appended alongside).  A branch calls the jvp of the block that runs,
a loop calls its body's jvp each trip, carrying the tangents with the values, and a user
function's call calls its jvp: forward mode needs no tape, so the generated code is plain
code, which can itself be differentiated again.
"""

from __future__ import annotations

import ast
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from srcgrad.codegen.emit import forward_control as control
from srcgrad.codegen.emit.primal import Primal
from srcgrad.codegen.emit.symbolic import (
    Sym,
    SymbolicError,
    Tracer,
    assign,
    index_expr,
    numpy_path,
    operand_expr,
    to_expr,
)
from srcgrad.codegen.emit.symbolic import name_expr as _name
from srcgrad.codegen.emit.value_kinds import FLOAT, INT
from srcgrad.ir import Const, Function, Stmt, Var
from srcgrad.runtime.rules import tangents
from srcgrad.runtime.rules.constructors import float_result

__all__ = ["Forward"]

JvpName = Callable[[Any, frozenset, Any], str]   # (callee or block, active positions, label)


class _Result(Sym):
    """The result handed to a forward rule.  The rule's ``float_result(ans)`` (whether a
    gradient flows: 1.0 for floats) is folded to its number when the result's kind is known,
    else asked of its dtype alone, ``float_result(np.zeros((), np.asarray(ans).dtype))``: a
    helper call on the value itself, which carries a tangent, could not be differentiated
    again (the Hessian differentiates this code)."""

    __slots__ = ("kind",)

    def __init__(self, node: ast.expr, tracer: Tracer, kind: str | None) -> None:
        super().__init__(node, tracer)
        self.kind = kind

    @staticmethod
    def __srcgrad_helper__(wrapper: Any, args: tuple, kwargs: dict) -> Any:
        if wrapper is not float_result or len(args) != 1 or kwargs:
            return Sym.__srcgrad_helper__(wrapper, args, kwargs)
        ans = args[0]
        if ans.kind is not None:
            return 1.0 if ans.kind == FLOAT else 0.0
        path = ans.tracer.backend.path
        dtype = ast.Attribute(ast.Call(path(np.asarray), [ans.node], []), "dtype", ast.Load())
        zero = ast.Call(path(np.zeros), [ast.Tuple([], ast.Load()), dtype], [])
        return Sym.__srcgrad_helper__(wrapper, (Sym(zero, ans.tracer),), {})


class Forward:
    """Emits the primal statements of one lowered function interleaved with their tangents.

    ``active``: the parameters that receive a tangent; ``jvp_name(callee, positions, label)``
    names (and emits, once) the jvp of a callee or block for the given active positions.
    The primal statements other than calls and control flow are its ``printer``'s.
    """

    operand = staticmethod(operand_expr)

    def __init__(self, fn: Function, active: list[str], fresh: Callable[[str], str],
                 jvp_name: JvpName, namespace: str = "np",
                 facts: dict[str, tuple] | None = None,
                 kinds: dict[str, str] | None = None) -> None:
        self.fn, self.fresh, self.jvp_name = fn, fresh, jvp_name
        self.facts = facts or {}
        self.kinds = kinds or {}                 # values known to be floats or integers
        self.tracer = Tracer(fresh, namespace, self.facts)
        self.namespace, self.scalar = namespace, False
        self.printer = Primal(weakref.proxy(self))   # refers back weakly: no cycle
        self.same_list: dict[str, str] = {}
        self.lengths: dict[str, str] = {}
        self.tan: dict[str, ast.expr] = {}       # value -> the expression of its tangent
        self.tangent_names: set[str] = set()     # every name a tangent statement assigns
        self.tangent_params: list[str] = []
        self.preassigned: set[str] = set()     # a block's outputs, assigned by its call
        self.flat_outputs: Callable[[str], int | None] = lambda name: None
        for p in fn.params:
            if p in active:
                name = self._new(p)
                self.tan[p] = _name(name)
                self.tangent_params.append(name)

    # ----------------------------------------------------------------------- statements
    def body(self) -> list[ast.stmt]:
        """Every statement of the function with its tangent, under its source comment."""
        return self.printer.commented(self.statement)

    def statement(self, st: Stmt) -> list[ast.stmt]:
        if st.kind == "call":
            return self.call(st)
        if st.kind == "branch":
            return control.branch(self, st)
        if st.kind == "loop":
            return control.loop(self, st)
        if st.kind == "append":
            return control.append(self, st)
        if st.kind == "unpack" and st.target in self.preassigned:
            return []                          # assigned by the block's call itself
        return [self.printer.statement(st)] + self.tangent(st)

    def tangent(self, st: Stmt) -> list[ast.stmt]:
        if st.kind == "prim":
            return self.tangent_prim(st)
        if st.kind == "pack":
            items = [self.tan_of(a) for a in st.args]
            if all(t is None for t in items):
                return []
            elts = [t if t is not None else self.zero(a) for a, t in zip(st.args, items)]
            return self.bind(st.target, ast.List(elts, ast.Load()) if st.params.get("list")
                             else ast.Tuple(elts, ast.Load()))
        source = self.tan_of(st.args[0]) if st.args else None
        if source is None:
            return []
        if st.kind == "unpack":
            return self.bind(st.target, ast.Subscript(source, ast.Constant(st.params["index"]),
                                                      ast.Load()))
        if st.kind == "leaf":
            for key in st.params["path"]:
                source = ast.Subscript(source, ast.Constant(key), ast.Load())
            return self.bind(st.target, source)
        if st.kind == "listget":
            return self.bind(st.target, ast.Subscript(source, index_expr(st.params["index"]),
                                                      ast.Load()))
        return []                   # static values and effects carry no tangent

    def tangent_prim(self, st: Stmt) -> list[ast.stmt]:
        prim = st.fn
        tans = [self.tan_of(a) if prim.vjp(i) is not None else None
                for i, a in enumerate(st.args)]
        kind = self.kinds.get(st.target)
        if all(t is None for t in tans) or kind == INT:      # an integer's tangent is zero
            return []
        spelled = self._spelled(st, tans)
        if spelled is not None:
            return self.bind(st.target, spelled)
        ans, xs, params = self.printer.rule_operands(st)
        ans = _Result(ans.node, ans.tracer, kind)
        ts = [Sym(t, self.tracer) if t is not None else None for t in tans]
        try:
            out = prim.jvp(ts, ans, *xs, **params)
        except SymbolicError as exc:
            raise SymbolicError(f"{exc} (the forward rule of {prim.name}, line {st.line})") \
                from None
        if out is None:
            return []
        if self._widened(st, tans):
            out = self.tracer.call(numpy_path(np.broadcast_to, self.namespace),
                                   (out, self._shape_of(st.target)), {})
        stmts, self.tracer.stmts = self.tracer.stmts, []
        value = to_expr(out)
        if isinstance(value, ast.Name) and stmts and stmts[-1].targets[0].id == value.id:
            value = stmts.pop().value             # named after the value, not a temporary
        for s in stmts:
            self.tangent_names.add(s.targets[0].id)
        return stmts + self.bind(st.target, value)

    def _spelled(self, st: Stmt, tans: list) -> ast.expr | None:
        """The tangent of a linear primitive (``x[0]``, ``np.sum(x)``) written as the
        primitive itself on the tangents, of a product (``x @ w``) as the sum of the product
        with each factor's tangent in turn: the same spelling as the primal line."""
        prim = st.fn
        if prim.jvp_rule is not None or not (prim.linear or prim.multilinear) or any(
                t is not None and not isinstance(t, ast.Name) for t in tans):
            return None
        able = [prim.vjp(i) is not None for i in range(len(st.args))]
        if prim.linear and any(a and t is None for a, t in zip(able, tans)):
            return None                         # a zero input: left to the rule
        if self._widened(st, tans):
            return None

        def with_args(args: list) -> ast.expr:
            twin = Stmt(st.target, "prim", fn=prim, args=args, params=st.params, line=st.line)
            return self.printer.prim_expr(twin)
        if prim.linear:
            return with_args([Var(t.id) if t is not None else a for a, t in zip(st.args, tans)])
        terms = [with_args([*st.args[:i], Var(t.id), *st.args[i + 1:]])
                 for i, t in enumerate(tans) if t is not None]
        total = terms[0]
        for term in terms[1:]:
            total = ast.BinOp(total, ast.Add(), term)
        return total

    # ------------------------------------------------------------ calls, blocks, lists
    def call(self, st: Stmt) -> list[ast.stmt]:
        args = [self.operand(a) for a in st.args]
        positions = frozenset(i for i, a in enumerate(st.args) if self.tan_of(a) is not None)
        if not positions:
            return [assign(st.target, ast.Call(st.expr, args, []))]
        name = self.jvp_name(st.fn, positions, st.params.get("label"))
        tangents = [self.tan_of(st.args[i]) for i in sorted(positions)]
        count = self.flat_outputs(name)
        if count is not None:                # a tuple: its items and theirs, one flat tuple
            return control.flat_call(self, st, ast.Call(_name(name), args + tangents, []),
                                     count)
        dot = self._new(st.target)
        self.tan[st.target] = _name(dot)
        return [assign([st.target, dot], ast.Call(_name(name), args + tangents, []))]

    # -------------------------------------------------------------------------- helpers
    def tan_of(self, a: Any) -> ast.expr | None:
        """The tangent of an operand (None: zero)."""
        return self.tan.get(a.name) if isinstance(a, Var) else None

    def zero(self, a: Any) -> ast.expr:
        helper = self.tracer.use_helper("zero_tangent", tangents.zero_tangent.fn)
        if isinstance(a, Var) and a.name in self.fn.lists:   # a list, written as one
            item = self.fresh("item")
            return ast.ListComp(ast.Call(helper, [_name(item)], []), [ast.comprehension(
                _name(item, True), self.operand(a), [], 0)])
        return ast.Call(helper, [self.operand(a)], [])

    def flat_result(self) -> ast.expr:
        """A block's result: its outputs, then (when it has tangents) theirs, one tuple."""
        made = next((s for s in self.fn.body if isinstance(self.fn.result, Var)
                     and s.target == self.fn.result.name), None)
        values = made.args if made is not None and made.kind == "pack" else [self.fn.result]
        items = [self.operand(a) for a in values]
        if self.tangent_params:
            items += [self.tan_of(a) or self.zero(a) for a in values]
        return ast.Tuple(items, ast.Load())

    def result_tangent(self, top: bool) -> ast.expr:
        """The tangent of the result: zeros where it does not depend on the inputs; at the
        top, each value's tangent in that value's form (a float for a float)."""
        result = self.fn.result
        t = self.tan_of(result)
        if not top:                          # a block: its caller reads a tangent or None
            if t is None:
                return self.zero(result) if self.tangent_params else ast.Constant(None)
            return t
        made = next((s for s in self.fn.body if isinstance(result, Var)
                     and s.target == result.name), None)
        match = self.tracer.use_helper("match_tangent", tangents.match_tangent.fn)
        if made is not None and made.kind == "pack":
            items = [ast.Call(match, [self.tan_of(a), self.operand(a)], [])
                     if self.tan_of(a) is not None else self.zero(a) for a in made.args]
            return ast.List(items, ast.Load()) if made.params.get("list") else ast.Tuple(
                items, ast.Load())
        if t is None:
            return self.zero(result)
        return ast.Call(match, [t, self.operand(result)], [])

    def bind(self, target: str, value: ast.expr) -> list[ast.stmt]:
        if isinstance(value, ast.Name):          # the same tangent (``y = x + 1.0``)
            self.tan[target] = value
            return []
        name = self._new(target)
        self.tan[target] = _name(name)
        return [self.assign_tangent(name, value)]

    def bind_name(self, target: str, value: ast.expr) -> ast.stmt:
        """``target_dot = value`` (always a statement of its own)."""
        name = self._new(target)
        self.tan[target] = _name(name)
        return self.assign_tangent(name, value)

    def assign_tangent(self, name: str, value: ast.expr) -> ast.stmt:
        self.tangent_names.add(name)
        return assign(name, value)

    def _new(self, base: str) -> str:
        return self.fresh(f"{base}_dot")

    def _shape_of(self, name: str) -> Sym:
        if name in self.facts:
            return Sym(to_expr(self.facts[name][0]), self.tracer)
        return Sym(ast.Call(numpy_path(np.shape, self.namespace), [_name(name)], []),
                   self.tracer)

    def _widened(self, st: Stmt, tans: list) -> bool:
        """Whether the tangent may have a smaller shape than the value: an input without a
        tangent (not a Python number) may broadcast the value wider than those with one,
        unless an input with a tangent is known to have the value's shape."""
        if not st.fn.broadcasts:
            return False
        shape = self.facts.get(st.target, (None,))[0]
        if shape is not None and any(t is not None and self.facts.get(a.name, (None,))[0]
                                     == shape for a, t in zip(st.args, tans)):
            return False
        return any(t is None and not (isinstance(a, Const) and isinstance(
            a.value, (int, float))) for a, t in zip(st.args, tans))
