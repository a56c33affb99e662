"""Calls lowered: NumPy and ``math`` functions, array methods, primitives.

A NumPy call is split by NumPy's own signature into the primitive's inputs and its static
parameters; a call of another user function becomes a ``call`` statement
(:mod:`srcgrad.frontend.user_calls`); anything without a rule raises a CompileError naming it, the
Python functions of NumPy, SciPy, other installed libraries and the standard library included
(their source is not the user's code to transform: :mod:`srcgrad.frontend.callees`).
"""

from __future__ import annotations

import ast
import builtins
import math
import types
from typing import Any, Protocol

import numpy as np

from srcgrad.errors import CompileError
from srcgrad.frontend import generated_helpers as generated
from srcgrad.frontend.callees import (
    bind_call,
    draws,
    hint,
    is_library,
    is_random,
    is_transform,
    qualname,
)
from srcgrad.frontend.callees import table_get as _lookup
from srcgrad.frontend.dicts import Dicts
from srcgrad.frontend.functional import Bound, call_bound, functional_call
from srcgrad.frontend.iteration import Iteration
from srcgrad.frontend.lists import Lists
from srcgrad.frontend.local_objects import construct, constructible
from srcgrad.frontend.object_writes import refuse_method, refuse_out_into, refuse_passed
from srcgrad.frontend.objects import ArgumentObjects, callable_object
from srcgrad.frontend.primitives import Primitives
from srcgrad.frontend.randomness import Randomness
from srcgrad.frontend.starred import has_starred, spelled_out
from srcgrad.frontend.statics import Statics
from srcgrad.frontend.super_calls import super_method
from srcgrad.frontend.tables import constructs as T
from srcgrad.frontend.tables.scipy_specs import no_gradient_reason
from srcgrad.frontend.tables.views import WRITING_METHODS
from srcgrad.frontend.transform_calls import lower_transform_call
from srcgrad.frontend.user_calls import UserCalls
from srcgrad.frontend.user_methods import user_method
from srcgrad.ir import Closure, Const, Pack, Stmt, Tree, Var
from srcgrad.runtime.rules.primitives import NUMPY_BINDINGS, Primitive
from srcgrad.runtime.subclasses import makes_subclass

__all__ = ["Calls"]

_is_random = is_random          # the surface table reads the compiler's own predicates here


class Host(Protocol):
    """What the lowering of calls reads of, and asks of, the lowerer that holds it.  The names
    in scope change as lowering goes on (a helper lowered in place swaps them): they are read
    here when needed, never kept."""

    scope: dict[str, Any]
    static: set[str]                   # SSA names of values with no gradient
    inline: set[str]                   # SSA names printed in place
    lists: Lists
    dicts: Dicts
    user_calls: UserCalls
    iteration: Iteration
    prims: Primitives
    statics: Statics
    randomness: Randomness
    objects: ArgumentObjects           # objects passed as arguments

    def expr(self, node: ast.expr) -> Any: ...

    def emit(self, stmt: Stmt) -> Var: ...

    def fresh(self, base: str) -> str: ...

    def error(self, message: str, node: ast.AST) -> CompileError: ...


class Calls:
    """The lowering of calls; the lowerer's ``calls``.  A call lowered by a table
    (:mod:`srcgrad.frontend.tables`) or in place (:mod:`srcgrad.frontend.transform_calls`) is
    handed the host whole."""

    def __init__(self, host: Host) -> None:
        self.host = host

    def lower(self, node: ast.Call) -> Any:
        host = self.host
        drawn = host.randomness.lower(node)      # rs.randn(*x.shape), np.random.seed(k)
        if drawn is not None:
            return drawn
        if has_starred(node):                             # f(*xs, **d) of known structure
            with spelled_out(host, node) as plain:
                if plain is None:                  # raises if it runs: no value is read
                    return host.expr(next(a.value for a in [*node.args, *node.keywords]
                                          if isinstance(a, ast.Starred) or
                                          isinstance(a, ast.keyword) and a.arg is None))
                return self.lower(plain)
        if isinstance(node.func, ast.Lambda):
            return host.user_calls.lambda_call(node.func, node)
        refuse_out_into(host, node)                # out=o.W: the caller's object
        if isinstance(node.func, ast.Attribute):
            above = super_method(host, node.func, node)          # super().__init__(name)
            if above is not None:
                return Const(None) if above[1] is None else \
                    host.objects.call(above[0], above[1], node)
            receiver = host.user_calls.new_instance(node.func.value) or host.expr(node.func.value)
            if isinstance(receiver, Tree) and receiver.kind == "dict":
                return host.dicts.method(receiver, node)         # d.get('k'), d.items()
            method = host.objects.method(receiver, node.func.attr)
            if method is not None:                             # obj.forward(x), an argument
                return host.objects.call(receiver, method, node)
            if not (isinstance(receiver, Const) and user_method(receiver.value, node.func.attr)):
                refuse_method(host, node)          # o.W.sort(): the caller's object
            if isinstance(receiver, Var) and receiver.name not in host.static:
                return self.method(receiver, node.func.attr, node)
            if isinstance(receiver, Const):
                bound = user_method(receiver.value, node.func.attr)
                if bound is not None:                          # model.loss(x), Cls.make(x)
                    return host.user_calls.method_call(receiver, bound, node)
        fn = host.expr(node.func)
        if isinstance(fn, Const) and (call := callable_object(fn.value)) is not None:
            return host.user_calls.method_call(fn, call, node)    # model(x): its __call__
        if isinstance(fn, Bound):                              # partial(f, a)(x)
            return call_bound(host, fn, node)
        if isinstance(fn, Closure):                            # f = lambda u: …; f(x)
            return host.user_calls.lambda_call(fn.node, node, fn)
        if host.objects.method(fn, "__call__") is not None:       # an object's __call__
            return host.objects.call(fn, host.objects.method(fn, "__call__"), node)
        if isinstance(fn, Var) and fn.name in host.static:     # rng.normal(…) of a local rng
            try:
                return self.static_call(None, node, "value")
            except CompileError as exc:                # an object's method, at the call
                method = isinstance(node.func, ast.Attribute)
                owner = host.statics.peek(node.func.value) if method else fn
                raise host.objects.defer(owner, exc, node.func.attr if method else None) \
                    from None
        if isinstance(fn, Var):
            try:
                fn = host.user_calls.callable_default(fn, node)
            except CompileError as exc:                # an object's __call__, at the call
                raise host.objects.defer(fn, exc) from None
        return self.call(fn, node)

    # ------------------------------------------------------------------------ calls
    def call(self, fn: Const, node: ast.Call) -> Any:
        host = self.host
        made = functional_call(host, fn.value, node)        # map, zip, reduce, partial
        if made is not None:
            return made
        f = generated.original(fn.value)     # a generated module's copy of a helper
        if f is not fn.value and not isinstance(f, Primitive):
            return self.static_call(fn.value, node, hint(f))     # a @helper on shapes
        if any(isinstance(a, ast.Starred) for a in node.args) or any(
                k.arg is None for k in node.keywords):
            raise host.error("srcgrad cannot compile *args/**kwargs in a call", node)
        refusal = makes_subclass(f)
        if refusal is not None:                         # np.ma.array, np.asmatrix
            raise host.error(str(refusal), node)
        if f is builtins.sum:
            return host.lists.builtin_sum(node)
        if f is builtins.dict:
            return host.dicts.call(node)
        whole = host.dicts.whole(f, node)
        if whole is not None:                   # len(d), list(d), sorted(d) of a dict
            return whole
        if f is builtins.max or f is builtins.min:
            return self.builtin_extremum(f, node)
        if f is T.STOP_GRADIENT:
            return host.prims.prim(T.lookup("stop_gradient"), [host.expr(node.args[0])], {},
                                   "stopped", node)
        if f in T.EFFECTS:
            raise host.error(f"{getattr(f, '__name__', f)}() is used for its value", node)
        if f in T.MATH or f in T.BUILTIN_MATH:
            target = T.MATH.get(f) or T.BUILTIN_MATH[f]
            args = [host.expr(a) for a in node.args]
            if all(host.statics.is_static(a) for a in args):
                return host.statics.static_expr(node)
            nin = getattr(target, "nin", len(args))
            if len(args) != nin or node.keywords:         # math.log(x, base), hypot(x, y, z)
                tip = " (write math.log(x) / math.log(base))" if f is math.log else ""
                raise host.error(f"{qualname(f)}() is compiled with {nin} argument(s){tip}",
                                 node)
            return host.prims.numpy_call(target, args, {}, node)
        label = hint(f)
        value_call = _lookup(T.VALUE_CALLS, f)
        if value_call is not None:
            return value_call(host, f, node)
        if _lookup(T.NONDIFF_CALLS, f) is not None or no_gradient_reason(f) is not None:
            self.refuse_out(f, node.args, node)
            return host.statics.static_expr(node, hint=label)
        if constructible(f):                            # Dense(W, b): followed when compiling
            return construct(host, f, node)
        if _static_when_constant(f):
            return self.static_call(f, node, label)
        if is_transform(f):
            return lower_transform_call(host, f, node)
        if isinstance(f, Primitive) or f in NUMPY_BINDINGS or isinstance(f, np.ufunc) or \
                f in T.SPECIAL_CALLS:
            args = [host.expr(a) for a in node.args]
            kwargs = {k.arg: k.value for k in node.keywords}
            return host.prims.numpy_call(f, args, kwargs, node)
        if isinstance(f, (types.FunctionType, types.MethodType)):
            if not is_library(f):
                return host.user_calls.helper_call(fn, node)
            return self.static_call(f, node, label, refusal=_no_rule(f))   # np.hanning(n)
        raise host.error(f"srcgrad has no derivative rule for {qualname(f)}; register one "
                         "with srcgrad.defvjp", node)

    def refuse_out(self, f: Any, args: list, node: ast.Call) -> None:
        """Refuse ``np.round(x, 1, y)``: an output argument, given by position too, writes
        into an array in place (a keyword ``out=`` is refused by the alias analysis)."""
        host = self.host
        try:
            bound = bind_call(host, f, args, {k.arg: k.value for k in node.keywords}, node)
        except CompileError:
            return                                 # NumPy raises the same when it runs
        out = bound.get("out")
        if out is not None and not (isinstance(out, ast.Constant) and out.value is None):
            raise host.error(f"{qualname(f)}(..., out=...) writes into an array in place; "
                             "srcgrad compiles the call that returns a new array", node)

    def static_call(self, f: Any, node: ast.Call, hint: str, refusal: str | None = None
                    ) -> Var:
        """A call printed as plain Python, when no argument carries a gradient; refused
        otherwise (a class, a random draw, ``zip``, ``np.arange``, a library's function with
        no rule …: srcgrad does not follow a gradient through them), with ``refusal`` if
        given."""
        host = self.host
        try:
            values = [host.expr(a.value if isinstance(a, ast.Starred) else a)
                      for a in node.args] + [host.expr(k.value) for k in node.keywords]
        except CompileError:
            values = None
        if values is None:
            values = [Var(n) for n in _names(node, host.scope)
                      if host.prims.carries(host.scope[n])]
        if any(host.prims.carries(v) for v in values):
            if refusal is not None:
                raise host.error(refusal, node)
            written = ast.unparse(node.func)
            if is_random(f) or f is None and draws(node):
                raise host.error(f"{written}(...) with an argument that carries a gradient is "
                                 "not compiled (a random draw: srcgrad does not follow a "
                                 "gradient through it)", node)
            what = f"{written}() (a value computed at run time)" if f is None \
                else f"{qualname(f)}()"
            if f is None and isinstance(node.func, ast.Attribute) and isinstance(
                    node.func.value, ast.Call):
                what = (f"{written}() (a method of an object made when the code runs: "
                        "srcgrad compiles the methods of globals, closure variables and "
                        "objects of a class without __init__ made with no arguments)")
            raise host.error(f"{what} with an argument that carries a gradient is not compiled "
                             "(srcgrad does not follow a gradient through it)", node)
        refuse_passed(host, f, node)           # zero(o.W): it may change the caller's array
        return host.statics.static_expr(node, hint=hint)

    def builtin_extremum(self, f: Any, node: ast.Call) -> Any:
        """``max(a, b, …)``/``min(…)`` of values, or of one list or tuple literal: the
        elementwise ``np.maximum``/``np.minimum``, one pair at a time."""
        host = self.host
        if node.keywords:
            raise host.error(f"{f.__name__}() with keyword arguments is not compiled", node)
        args = [host.expr(a) for a in node.args]
        if len(args) == 1 and isinstance(args[0], Pack) and len(args[0].items) == 1:
            return args[0].items[0]                   # max([v]) is v
        if len(args) == 1 and isinstance(args[0], Pack):
            args = args[0].items
        elif len(args) == 1 and isinstance(args[0], Var) and not host.statics.is_static(args[0]):
            return self.chosen_item(f, args[0], node)
        if len(args) < 2:
            raise host.error(f"{f.__name__}() is compiled for two or more values (or a list "
                             "literal of them)", node)
        if all(host.statics.is_static(a) for a in args):
            return host.statics.static_expr(node, hint=f.__name__)
        pairwise = np.maximum if f is builtins.max else np.minimum
        result = args[0]
        for other in args[1:]:
            result = host.prims.numpy_call(pairwise, [result, other], {}, node)
        return result

    def chosen_item(self, f: Any, items: Var, node: ast.AST) -> Var:
        """``max(xs)`` of a list built at run time (a generator) or of an array's rows: the
        item Python picks, found when the code runs by Python's own comparisons (the first
        largest; NumPy raises for items of several elements, and max() for no items, as
        they would), then read with its gradient."""
        host = self.host
        name = ast.Name(items.name, ast.Load())
        pick = ast.Call(ast.Name(f.__name__, ast.Load()), [ast.Call(
            ast.Name("range", ast.Load()), [ast.Call(ast.Name("len", ast.Load()), [name], [])],
            [])], [ast.keyword("key", ast.Attribute(name, "__getitem__", ast.Load()))])
        index = host.fresh(f"{f.__name__}_at")
        host.static.add(index)
        host.emit(Stmt(index, "static", expr=pick, uses=(items.name,)))
        host.inline.add(index)
        if host.lists.is_runtime_list(items):
            return host.emit(Stmt(host.fresh(f"{items.name}_{f.__name__}"), "listget",
                                  args=[items], params={"index": Var(index)}, uses=(index,)))
        return host.prims.prim(T.lookup("getitem"), [items], {"index": Var(index)},
                               f"{items.name}_{f.__name__}", node)

    def method(self, receiver: Var, name: str, node: ast.Call) -> Any:
        host = self.host
        if host.lists.is_runtime_list(receiver):
            raise host.error(f"srcgrad compiles a list's .append as a statement of its own; "
                             f"list.{name}() here is not compiled", node)
        if name in WRITING_METHODS or any(k.arg == "out" for k in node.keywords):
            raise host.error(f"the array method .{name}() here writes into an array in place, "
                             "which srcgrad does not compile (use the function that returns a "
                             "new array)", node)
        spec = T.METHODS.get(name)
        if spec is None and name in ("get", "keys", "values", "items") and \
                host.dicts.unknown(receiver, node):
            # the code for array arguments (an array has no .get): a dict argument's code is
            # compiled at the call, from its structure
            host.iteration.raise_at_run_time(node, f"srcgrad compiles .{name}() of a dict "
                                             "argument for a differentiated (wrt) argument only")
            return receiver
        if spec is None:
            what = ast.unparse(node.func.value)
            raise host.objects.defer(receiver, host.error(
                f"srcgrad cannot compile {what}.{name}(): .{name}() is not an ndarray method "
                f"it compiles, and {what} is a value computed when the code runs (a method of "
                "an object is compiled for a global, a closure variable, an argument or an "
                "object known when compiling)", node), name)
        f, varargs = spec
        if _lookup(T.NONDIFF_CALLS, f) is not None:        # x.all(), x.round(): no gradient
            self.refuse_out(f, [node.func.value, *node.args], node)
            return host.statics.static_expr(node, hint=name)
        args = [host.prims.param(a) if i or varargs else host.expr(a)
                for i, a in enumerate(node.args)]
        if varargs and len(node.args) > 1:        # x.reshape(2, 3) is np.reshape(x, (2, 3))
            args = [Pack([_as_const(a) for a in args]) if any(
                isinstance(a, (Var, Const, Pack)) for a in args) else tuple(args)]
        kwargs = {k.arg: k.value for k in node.keywords}
        if f is None:                               # .astype(dtype), .item(), .copy()
            return T.method_special(host, name, receiver, args, kwargs, node)
        return host.prims.numpy_call(f, [receiver, *[_as_const(a) for a in args]], kwargs, node)


def _no_rule(f: Any) -> str:
    """Why a library function without a rule is refused when a gradient reaches it; SciPy's
    ODE solvers say how they are differentiated instead."""
    if (getattr(f, "__module__", None) or "").startswith("scipy.integrate") and \
            getattr(f, "__name__", None) in ("odeint", "solve_ivp"):
        return (f"scipy.integrate.{f.__name__}: differentiated in default mode by the adjoint "
                "method; strict mode does not compile it")
    return f"srcgrad has no derivative rule for {qualname(f)}; register one with srcgrad.defvjp"


def _as_const(value: Any) -> Any:
    return value if isinstance(value, (Var, Const, Pack)) else Const(value)


def _static_when_constant(f: Any) -> bool:
    """Static when every argument is: the allow-list, classes, random draws."""
    return _lookup(T.STATIC_WHEN_CONSTANT, f) is not None or isinstance(f, type) or \
        is_random(f)


def _names(node: ast.AST, scope: dict) -> list[str]:
    return [n.id for n in ast.walk(node) if isinstance(n, ast.Name) and n.id in scope]
