"""How the adjoint's contributions become adjoints.

The first contribution to a value names its adjoint (or is kept as a number when it is one,
so that the folded ``1.0`` seed stays folded); later ones add into it: into the array itself
when this code made it (``d_x += c``, ``scatter_add(d_x, i, g)`` for a read ``x[i]``), else
into a new array.  A scalar that stands for a whole array (the adjoint of a full sum) stays a
scalar ("virtual") as long as the rules downstream broadcast it exactly.

The reverse emitter holds one :class:`Accumulation` (its ``sums``), which keeps this
bookkeeping and writes the emitter's adjoints; what it reads of the emitter is :class:`Host`.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

from srcgrad.codegen.common import support
from srcgrad.codegen.emit import lists
from srcgrad.codegen.emit.symbolic import Sym, Tracer, assign, operand_expr, to_expr
from srcgrad.codegen.emit.symbolic import name_expr as _name
from srcgrad.codegen.emit.value_kinds import FLOAT
from srcgrad.ir import Const, Function, Stmt, Var
from srcgrad.runtime.rules.primitives import unbroadcast

__all__ = ["Accumulation", "Host", "full_adjoint", "spreads_exactly"]


class Host(Protocol):
    """What the bookkeeping reads of the reverse emitter that holds it: the function and
    what is known of its values, the tracer the rules print with, fresh names, and the
    adjoints themselves (``adj``: a variable's adjoint, a name or a number), which it
    writes.  ``same_list`` is read by :func:`lists.root`, which is handed the emitter."""

    fn: Function
    facts: dict[str, tuple]               # name -> (shape, dtype), when known
    kinds: dict[str, str]
    tracer: Tracer
    scalar: bool
    adj: dict[str, Any]
    same_list: dict[str, str]
    fresh: Callable[[str], str]


def full_adjoint(st: Stmt) -> Any:
    """For a reduction over every axis (a full sum or mean, by the primitive's hint), the
    function giving its input's adjoint, a number standing for the whole array."""
    full = st.fn.full_adjoint
    if full is None or st.params.get("axis") is not None or st.params.get("keepdims") \
            or not isinstance(st.args[0], Var):
        return None
    return full


def spreads_exactly(st: Stmt) -> bool:
    """The rule maps a scalar ``g`` to an array of the input's shape exactly."""
    prim = st.fn
    if prim.full_adjoint is not None or (prim.elementwise and prim.nin == 1):
        return True          # reductions spread g by ``unreduce``, which takes a scalar
    return prim.elementwise and all(
        isinstance(a, Const) and isinstance(a.value, (int, float))
        for a in st.args if not isinstance(a, Var)) and sum(
        isinstance(a, Var) for a in st.args) == 1


class Accumulation:
    """The adjoint bookkeeping of the reverse emitter: how each contribution is summed into
    an adjoint, which adjoints are scalars standing for arrays, and which may be None."""

    def __init__(self, host: Host) -> None:
        self.host = host                    # a weak proxy: the emitter owns its bookkeeping
        self.maybe_none: set[str] = set()   # adjoints that may be None (of an int) here
        self.virtual: set[str] = set()      # adjoints kept as scalars standing for arrays
        self.aliases: set[str] = set()      # adjoints that are another variable's name
        self.owned: set[str] = set()        # adjoint names holding arrays made here
        self.negated: dict[str, tuple] = {}  # first adjoints that were a negation
        self.dropped: set[int] = set()      # statements folded into a later one

    # -- scalars standing for whole arrays ("virtual" adjoints), and merged contributions
    def materialize(self, var: str) -> list[ast.stmt]:
        """Give a scalar-standing-for-an-array adjoint its full shape."""
        host = self.host
        self.virtual.discard(var)
        g = host.adj[var]
        value = ast.Constant(g) if isinstance(g, float) else g
        backend = host.tracer.backend
        fact = host.facts.get(var)
        shape = to_expr(fact[0]) if fact is not None else ast.Call(
            backend.path(np.shape), [_name(var)], [])       # known when specialised
        full = ast.Call(backend.path(np.full), [shape, value], [])
        own = backend.helper("filled")        # chunked like ``var`` (Dask)
        if own is not None and fact is None:
            full = ast.Call(host.tracer.use_helper(own.__name__, own), [_name(var), value], [])
        name = g.id if isinstance(g, ast.Name) and var not in self.aliases else host.fresh(
            f"d_{var}")
        self.aliases.discard(var)
        host.adj[var] = _name(name)
        return [assign(name, full)]

    def reads_arrays(self, contrib: Any, g: Any) -> bool:
        """Whether a contribution reads a value other than the (scalar) adjoint ``g``."""
        if not isinstance(contrib, Sym):
            return False
        defs = self._statement_defs()
        allowed = {g.id} if isinstance(g, ast.Name) else set()
        stack = [contrib.node]
        while stack:
            for node in ast.walk(stack.pop()):
                if isinstance(node, ast.Call) and not getattr(self._called(node), "of_shapes",
                                                              False):
                    return True                  # a helper spreads g to a full array
                if isinstance(node, ast.Name):
                    if node.id in defs:
                        stack.append(defs.pop(node.id))
                    elif node.id not in allowed and node.id not in self.host.tracer.helpers:
                        return True
        return False

    def _called(self, node: Any) -> Any:
        """The primitive or helper that a call the rules printed calls (None: another)."""
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            return self.host.tracer.called.get(node.func.id)
        return None

    def _statement_defs(self) -> dict[str, ast.expr]:
        """The temporaries the rules of the current statement defined, by name."""
        return {st.targets[0].id: st.value for st in self.host.tracer.stmts}

    def merge(self, contributions: list) -> list:
        """Identical contributions to one variable (``x * x``) become one, times a count."""
        merged: list[list] = []
        for var, contrib in contributions:
            key = self._expanded(contrib)
            for item in merged:
                if item[0] == var and item[3] == key:
                    item[2] += 1
                    break
            else:
                merged.append([var, contrib, 1, key])
        return [(var, contrib, count) for var, contrib, count, _ in merged]

    def _expanded(self, contrib: Any) -> str:
        if not isinstance(contrib, Sym):
            return repr(contrib)
        defs = self._statement_defs()

        class Expand(ast.NodeTransformer):
            def visit_Name(self, node: ast.Name) -> ast.AST:
                return self.visit(copy.deepcopy(defs[node.id])) if node.id in defs else node
        return ast.dump(Expand().visit(copy.deepcopy(contrib.node)))

    # -- the adjoints of values that may be integers: None stands for their zero
    def may_be_none(self, var: str) -> bool:
        """Whether a gradient handed back for ``var`` (by a block, or as an item of a
        cotangent) may be None: ``var`` is not a float for certain (nor a list or pytree,
        whose gradients hold None for zeros by design)."""
        fn = self.host.fn
        return self.host.kinds.get(var) != FLOAT and var not in fn.lists and var not in fn.trees

    def handed_back(self, var: str) -> None:
        """``var``'s adjoint was just handed back by a block or read from a cotangent."""
        if self.may_be_none(var) and self.host.adj.get(var) is not None:
            self.maybe_none.add(var)

    def zeroed(self, var: str) -> list[ast.stmt]:
        """``d_var = callee_gradient(d_var, var)`` (a zero of ``var``'s shape for None)
        before arithmetic reads an adjoint that may be None; nothing when it cannot be."""
        if var not in self.maybe_none:
            return []
        self.maybe_none.discard(var)
        name = self.host.fresh(f"d_{var}")
        value = self.none_as_zero(self.host.adj[var], var)
        self.host.adj[var] = _name(name)
        self.aliases.discard(var)
        return [assign(name, value)]

    def none_as_zero(self, value: ast.expr, var: str) -> ast.expr:
        """``callee_gradient(value, var)``: the adjoint ``value``, a zero of ``var``'s shape
        where it is None."""
        fix = self.host.tracer.use_helper("callee_gradient", support.callee_gradient)
        return ast.Call(fix, [value, operand_expr(Var(var))], [])

    def accumulate(self, var: str, contrib: Any, virtual: bool = False,
                   none: bool = False) -> list[ast.stmt]:
        """``d_var = contrib``, or ``d_var = d_var + contrib`` when it already has one.

        A constant adjoint (the folded ``1.0`` seed, ``-1.0`` …) is not assigned at all: it
        is kept as a number, so that the rules downstream fold it too.  ``virtual``: the
        contribution is a scalar standing for an array full of it (as after a sum).
        ``none``: the contribution was handed back by a block and may be None (an int's).
        """
        if isinstance(contrib, (np.ndarray, np.generic)) and np.ndim(contrib) == 0 and \
                contrib.dtype.kind in "biuf":   # a rule's result on folded numbers (0-d)
            contrib = float(contrib)
        host = self.host
        adj, tracer = host.adj, host.tracer
        stmts = tracer.stmts
        tracer.stmts = []
        none = none and self.may_be_none(var)
        if var in adj and (none or var in self.maybe_none):   # a sum: no None in it
            stmts += self.zeroed(var)
            if none:
                value = to_expr(contrib) if not isinstance(contrib, ast.AST) else contrib
                contrib, none = self.none_as_zero(value, var), False
        old = adj.get(var)
        if old is None and none:
            self.maybe_none.add(var)
        was_virtual = var in self.virtual      # a scalar standing for an array: no scatter
        if old is None and virtual:
            self.virtual.add(var)
        elif not (virtual and var in self.virtual):
            self.virtual.discard(var)
        number = isinstance(contrib, (int, float)) and not isinstance(contrib, bool)
        if number and (old is None or isinstance(old, float)):
            adj[var] = float(contrib) + (old or 0.0)
            return stmts
        if isinstance(old, float):
            contrib = contrib + old if isinstance(contrib, Sym) else ast.BinOp(
                contrib, ast.Add(), ast.Constant(old))
            stmts += tracer.stmts
            tracer.stmts = []
            old = None
        value = to_expr(contrib) if not isinstance(contrib, ast.AST) else contrib
        if old is None and isinstance(value, ast.Name) and value.id not in tracer.temps:
            adj[var] = value                # the same gradient: a second name is not needed
            self.aliases.add(var)
            return stmts
        if old is not None and var in host.fn.lists:      # lists add element by element
            self.aliases.discard(var)
            name = host.fresh(f"d_{lists.root(host, var)}")
            stmts.append(assign(name, lists.add_lists(host, old, value)))
            adj[var] = _name(name)
            return stmts
        if old is not None and var in self.aliases:
            self.aliases.discard(var)
            name = host.fresh(f"d_{var}")
            stmts.append(assign(name, ast.BinOp(old, ast.Add(), value)))
            adj[var] = _name(name)
            return stmts
        if old is None:
            name = host.fresh(f"d_{var}")
            stmts.append(assign(name, value))
            if self._fresh_array(value):
                self.owned.add(name)
            made = self._definition(value)
            if isinstance(made, ast.UnaryOp) and isinstance(made.op, ast.USub):
                self.negated[var] = (stmts[-1], made.operand)
        elif var in self.negated:             # -a, then + c: one subtraction, c - a
            first, operand = self.negated.pop(var)
            self.dropped.add(id(first))
            name = old.id
            stmts.append(assign(name, ast.BinOp(value, ast.Sub(), operand)))
            self.owned.add(name)
        elif old.id in self.owned and not host.scalar:
            name = old.id                   # an array this code made: add into it
            scatter = None if was_virtual else self._scatter(name, value, stmts)
            stmts.append(scatter or (ast.AugAssign(_name(name), ast.Add(), value)
                                     if tracer.backend.writes_in_place else
                                     assign(name, ast.BinOp(_name(name), ast.Add(), value))))
        else:
            name = old.id
            stmts.append(assign(name, ast.BinOp(_name(name), ast.Add(), value)))
            self.owned.add(name)
        adj[var] = _name(name)
        return stmts

    def _definition(self, value: ast.expr) -> ast.expr:
        """``value`` with the temporaries just defined in ``stmts`` looked through."""
        defs = self.host.tracer.defs
        while isinstance(value, ast.Name) and value.id in defs:
            value = defs[value.id]
        return value

    def _fresh_array(self, value: ast.expr) -> bool:
        """Whether ``value`` is a new array no other name refers to (arithmetic makes one, and
        so do the helpers that build a gradient from zeros or from a copy)."""
        made = self._definition(value)
        if _calls(made, unbroadcast.__name__) and made.args:    # new, or a new one reduced
            return getattr(self._called(self._definition(made.args[0])), "fresh_result", False)
        return isinstance(made, (ast.BinOp, ast.UnaryOp)) or getattr(
            self._called(made), "fresh_result", False)

    def _scatter(self, name: str, value: ast.expr, stmts: list[ast.stmt]) -> ast.stmt | None:
        """``name += unindex(g, index=i, shape=s)`` as ``name = scatter_add(name, i, g)``
        (``unindex`` is ``scatter_add`` into zeros: its hint ``accumulate_by``): the gradient
        of a read ``x[i]`` added where it belongs, not through a full array."""
        made = self._definition(value)
        adder = getattr(self._called(made), "accumulate_by", None)
        if adder is None or len(made.args) != 1:
            return None
        index = next((k.value for k in made.keywords if k.arg == "index"), None)
        if index is None:
            return None
        if isinstance(value, ast.Name) and value.id in self.host.tracer.temps:
            stmts[:] = [s for s in stmts if not (isinstance(s, ast.Assign) and isinstance(
                s.targets[0], ast.Name) and s.targets[0].id == value.id)]
        scatter = self.host.tracer.use_helper(adder.__name__, adder)
        return assign(name, ast.Call(scatter, [_name(name), index, made.args[0]], []))


def _calls(node: Any, *names: str) -> bool:
    """Whether ``node`` is a call of one of the helpers ``names``."""
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id in names)
