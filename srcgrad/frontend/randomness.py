"""Random draws: the methods of a ``np.random.RandomState`` or ``np.random.Generator`` (an
argument, a global, a closure variable or a local made by ``np.random.default_rng``), the
functions of ``np.random`` on its global stream (``np.random.seed`` included) and the
constructors of generators.

A draw is a ``static`` statement marked ``draw``: ``random_draw(rs, 'randn', *shape)``, its
arguments lowered once before it (a draw inside another's arguments runs once, first; a static
expression printed again reads the draw's result).  The code generator never drops, moves or
inlines it, so the compiled code consumes each stream as the function does.
:func:`srcgrad.runtime.rules.streams.random_draw` checks the object when the code runs (anything but
a RandomState or Generator raises ``NotCompiled``: the call runs eagerly) and notes the stream
for the reruns of the call.  A draw's result carries no gradient; a differentiated value
reaching its arguments (``rs.normal(mu, 1.0)`` with ``mu`` differentiated) is refused by
:mod:`srcgrad.analysis.draws`.  The methods compiled are an allow-list (``DRAWS``): those that
write into an array (``shuffle``, ``out=``) are not compiled.
"""

from __future__ import annotations

import ast
import types
from typing import Any, Protocol

import numpy as np

from srcgrad.errors import CompileError
from srcgrad.frontend.parse import Env, Source
from srcgrad.frontend.statics import Statics
from srcgrad.ir import Closure, Const, Pack, Stmt, Tree, Var, bind_values, const_expr
from srcgrad.runtime.rules.streams import GENERATORS, random_draw

__all__ = ["Randomness", "DRAWS"]

DRAWS = frozenset("""
    beta binomial chisquare choice dirichlet exponential f gamma geometric gumbel
    hypergeometric integers laplace logistic lognormal logseries multinomial
    multivariate_hypergeometric multivariate_normal negative_binomial noncentral_chisquare
    noncentral_f normal pareto permutation permuted poisson power rand randint randn random
    random_integers random_sample ranf rayleigh sample seed standard_cauchy
    standard_exponential standard_gamma standard_normal standard_t triangular uniform
    vonmises wald weibull zipf""".split())
"""The methods (and ``np.random`` functions) compiled: each returns a new value drawn from the
stream (``seed`` sets it).  ``shuffle`` writes into its argument and is not listed."""

CONSTRUCTORS = (np.random.default_rng, np.random.RandomState, np.random.Generator,
                np.random.SeedSequence, np.random.MT19937, np.random.PCG64, np.random.PCG64DXSM,
                np.random.Philox, np.random.SFC64)
"""What makes a new generator (compiled as a static value; its seed may not be
differentiated)."""

_MISSING = object()

_GLOBAL_STREAM = (np.random.seed, np.random.ranf, np.random.sample)
"""Functions of ``np.random`` on its global stream that are not its RandomState's methods."""


class Host(Protocol):
    """What the lowering of draws reads of, and asks of, the lowerer that holds it."""

    src: Source
    env: Env
    scope: dict[str, Any]
    static: set[str]                   # SSA names of values with no gradient
    free: dict[str, Any]               # the module's globals, bound when it loads
    statics: Statics

    def expr(self, node: ast.expr) -> Any: ...

    def emit(self, stmt: Stmt) -> Var: ...

    def fresh_internal(self, base: str) -> str: ...

    def materialize(self, value: Any, hint: str) -> Any: ...

    def error(self, message: str, node: ast.AST) -> CompileError: ...


class Randomness:
    """The lowering of random draws; the lowerer's ``randomness``."""

    def __init__(self, host: Host) -> None:
        self.host = host
        self.lowered: dict[int, tuple[ast.Call, Var]] = {}   # a draw's node -> its result
        self.helper: str | None = None        # the module's name of random_draw
        self.module: str | None = None        # its name of np.random, where the user has none

    def results_in(self, node: ast.AST) -> dict[int, ast.Name]:
        """For the draws lowered inside ``node``, their results' names, by their nodes'
        ids: code that prints ``node`` again (a static value) reads them, never draws again."""
        found = {}
        for n in ast.walk(node):
            drawn = self.lowered.get(id(n))
            if drawn is not None and drawn[0] is n:
                name = ast.Name(drawn[1].name, ast.Load())
                name.srcgrad_drawn = True
                found[id(n)] = ast.copy_location(name, n)
        return found

    def lower(self, node: ast.Call) -> Var | None:
        """A draw, lowered: ``rs.randn(*x.shape)`` of a generator named by the user (an
        argument, a local, a global or a closure variable), or ``np.random.seed(k)``; None
        for any other call (its receiver read here is only a name, which emits nothing)."""
        func = node.func
        base = func.value if isinstance(func, ast.Attribute) else None
        if base is not None and func.attr in DRAWS and _named(base):
            receiver = self.host.expr(base)
            if self.draws_from(receiver, node):
                return self.method(receiver, node)
            if isinstance(receiver, Const) and receiver.value is np.random:
                return self.function(getattr(np.random, func.attr, None), node)
        value = self._global(func)
        if value is random_draw:
            return self.redraw(node)               # generated code compiled again
        if value is not _MISSING:
            return self.constructor(value, node) or self.function(value, node)
        return None

    def _global(self, node: ast.expr) -> Any:
        """The value of a global name, or of attributes of a module it names (``np.random.
        seed``), looked up without emitting or binding anything; ``_MISSING`` otherwise."""
        attrs = []
        while isinstance(node, ast.Attribute):
            attrs.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name) or node.id in self.host.scope:
            return _MISSING
        try:
            value = self.host.env.resolve(node.id)
        except Exception:  # noqa: BLE001 - not defined: the call's own lowering says so
            return _MISSING
        for attr in reversed(attrs):
            if not isinstance(value, types.ModuleType):
                return _MISSING
            value = getattr(value, attr, _MISSING)
        return value

    def lower_within(self, node: ast.expr) -> None:
        """Lower the draws of an expression printed as written (a condition, an index):
        ``node`` itself when it is one, else those inside it (:meth:`lower_inside`)."""
        if not (isinstance(node, ast.Call) and (self._done(node) or self.lower(node))):
            self.lower_inside(node)

    def _done(self, node: ast.AST) -> bool:
        drawn = self.lowered.get(id(node))
        return drawn is not None and drawn[0] is node

    def lower_inside(self, node: ast.AST) -> None:
        """Lower the draws inside code printed as written (``print(rs.randn())``), in the order
        Python runs them: the code then reads their results (:meth:`results_in`)."""
        if isinstance(node, (ast.Assert, ast.IfExp)):        # the rest runs only sometimes
            children = [node.test]
        elif isinstance(node, ast.BoolOp):
            children = node.values[:1]
        else:
            children = list(ast.iter_child_nodes(node))
        for child in children:
            if isinstance(child, (ast.Lambda, ast.FunctionDef, ast.comprehension)):
                continue                             # run later, or per item: not here
            if not (isinstance(child, ast.Call) and (self._done(child) or
                                                     self.lower(child) is not None)):
                self.lower_inside(child)

    def redraw(self, node: ast.Call) -> Var:
        """``random_draw(rs, 'randn', *shape)`` in generated code compiled again (a Hessian's
        directional derivative): the draw ``rs.randn(*shape)`` it makes."""
        host = self.host
        if len(node.args) < 2 or not isinstance(node.args[1], ast.Constant) or \
                node.args[1].value not in DRAWS or isinstance(node.args[0], ast.Starred):
            raise host.error("srcgrad compiles random_draw(owner, 'method', ...) as its own "
                             "generated code calls it", node)
        name = node.args[1].value
        call = ast.copy_location(ast.Call(ast.Attribute(node.args[0], name, ast.Load()),
                                          node.args[2:], node.keywords), node)
        receiver = host.expr(node.args[0])
        drawn = None
        if isinstance(receiver, Const) and receiver.value is np.random:
            drawn = self.function(getattr(np.random, name, None), call)
        elif self.draws_from(receiver, call):
            drawn = self.method(receiver, call)
        if drawn is None:
            raise host.error(f"random_draw() of {ast.unparse(node.args[0])} is not compiled",
                             node)
        self.lowered[id(node)] = (node, drawn)
        return drawn

    def is_generator(self, receiver: Any) -> bool:
        """A RandomState or Generator known when compiling."""
        return isinstance(receiver, Const) and isinstance(receiver.value, GENERATORS)

    def draws_from(self, receiver: Any, node: ast.Call) -> bool:
        """Whether ``node`` (a method call on ``receiver``, lowered) is a draw compiled here:
        a listed method of a generator known when compiling, or of a value known only when
        the code runs (checked then)."""
        name = node.func.attr if isinstance(node.func, ast.Attribute) else None
        if name not in DRAWS:
            return False
        objects = getattr(self.host, "objects", None)        # a user object's own method
        if isinstance(receiver, Var) and objects is not None and \
                objects.method(receiver, name) is not None:
            return False
        return self.is_generator(receiver) or isinstance(receiver, Var)

    def method(self, receiver: Any, node: ast.Call) -> Var:
        """``rs.randn(*shape)``: a draw from ``receiver``'s stream."""
        if isinstance(receiver, Var):
            return self._emit(ast.Name(receiver.name, ast.Load()), [receiver.name], node)
        return self._emit(const_expr(receiver), [], node)

    def function(self, f: Any, node: ast.Call) -> Var | None:
        """``np.random.randn(*shape)``, ``np.random.seed(k)``: a draw from NumPy's global
        stream (None for another function of ``np.random``: ``default_rng``, a class)."""
        host = self.host
        name = getattr(f, "__name__", None)
        if name not in DRAWS or not (getattr(f, "__self__", None) is np.random.mtrand._rand
                                     or any(f is g for g in _GLOBAL_STREAM)):
            return None
        base = node.func.value if isinstance(node.func, ast.Attribute) else None
        if base is not None and _named(base) and \
                getattr(host.expr(base), "value", None) is np.random:
            owner, uses = host.statics.rename(base)         # np.random, npr
        else:                                              # randn imported by name
            self.module = self.module or host.fresh_internal("np_random")
            bind_values(host.free, {self.module: np.random}, host.src.where(node))
            owner, uses = ast.Name(self.module, ast.Load()), ()
        return self._emit(owner, list(uses), node, name)

    def constructor(self, f: Any, node: ast.Call) -> Var | None:
        """``np.random.default_rng(seed)``, ``np.random.RandomState(seed)``: a new generator,
        printed as written (it draws from no stream); None for anything else."""
        if not any(f is c for c in CONSTRUCTORS):
            return None
        func, uses = self.host.statics.rename(node.func)
        return self._emit(None, list(uses), node, f.__name__, func)

    def _emit(self, owner: ast.expr | None, uses: list[str], node: ast.Call,
              name: str | None = None, func: ast.expr | None = None) -> Var:
        """``random_draw(owner, 'name', ...)``: the draw, through the helper that checks its
        object when the code runs and notes the stream for the call's reruns (``func``:
        a constructor, called as it is)."""
        host = self.host
        name = name or node.func.attr
        head: list = []
        if func is None:
            self.helper = self.helper or host.fresh_internal("random_draw")
            bind_values(host.free, {self.helper: random_draw}, host.src.where(node))
            func, head = ast.Name(self.helper, ast.Load()), [owner, ast.Constant(name)]
        if any(k.arg == "out" for k in node.keywords):
            raise host.error(f".{name}(..., out=...) writes into an array in place; srcgrad "
                             "compiles the draw that returns a new array", node)
        args = list(head)
        for a in node.args:
            if isinstance(a, ast.Starred):
                args.append(ast.Starred(self._operand(host.expr(a.value), uses, a), ast.Load()))
            else:
                args.append(self._operand(host.expr(a), uses, a))
        keywords = [ast.keyword(k.arg, self._operand(host.expr(k.value), uses, k.value))
                    for k in node.keywords]
        call = ast.copy_location(ast.Call(func, args, keywords), node)
        target = host.fresh_internal(name)         # never a user's name (randn imported)
        host.static.add(target)
        params = {"draw": ast.unparse(node.func),      # as written, for refusals
                  "owner": isinstance(owner, ast.Name) and bool(uses) and
                  owner.id == uses[0]}             # its first use: the generator, no value
        result = host.emit(Stmt(target, "static", expr=ast.fix_missing_locations(call),
                                uses=tuple(dict.fromkeys(uses)), params=params))
        self.lowered[id(node)] = (node, result)
        return result

    def _operand(self, value: Any, uses: list[str], node: ast.AST) -> ast.expr:
        """A lowered argument as the expression the draw is printed with."""
        if isinstance(value, Const):
            return const_expr(value)
        if isinstance(value, Pack):
            kind = ast.List if value.is_list else ast.Tuple
            return kind([self._operand(v, uses, node) for v in value.items], ast.Load())
        if isinstance(value, Closure):
            raise self.host.error("a lambda passed to a random draw is not compiled", node)
        if isinstance(value, Tree):
            value = self.host.materialize(value, "arg")
        if isinstance(value, Var):
            uses.append(value.name)
            return ast.Name(value.name, ast.Load())
        raise self.host.error(f"srcgrad cannot pass {ast.unparse(node)} to a random draw",
                              node)


def _named(node: ast.expr) -> bool:
    """A name or a chain of attributes of one (``rs``, ``np.random``)."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name)
