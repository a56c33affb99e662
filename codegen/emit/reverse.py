"""The reverse emitter: a function's primal statements, then its adjoint, as Python AST.

For each active statement, in reverse order, the primitive's rules from the shared rule table
are called on symbolic values and what they return is printed: eager and compiled gradients
come from one definition.  Gradients of a value used more than once are summed; broadcasting
is undone by the ``unbroadcast`` helper (a cheap run-time shape check) only after primitives
that broadcast an array; the ``1.0`` seed is folded away and adjoints nobody reads are never
computed.  The emitter holds two parts, each reading back of it only what its ``Host``
lists: the printer of the primal statements (:mod:`srcgrad.codegen.emit.primal`, shared with
the forward emitter) and the bookkeeping that sums contributions into adjoints
(:mod:`srcgrad.codegen.emit.accumulate`).
"""

from __future__ import annotations

import ast
import threading
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from srcgrad.codegen.backends.base import NUMPY, Backend
from srcgrad.codegen.common import support
from srcgrad.codegen.common.markers import COMMENT, comment
from srcgrad.codegen.emit import control, lists
from srcgrad.codegen.emit.accumulate import Accumulation, full_adjoint, spreads_exactly
from srcgrad.codegen.emit.primal import Primal, located, short_filename
from srcgrad.codegen.emit.symbolic import (
    Sym,
    SymbolicError,
    Tracer,
    assign,
    operand_expr,
    to_expr,
)
from srcgrad.codegen.emit.symbolic import name_expr as _name
from srcgrad.codegen.emit.value_kinds import (
    FLOAT,
    INT,
    block_params,
    dtype_kind,
    function_kinds,
    value_facts,
)
from srcgrad.ir import Const, Function, Stmt, Var
from srcgrad.runtime.rules.primitives import unbroadcast

__all__ = ["Emitter", "COMMENT", "comment"]

_EMITTING = threading.local()   # .functions: those whose primal is being emitted here

_short = short_filename          # the reverse build reads these three here: _name, _short, comment


class Emitter:
    """Emits the primal and adjoint of one lowered function.  Its ``printer`` writes the
    primal statements other than calls and control flow, its ``sums`` the adjoint
    bookkeeping."""

    operand = staticmethod(operand_expr)

    def __init__(self, fn: Function, analysis: Any, fresh: Callable[[str], str],
                 vjp_name: Callable[[Any], str], backend: Backend | str = NUMPY,
                 facts: dict[str, tuple] | None = None) -> None:
        self.fn, self.analysis, self.fresh = fn, analysis, fresh
        self.facts = value_facts(fn, facts)   # name -> (shape, dtype)
        self.kinds = function_kinds(fn, self._param_kinds(fn, analysis))
        self.active = analysis.active - {n for n, k in self.kinds.items() if k == INT}
        self.vjp_name = vjp_name           # callee function -> name of its emitted vjp
        self.tracer = Tracer(fresh, backend, self.facts)
        self.backend = self.tracer.backend
        self.scalar = self.backend.scalar     # specialised for Python floats
        self.adj: dict[str, Any] = {}       # var -> ast.Name of its adjoint, or 1.0
        self.tuple_adj: dict[str, dict[int, Any]] = {}
        self.backward_of: dict[str, str] = {}
        self.callees: list[Any] = []
        self.same_list: dict[str, str] = {}  # list version -> the version it appended to
        self.lengths: dict[str, str] = {}    # list version -> name of its recorded length
        self.changed_later = lists.changed_later(fn)
        me = weakref.proxy(self)    # what it holds refers back weakly: freed with it, no cycle
        self.printer = Primal(me)
        self.sums = Accumulation(me)

    def _param_kinds(self, fn: Function, analysis: Any) -> dict[str, str]:
        """The kinds of the parameters: a block's from its branch or loop; at the top, the
        arguments differentiated are floats (the API refuses others); a helper's unknown."""
        kinds = block_params(fn)
        if kinds is None:
            top = not getattr(_EMITTING, "functions", None)
            kinds = {p: FLOAT for p in fn.params if top and p in analysis.active
                     and p not in fn.trees and p not in fn.lists}
        for name, (_, dtype) in self.facts.items():
            kind = dtype_kind(dtype)
            if kind is not None:
                kinds[name] = kind
        return kinds

    def primal(self) -> list[ast.stmt]:
        """The primal statements; the helpers and blocks emitted meanwhile are not the top."""
        stack = _EMITTING.__dict__.setdefault("functions", [])
        stack.append(self.fn)
        try:
            return self.printer.commented(self.primal_stmt)
        finally:
            stack.pop()

    def primal_stmt(self, st: Stmt) -> ast.stmt | list[ast.stmt]:
        """One statement of the primal; an active call keeps the backward function its vjp
        hands back, and a branch or a loop those of its blocks."""
        if st.kind == "branch":
            return control.primal_branch(self, st)
        if st.kind == "loop":
            return control.primal_loop(self, st)
        if st.kind == "append":
            return lists.primal_append(self, st)
        if st.kind != "call":
            return self.printer.statement(st)
        args = [self.operand(a) for a in st.args]
        if st.target in self.active:
            backward = self.fresh(f"{st.target}_backward")
            self.backward_of[st.target] = backward
            self.callees.append(st.fn)
            vjp = self.vjp_name(st.fn, st.params.get("label"))
            return assign([st.target, backward], ast.Call(_name(vjp), args, []))
        return assign(st.target, ast.Call(st.expr, args, []))

    def known_scalar(self, value: Any) -> bool:
        """The result is known (from a first call) to hold one element."""
        fact = self.facts.get(getattr(value, "name", None))
        return fact is not None and int(np.prod(fact[0])) == 1

    # ------------------------------------------------------------------------ adjoint
    def adjoint(self, seed: Any) -> list[ast.stmt]:
        """The adjoint statements, the result's adjoint being ``seed`` (1.0 or a name)."""
        result = self.fn.result
        out: list[ast.stmt] = []
        if not isinstance(result, Var) or result.name not in self.active:
            return out
        self.adj[result.name] = seed
        line = None
        for st in reversed(self.fn.body):
            if st.target is None or st.target not in self.active or st.kind == "leaf":
                continue
            if st.target not in self.adj and st.target not in self.tuple_adj:
                continue
            emitted = self.adjoint_stmt(st)
            key, where = located(self.fn.filename, st.line, st.text)
            if emitted and key != line:
                line = key
                out.append(comment(f"adjoint of {where}"))
            out.extend(emitted)
        return [st for st in out if id(st) not in self.sums.dropped]

    def adjoint_stmt(self, st: Stmt) -> list[ast.stmt]:
        sums = self.sums
        emitted: list[ast.stmt] = []
        structural = ("unpack", "call", "pack", "branch", "loop", "append")
        if st.target in sums.virtual and st.kind in structural:
            emitted += sums.materialize(st.target)      # callees see exact shapes
        if st.kind in ("prim", "call"):              # rules and helpers read no None
            emitted += sums.zeroed(st.target)
        g = self.adj.get(st.target)
        if isinstance(g, float) and st.kind in structural:
            g = ast.Constant(g)
        if st.kind == "unpack":
            self.tuple_adj.setdefault(st.args[0].name, {})[st.params["index"]] = g
            return emitted
        if st.kind == "append":
            return emitted + lists.adjoint_append(self, st, g)
        if st.kind == "listget":
            return emitted + lists.adjoint_listget(self, st, g)
        if st.kind == "pack":
            for i, a in enumerate(st.args):
                if self.wants(a) and st.params.get("list"):
                    emitted += sums.accumulate(a.name, lists.item_gradient(self, g, i, a))
                elif self.wants(a):
                    part = g[i] if isinstance(g, tuple) else ast.Subscript(
                        g, ast.Constant(i), ast.Load())
                    if part is not None:
                        emitted += sums.accumulate(a.name, part, none=True)
            return emitted
        if st.kind == "call":
            return emitted + self.adjoint_call(st, g, st.args)
        if st.kind == "branch":
            return emitted + self.adjoint_call(st, g, st.args[1:])
        if st.kind == "loop":
            return emitted + control.adjoint_loop(self, st, self.cotangent(st, g))
        if st.kind != "prim":
            return emitted
        virtual = st.target in sums.virtual
        if virtual and not spreads_exactly(st):
            emitted += sums.materialize(st.target)
            g = self.adj[st.target]
            virtual = False
        gsym = g if isinstance(g, float) else self.tracer.sym(g.id)
        # d(sum(x)) is g everywhere: keep it a scalar standing for the full array
        full = full_adjoint(st)
        if full is not None:
            x = st.args[0].name
            return emitted + sums.accumulate(x, full(gsym, self.tracer.sym(x).shape),
                                             virtual=True)
        if isinstance(g, float) and not st.fn.folds_seed:
            gsym = Sym(ast.Constant(g), self.tracer)   # printed, never computed here
        ans, xs, params = self.printer.rule_operands(st)
        contributions: list[tuple[str, Any]] = []
        for i, a in enumerate(st.args):
            rule = st.fn.vjp(i)
            if rule is None or not self.wants(a):
                continue
            try:
                try:
                    contrib = rule(gsym, ans, *xs, **params)
                except ArithmeticError:       # folded Python numbers: 1.0 / -0.0
                    contrib = _as_numpy(rule, gsym, ans, xs, params)
            except SymbolicError as exc:
                raise SymbolicError(f"{exc} (the rule of {st.fn.name}, line {st.line})") \
                    from None
            if isinstance(contrib, Sym) and st.fn.broadcasts and self._may_broadcast(st, i):
                shape = (to_expr(self.facts[a.name][0]) if a.name in self.facts else
                         ast.Call(self.backend.path(np.shape), [_name(a.name)], []))
                undo = self.tracer.use_helper(unbroadcast.__name__, unbroadcast)
                contrib = self.tracer.call(undo, (contrib, Sym(shape, self.tracer)), {})
            contributions.append((a.name, contrib))
        for var, contrib, count in sums.merge(contributions):
            if count > 1:
                contrib = contrib * count
            stays_virtual = virtual and not sums.reads_arrays(contrib, g)
            emitted += sums.accumulate(var, contrib, virtual=stays_virtual)
        return emitted

    def cotangent(self, st: Stmt, g: Any) -> ast.expr:
        """The cotangent of a tuple-valued statement; missing parts are zeros."""
        if st.target not in self.tuple_adj:
            return g
        parts = self.tuple_adj[st.target]
        n = st.params.get("outputs", st.params.get("carried", max(parts) + 1))
        zero = self.tracer.use_helper("zero_gradient", support.zero_gradient)
        unpacked = {u.params["index"]: u.target for u in self.fn.body if u.kind == "unpack"
                    and u.args[0] == Var(st.target)}
        out = []
        for i in range(n):
            part = ast.Subscript(_name(st.target), ast.Constant(i), ast.Load())
            if parts.get(i) is not None:
                out.append(parts[i])
            elif lists.is_list_output(st, i):
                out.append(lists.zero_list(self, unpacked.get(i), part))
            else:
                out.append(ast.Call(zero, [part], []))
        return ast.Tuple(out, ast.Load())

    def running_total(self, var: str) -> ast.Name | None:
        """The adjoint of ``var`` when it is a running total this code may add into in place
        (a loop body's total for what it only reads), else None."""
        d = self.adj.get(var)
        if var in self.analysis.accumulates and isinstance(d, ast.Name) and \
                d.id in self.sums.owned:
            return d
        return None

    def adjoint_call(self, st: Stmt, g: Any, args: list) -> list[ast.stmt]:
        g = self.cotangent(st, g)
        names = []
        wanted = []
        direct = set()
        counts = [a.name for a in args if isinstance(a, Var)]
        handed = self.analysis.handed.get(st.target, ())    # a branch adds into our totals
        if handed:
            g = ast.BinOp(g, ast.Add(), ast.Tuple([
                self.running_total(v) or ast.Call(self.tracer.use_helper(
                    "zero_gradient", support.zero_gradient), [_name(v)], [])
                for v in handed], ast.Load()))
        for a in args:
            total = self.running_total(a.name) if isinstance(a, Var) and a.name in handed \
                else None
            if total is not None:
                names.append(total.id)
                continue
            if self.wants(a) and a.name not in self.adj and counts.count(a.name) == 1:
                name = self.fresh(f"d_{a.name}")      # its first gradient: no sum needed
                direct.add(a.name)
            elif self.wants(a):
                name = self.fresh(f"d_{a.name}_part")
                self.tracer.temps.add(name)
            else:
                names.append("_")
                continue
            names.append(name)
            wanted.append((a, name))
        call: ast.expr = ast.Call(_name(self.backward_of[st.target]), [g], [])
        if len(names) == 1:
            call = ast.Subscript(call, ast.Constant(0), ast.Load())
        emitted = control.within(st, [assign(names if len(names) > 1 else names[0], call)])
        if st.kind == "call":
            emitted += self._none_as_zero(wanted)
        block = st.kind == "branch"              # a block hands back None for an int
        for a, name in wanted:
            if a.name in direct:
                self.adj[a.name] = _name(name)
                if block:
                    self.sums.handed_back(a.name)
            else:
                emitted += self.sums.accumulate(a.name, _name(name), none=block)
        return emitted

    def _none_as_zero(self, wanted: list) -> list[ast.stmt]:
        """A helper hands back None for an argument it gives no gradient (an int, say
        ``n - 1``, or one it does not use): zero, before the caller adds to it."""
        fix = self.tracer.use_helper("callee_gradient", support.callee_gradient)
        return [assign(name, ast.Call(fix, [_name(name), _name(a.name)], []))
                for a, name in wanted
                if a.name not in self.fn.lists and a.name not in self.fn.trees and
                not self._known_float(a.name)]

    def _known_float(self, var: str) -> bool:
        fact = self.facts.get(var)
        return fact is not None and (fact[1] is float or np.dtype(fact[1]).kind in "fc")

    def wants(self, a: Any) -> bool:
        """Whether the operand ``a`` is a variable whose adjoint is asked for."""
        return isinstance(a, Var) and a.name in self.active

    def _may_broadcast(self, st: Stmt, i: int) -> bool:
        """False when every other input is a Python number (which cannot broadcast x), or
        when the shapes are known to agree."""
        if self.scalar:
            return False
        arg = st.args[i]
        if arg.name in self.facts and st.target in self.facts:
            return self.facts[arg.name][0] != self.facts[st.target][0]
        others = [a for j, a in enumerate(st.args) if j != i]
        return not all(isinstance(a, Const) and isinstance(a.value, (int, float))
                       for a in others)

    def gradient_of(self, param: str) -> ast.expr:
        """The finished gradient of a parameter, in the form of the input (a pytree too)."""
        tree = self.fn.trees.get(param)
        if tree is not None:
            return self._tree_gradient(tree)
        helper = self.tracer.use_helper
        d = self.adj.get(param)
        if param in self.fn.lists:                # a block's list: one entry per element
            return d if d is not None else lists.zero_list(self, param)
        if self.scalar:                       # Python floats in, Python floats out
            if d is None:
                return ast.Constant(0.0)
            if param in self.sums.maybe_none:
                d = self.sums.none_as_zero(d, param)
            return ast.Constant(float(d)) if isinstance(d, float) else ast.Call(
                _name("float"), [d], [])
        if d is None:
            return ast.Call(helper("zero_gradient", support.zero_gradient), [_name(param)], [])
        value = ast.Constant(d) if isinstance(d, float) else d
        if isinstance(d, ast.Name) and d.id in self.facts and param in self.facts and \
                self.facts[d.id] == self.facts[param] and self.facts[param][1] is not float:
            return value                     # known to have the input's shape and dtype
        return ast.Call(helper("match_input", support.match_input), [value, _name(param)], [])

    def _tree_gradient(self, tree: Any) -> ast.expr:
        items = {k: self._tree_gradient(v) if not isinstance(v, Var) else self.gradient_of(v.name)
                 for k, v in tree.children.items()}
        if tree.kind == "dict":
            return ast.Dict([ast.Constant(k) for k in items], list(items.values()))
        node = ast.List(list(items.values()), ast.Load())
        return node if tree.kind is list else ast.Tuple(node.elts, ast.Load())


def _as_numpy(rule: Callable, *operands: Any) -> Any:
    """A rule evaluated on its folded Python numbers as NumPy float64 scalars: what the
    arrays they stand beside compute (``-inf`` for ``1.0 / -0.0``, where Python raises)."""
    def numpy(value: Any) -> Any:
        if isinstance(value, (tuple, list)):
            return type(value)(numpy(v) for v in value)
        if isinstance(value, dict):
            return {k: numpy(v) for k, v in value.items()}
        if type(value) is float or type(value) is int and abs(value) < 2 ** 1023:
            return np.float64(value)
        return value
    g, ans, xs, params = numpy(operands)
    with np.errstate(all="ignore"):
        return rule(g, ans, *xs, **params)
