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
from typing import Any

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
from srcgrad.frontend.tables import constructs as T
from srcgrad.frontend.tables.arrays import int_arithmetic
from srcgrad.frontend.tables.views import WRITING_METHODS
from srcgrad.frontend.transform_calls import lower_transform_call
from srcgrad.frontend.user_methods import Methods, user_method
from srcgrad.ir import Closure, Const, Pack, Stmt, Tree, Var, literal
from srcgrad.runtime.eager.subclasses import makes_subclass
from srcgrad.runtime.rules.primitives import NUMPY_BINDINGS, Primitive

__all__ = ["Calls"]

_is_random = is_random          # the surface table reads the compiler's own predicates here


class Calls(Methods):
    """The lowering of calls (mixed into the Lowerer)."""

    def expr_Call(self, node: ast.Call) -> Any:
        if isinstance(node.func, ast.Lambda):
            return self.lambda_call(node.func, node)
        if isinstance(node.func, ast.Attribute):
            receiver = self.new_instance(node.func.value) or self.expr(node.func.value)
            if isinstance(receiver, Tree) and receiver.kind == "dict":
                return self.dict_method(receiver, node)         # d.get('k'), d.items()
            if isinstance(receiver, Var) and receiver.name not in self.static:
                return self.method(receiver, node.func.attr, node)
            if isinstance(receiver, Const):
                bound = user_method(receiver.value, node.func.attr)
                if bound is not None:                          # model.loss(x), Cls.make(x)
                    return self.method_call(receiver, bound, node)
        fn = self.expr(node.func)
        if isinstance(fn, Closure):                            # f = lambda u: …; f(x)
            return self.lambda_call(fn.node, node)
        if isinstance(fn, Var) and fn.name in self.static:     # rng.normal(…) of a local rng
            return self.static_call(None, node, "value")
        if isinstance(fn, Var):
            fn = self.callable_default(fn, node)
        return self.call(fn, node)

    # ------------------------------------------------------------------------ calls
    def call(self, fn: Const, node: ast.Call) -> Any:
        f = generated.original(fn.value)     # a generated module's copy of a helper
        if f is not fn.value and not isinstance(f, Primitive):
            return self.static_call(fn.value, node, hint(f))     # a @helper on shapes
        if any(isinstance(a, ast.Starred) for a in node.args) or any(
                k.arg is None for k in node.keywords):
            raise self.error("srcgrad cannot compile *args/**kwargs in a call", node)
        refusal = makes_subclass(f)
        if refusal is not None:                         # np.ma.array, np.asmatrix
            raise self.error(str(refusal), node)
        if f is builtins.sum:
            return self.builtin_sum(node)
        if f is builtins.dict:
            return self.dict_call(node)
        whole = self.dict_whole(f, node)
        if whole is not None:                   # len(d), list(d), sorted(d) of a dict
            return whole
        if f is builtins.max or f is builtins.min:
            return self.builtin_extremum(f, node)
        if f is T.STOP_GRADIENT:
            return self.prim(T.lookup("stop_gradient"), [self.expr(node.args[0])], {},
                             "stopped", node)
        if f in T.EFFECTS:
            raise self.error(f"{getattr(f, '__name__', f)}() is used for its value", node)
        if f in T.MATH or f in T.BUILTIN_MATH:
            target = T.MATH.get(f) or T.BUILTIN_MATH[f]
            args = [self.expr(a) for a in node.args]
            if all(self.is_static(a) for a in args):
                return self.static_expr(node)
            nin = getattr(target, "nin", len(args))
            if len(args) != nin or node.keywords:         # math.log(x, base), hypot(x, y, z)
                tip = " (write math.log(x) / math.log(base))" if f is math.log else ""
                raise self.error(f"{qualname(f)}() is compiled with {nin} argument(s){tip}",
                                 node)
            return self.numpy_call(target, args, {}, node)
        label = hint(f)
        value_call = _lookup(T.VALUE_CALLS, f)
        if value_call is not None:
            return value_call(self, f, node)
        if _lookup(T.NONDIFF_CALLS, f) is not None:
            self.refuse_out(f, node.args, node)
            return self.static_expr(node, hint=label)
        if _static_when_constant(f):
            return self.static_call(f, node, label)
        if is_transform(f):
            return lower_transform_call(self, f, node)
        if isinstance(f, Primitive) or f in NUMPY_BINDINGS or isinstance(f, np.ufunc) or \
                f in T.SPECIAL_CALLS:
            args = [self.expr(a) for a in node.args]
            kwargs = {k.arg: k.value for k in node.keywords}
            return self.numpy_call(f, args, kwargs, node)
        if isinstance(f, (types.FunctionType, types.MethodType)):
            if not is_library(f):
                return self.helper_call(fn, node)
            return self.static_call(f, node, label, refusal=(   # np.hanning(n): plain Python
                f"srcgrad has no derivative rule for {qualname(f)}; register one with "
                "srcgrad.defvjp"))
        raise self.error(f"srcgrad has no derivative rule for {qualname(f)}; register one "
                         "with srcgrad.defvjp", node)

    def refuse_out(self, f: Any, args: list, node: ast.Call) -> None:
        """Refuse ``np.round(x, 1, y)``: an output argument, given by position too, writes
        into an array in place (a keyword ``out=`` is refused by the alias analysis)."""
        try:
            bound = bind_call(self, f, args, {k.arg: k.value for k in node.keywords}, node)
        except CompileError:
            return                                 # NumPy raises the same when it runs
        out = bound.get("out")
        if out is not None and not (isinstance(out, ast.Constant) and out.value is None):
            raise self.error(f"{qualname(f)}(..., out=...) writes into an array in place; "
                             "srcgrad compiles the call that returns a new array", node)

    def carries(self, value: Any) -> bool:
        """Whether ``value`` may carry a gradient (anything but a constant or a static)."""
        if isinstance(value, Const):
            return False
        if isinstance(value, Pack):
            return any(self.carries(v) for v in value.items)
        if isinstance(value, Var):
            return value.name not in self.static
        return True                                # a pytree argument

    def static_call(self, f: Any, node: ast.Call, hint: str, refusal: str | None = None
                    ) -> Var:
        """A call printed as plain Python, when no argument carries a gradient; refused
        otherwise (a class, a random draw, ``zip``, ``np.arange``, a library's function with
        no rule …: srcgrad does not follow a gradient through them), with ``refusal`` if
        given."""
        try:
            values = [self.expr(a.value if isinstance(a, ast.Starred) else a)
                      for a in node.args] + [self.expr(k.value) for k in node.keywords]
        except CompileError:
            values = None
        if values is None:
            values = [Var(n) for n in _names(node, self.scope)
                      if self.carries(self.scope[n])]
        if any(self.carries(v) for v in values):
            if refusal is not None:
                raise self.error(refusal, node)
            written = ast.unparse(node.func)
            if is_random(f) or f is None and draws(node):
                raise self.error(f"{written}(...) with an argument that carries a gradient is "
                                 "not compiled (a random draw: srcgrad does not follow a "
                                 "gradient through it)", node)
            what = f"{written}() (a value computed at run time)" if f is None \
                else f"{qualname(f)}()"
            if f is None and isinstance(node.func, ast.Attribute) and isinstance(
                    node.func.value, ast.Call):
                what = (f"{written}() (a method of an object made when the code runs: "
                        "srcgrad compiles the methods of globals, closure variables and "
                        "objects of a class without __init__ made with no arguments)")
            raise self.error(f"{what} with an argument that carries a gradient is not compiled "
                             "(srcgrad does not follow a gradient through it)", node)
        return self.static_expr(node, hint=hint)

    def builtin_extremum(self, f: Any, node: ast.Call) -> Any:
        """``max(a, b, …)``/``min(…)`` of values, or of one list or tuple literal: the
        elementwise ``np.maximum``/``np.minimum``, one pair at a time."""
        if node.keywords:
            raise self.error(f"{f.__name__}() with keyword arguments is not compiled", node)
        args = [self.expr(a) for a in node.args]
        if len(args) == 1 and isinstance(args[0], Pack) and len(args[0].items) == 1:
            return args[0].items[0]                   # max([v]) is v
        if len(args) == 1 and isinstance(args[0], Pack):
            args = args[0].items
        elif len(args) == 1 and isinstance(args[0], Var) and not self.is_static(args[0]):
            return self.chosen_item(f, args[0], node)
        if len(args) < 2:
            raise self.error(f"{f.__name__}() is compiled for two or more values (or a list "
                             "literal of them)", node)
        if all(self.is_static(a) for a in args):
            return self.static_expr(node, hint=f.__name__)
        pairwise = np.maximum if f is builtins.max else np.minimum
        result = args[0]
        for other in args[1:]:
            result = self.numpy_call(pairwise, [result, other], {}, node)
        return result

    def chosen_item(self, f: Any, items: Var, node: ast.AST) -> Var:
        """``max(xs)`` of a list built at run time (a generator) or of an array's rows: the
        item Python picks, found when the code runs by Python's own comparisons (the first
        largest; NumPy raises for items of several elements, and max() for no items, as
        they would), then read with its gradient."""
        name = ast.Name(items.name, ast.Load())
        pick = ast.Call(ast.Name(f.__name__, ast.Load()), [ast.Call(
            ast.Name("range", ast.Load()), [ast.Call(ast.Name("len", ast.Load()), [name], [])],
            [])], [ast.keyword("key", ast.Attribute(name, "__getitem__", ast.Load()))])
        index = self.fresh(f"{f.__name__}_at")
        self.static.add(index)
        self.emit(Stmt(index, "static", expr=pick, uses=(items.name,)))
        self.inline.add(index)
        if self.is_runtime_list(items):
            return self.emit(Stmt(self.fresh(f"{items.name}_{f.__name__}"), "listget",
                                  args=[items], params={"index": Var(index)}, uses=(index,)))
        return self.prim(T.lookup("getitem"), [items], {"index": Var(index)},
                         f"{items.name}_{f.__name__}", node)

    def numpy_call(self, f: Any, args: list, kwargs: dict, node: ast.AST) -> Any:
        if f is np.power and len(args) == 2 and not kwargs and isinstance(args[1], Const) \
                and type(args[1].value) in (int, float):      # pow(x, 2) is x ** 2
            base = self.materialize(args[0], "t")
            return self.prim(T.lookup("pow_scalar"), [base], {"p": args[1].value},
                             T.name_of(base, "pow"), node)
        special = T.SPECIAL_CALLS.get(f)
        if special is not None:
            return special(self, args, kwargs, node)
        prim = f if isinstance(f, Primitive) else NUMPY_BINDINGS[f][0] \
            if f in NUMPY_BINDINGS else None
        if prim is None:
            raise self.error(f"srcgrad has no derivative rule for {qualname(f)}", node)
        if isinstance(f, Primitive):                # inputs, then keyword parameters
            inputs, params = args, {k: self.param(v) for k, v in kwargs.items()}
        elif isinstance(f, np.ufunc):
            if len(args) > f.nin or "out" in kwargs:
                raise self.error(f"{qualname(f)}() with an output argument writes into an "
                                 "array in place; srcgrad compiles the plain call "
                                 f"(y = {f.__name__}(...))", node)
            if kwargs:
                raise self.error(f"keyword arguments to {qualname(f)} are not supported", node)
            inputs, params = args, {}
        else:
            inputs, params = self.bind(f, prim, args, kwargs, node)
        inputs = [self.materialize(a, "t") for a in inputs]
        return self.prim(prim, inputs, params, T.call_name(prim, inputs), node)

    def bind(self, f: Any, prim: Primitive, args: list, kwargs: dict, node: ast.AST) -> tuple:
        """Split a NumPy call into inputs and static parameters, by NumPy's signature."""
        bound = bind_call(self, f, args, kwargs, node)
        out = bound.get("out")
        if out is not None and not (isinstance(out, Const) and out.value is None) and not (
                isinstance(out, ast.Constant) and out.value is None):
            raise self.error(f"{qualname(f)}(..., out=...) writes into an array in place; "
                             "srcgrad compiles the call that returns a new array", node)
        items = list(bound.items())
        inputs = [self.expr(v) if isinstance(v, ast.AST) else v   # an input given by keyword
                  for _, v in items[:prim.nin]]
        known = prim.param_names()
        params = {}
        for name, value in items[prim.nin:]:
            if isinstance(value, ast.AST):
                value = self.param(value)
            elif isinstance(value, Pack):
                value = self.pack_param(value, node)
            if known is not None and name not in known:
                if isinstance(value, Const) and value.value is None:
                    continue
                raise self.error(f"{qualname(f)}(): argument {name!r} is not supported", node)
            params[name] = value
        return inputs, params

    def pack_param(self, pack: Pack, node: ast.AST) -> Any:
        """A tuple or list literal as a static parameter: its value, or a static name."""
        if self.carries(pack):
            raise self.error("a shape, axis or index that carries a gradient is not compiled",
                             node)
        if all(isinstance(v, Const) and literal(v.value) for v in pack.items):
            items = [v.value for v in pack.items]
            return items if pack.is_list else tuple(items)
        target = self.fresh("shape")
        saved = self.scope.get("__pack__")
        self.scope["__pack__"] = pack
        try:
            expr, uses = self.rename(ast.Name("__pack__", ast.Load()))
        finally:
            self.scope.pop("__pack__")
            if saved is not None:
                self.scope["__pack__"] = saved
        self.static.add(target)
        return self.emit(Stmt(target, "static", expr=expr, uses=uses))

    def param(self, node: ast.expr) -> Any:
        """A static parameter: a Python literal, a named constant (a Const), or a Var."""
        try:
            return ast.literal_eval(node)
        except (ValueError, SyntaxError):
            folded = int_arithmetic(node)           # x.reshape(5 * 4, 6)
            if folded is not None:
                return folded
            return self.static_param(self.expr(node), node)

    def static_param(self, value: Any, node: ast.expr) -> Any:
        """A lowered static argument (written ``node``) as a primitive's parameter."""
        if isinstance(value, Const):
            return value.value if literal(value.value) else value
        if isinstance(value, Pack):
            return self.static_expr(node)
        return value

    def method(self, receiver: Var, name: str, node: ast.Call) -> Any:
        if self.is_runtime_list(receiver):
            raise self.error(f"srcgrad compiles a list's .append as a statement of its own; "
                             f"list.{name}() here is not compiled", node)
        if name in WRITING_METHODS or any(k.arg == "out" for k in node.keywords):
            raise self.error(f"the array method .{name}() here writes into an array in place, "
                             "which srcgrad does not compile (use the function that returns a "
                             "new array)", node)
        spec = T.METHODS.get(name)
        if spec is None and name in ("get", "keys", "values", "items") and \
                self.unknown_dict(receiver, node):
            # the code for array arguments (an array has no .get): a dict argument's code is
            # compiled at the call, from its structure
            self._raise_at_run_time(node, f"srcgrad compiles .{name}() of a dict argument "
                                    "for a differentiated (wrt) argument only")
            return receiver
        if spec is None:
            what = ast.unparse(node.func.value)
            raise self.error(f"srcgrad cannot compile {what}.{name}(): .{name}() is not an "
                             f"ndarray method it compiles, and {what} is a value known only "
                             "when the code runs (a method of an object is compiled when the "
                             "object is a global, a closure variable or self of the method "
                             "differentiated; not of an object passed as an argument)", node)
        f, varargs = spec
        if _lookup(T.NONDIFF_CALLS, f) is not None:        # x.all(), x.round(): no gradient
            self.refuse_out(f, [node.func.value, *node.args], node)
            return self.static_expr(node, hint=name)
        args = [self.param(a) if i or varargs else self.expr(a) for i, a in enumerate(node.args)]
        if varargs and len(node.args) > 1:
            args = [tuple(args)]                   # x.reshape(2, 3) is np.reshape(x, (2, 3))
        kwargs = {k.arg: k.value for k in node.keywords}
        if f is None:                               # .astype(dtype), .item(), .copy()
            return T.method_special(self, name, receiver, args, kwargs, node)
        return self.numpy_call(f, [receiver, *[_as_const(a) for a in args]], kwargs, node)

    # ------------------------------------------------------------------- primitives
    def prim(self, f: Any, inputs: list, params: dict, hint: str, node: ast.AST) -> Var:
        prim = f if isinstance(f, Primitive) else NUMPY_BINDINGS[f][0]
        inputs = [self.materialize(a, "t") for a in inputs]
        for a in inputs:
            if self.tuple_items(a) is not None:
                raise self.error("a tuple returned by a helper is used as an array here; "
                                 "unpack it (a, b = helper(x)) or index it with a constant",
                                 node)
        uses = tuple(v.name for v in params.values() if isinstance(v, Var))
        for k, v in params.items():
            if isinstance(v, Const) and getattr(v, "expr", None) is None and not literal(
                    v.value):
                raise self.error(f"the parameter {k} of {prim.name} must be a literal or a "
                                 "named value", node)
        target = self.fresh(hint)
        return self.emit(Stmt(target, "prim", fn=prim, args=inputs, params=params, uses=uses))


def _as_const(value: Any) -> Any:
    return value if isinstance(value, (Var, Const, Pack)) else Const(value)


def _static_when_constant(f: Any) -> bool:
    """Static when every argument is: the allow-list, classes, random draws."""
    return _lookup(T.STATIC_WHEN_CONSTANT, f) is not None or isinstance(f, type) or \
        is_random(f)


def _names(node: ast.AST, scope: dict) -> list[str]:
    return [n.id for n in ast.walk(node) if isinstance(n, ast.Name) and n.id in scope]
