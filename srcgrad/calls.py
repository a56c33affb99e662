"""Calls lowered: NumPy and ``math`` functions, array methods, user functions, primitives.

A NumPy call is split by NumPy's own signature into the primitive's inputs and its static
parameters; a call of another user function becomes a ``call`` statement (that function is
transformed in its turn); anything without a rule raises a CompileError naming it, the Python
functions of NumPy, SciPy, other installed libraries and the standard library included (their
source is not the user's code to transform).
"""

from __future__ import annotations

import ast
import builtins
import inspect
import pathlib
import sys
import sysconfig
import types
from typing import Any

import numpy as np

from srcgrad import lowering_tables as T
from srcgrad.aliases import WRITING_METHODS
from srcgrad.errors import CompileError
from srcgrad.expressions import Closure, Pack, Tree
from srcgrad.inline import inline_call, lambda_call
from srcgrad.ir import Const, Stmt, Var
from srcgrad.runtime.primitives import NUMPY_BINDINGS, Primitive

__all__ = ["Calls"]


class Calls:
    """The lowering of calls (mixed into the Lowerer)."""

    def expr_Call(self, node: ast.Call) -> Any:
        if isinstance(node.func, ast.Lambda):
            return self.lambda_call(node.func, node)
        if isinstance(node.func, ast.Attribute):
            receiver = self.expr(node.func.value)
            if isinstance(receiver, Var) and receiver.name not in self.static:
                return self.method(receiver, node.func.attr, node)
        fn = self.expr(node.func)
        if isinstance(fn, Closure):                            # f = lambda u: …; f(x)
            return self.lambda_call(fn.node, node)
        if isinstance(fn, Var) and fn.name in self.static:     # rng.normal(…) of a local rng
            return self.static_call(None, node, "value")
        if not isinstance(fn, Const):
            raise self.error("srcgrad compiles calls of functions it can see when compiling",
                             node.func)
        return self.call(fn, node)

    def lambda_call(self, fn: ast.Lambda, node: ast.Call) -> Any:
        return lambda_call(self, fn, node)

    # ------------------------------------------------------------------------ calls
    def call(self, fn: Const, node: ast.Call) -> Any:
        f = fn.value
        if any(isinstance(a, ast.Starred) for a in node.args) or any(
                k.arg is None for k in node.keywords):
            raise self.error("srcgrad cannot compile *args/**kwargs in a call", node)
        if f is builtins.sum:
            return self.builtin_sum(node)
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
            return self.numpy_call(target, args, {}, node)
        hint = _hint(f)
        value_call = _lookup(T.VALUE_CALLS, f)
        if value_call is not None:
            return value_call(self, f, node)
        if _lookup(T.NONDIFF_CALLS, f) is not None:
            self.refuse_out(f, node.args, node)
            return self.static_expr(node, hint=hint)
        if _static_when_constant(f):
            return self.static_call(f, node, hint)
        if _is_transform(f):
            raise self.error(f"{_qualname(f)} is a srcgrad transform: higher-order derivatives "
                             "(grad of grad) are not compiled yet", node)
        if isinstance(f, Primitive) or f in NUMPY_BINDINGS or isinstance(f, np.ufunc) or \
                f in T.SPECIAL_CALLS:
            args = [self.expr(a) for a in node.args]
            kwargs = {k.arg: k.value for k in node.keywords}
            return self.numpy_call(f, args, kwargs, node)
        if isinstance(f, (types.FunctionType, types.MethodType)):
            if not _is_library(f):
                return self.user_call(fn, node)
            return self.static_call(f, node, hint, refusal=(   # np.hanning(n): plain Python
                f"srcgrad has no derivative rule for {_qualname(f)}; register one with "
                "srcgrad.defvjp"))
        raise self.error(f"srcgrad has no derivative rule for {_qualname(f)}; register one "
                         "with srcgrad.defvjp", node)

    def refuse_out(self, f: Any, args: list, node: ast.Call) -> None:
        """Refuse ``np.round(x, 1, y)``: an output argument, given by position too, writes
        into an array in place (a keyword ``out=`` is refused by the alias analysis)."""
        try:
            bound = inspect.signature(f).bind(*args, **{k.arg: k.value for k in node.keywords})
        except (TypeError, ValueError):
            return                                 # NumPy raises the same when it runs
        out = bound.arguments.get("out")
        if out is not None and not (isinstance(out, ast.Constant) and out.value is None):
            raise self.error(f"{_qualname(f)}(..., out=...) writes into an array in place; "
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
            if _is_random(f) or f is None and _draws(node):
                raise self.error(f"{written}(...) with an argument that carries a gradient is "
                                 "not compiled (a random draw: srcgrad does not follow a "
                                 "gradient through it)", node)
            what = f"{written}() (a value computed at run time)" if f is None \
                else f"{_qualname(f)}()"
            raise self.error(f"{what} with an argument that carries a gradient is not compiled "
                             "(srcgrad does not follow a gradient through it)", node)
        return self.static_expr(node, hint=hint)

    def builtin_extremum(self, f: Any, node: ast.Call) -> Any:
        """``max(a, b, …)``/``min(…)`` of values, or of one list or tuple literal: the
        elementwise ``np.maximum``/``np.minimum``, one pair at a time."""
        if node.keywords:
            raise self.error(f"{f.__name__}() with keyword arguments is not compiled", node)
        args = [self.expr(a) for a in node.args]
        if len(args) == 1 and isinstance(args[0], Pack):
            args = args[0].items
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
            raise self.error(f"srcgrad has no derivative rule for {_qualname(f)}", node)
        if isinstance(f, Primitive):                # inputs, then keyword parameters
            inputs, params = args, {k: self.param(v) for k, v in kwargs.items()}
        elif isinstance(f, np.ufunc):
            if len(args) > f.nin or "out" in kwargs:
                raise self.error(f"{_qualname(f)}() with an output argument writes into an "
                                 "array in place; srcgrad compiles the plain call "
                                 f"(y = {f.__name__}(...))", node)
            if kwargs:
                raise self.error(f"keyword arguments to {_qualname(f)} are not supported", node)
            inputs, params = args, {}
        else:
            inputs, params = self.bind(f, prim, args, kwargs, node)
        inputs = [self.materialize(a, "t") for a in inputs]
        return self.prim(prim, inputs, params, T.call_name(prim, inputs), node)

    def bind(self, f: Any, prim: Primitive, args: list, kwargs: dict, node: ast.AST) -> tuple:
        """Split a NumPy call into inputs and static parameters, by NumPy's signature."""
        try:
            bound = inspect.signature(f).bind(*args, **kwargs).arguments
        except TypeError as exc:
            raise self.error(f"{_qualname(f)}(): {exc}", node) from None
        out = bound.get("out")
        if out is not None and not (isinstance(out, Const) and out.value is None) and not (
                isinstance(out, ast.Constant) and out.value is None):
            raise self.error(f"{_qualname(f)}(..., out=...) writes into an array in place; "
                             "srcgrad compiles the call that returns a new array", node)
        items = list(bound.items())
        inputs = [v for _, v in items[:prim.nin]]
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
                raise self.error(f"{_qualname(f)}(): argument {name!r} is not supported", node)
            params[name] = value
        return inputs, params

    def pack_param(self, pack: Pack, node: ast.AST) -> Any:
        """A tuple or list literal as a static parameter: its value, or a static name."""
        if self.carries(pack):
            raise self.error("a shape, axis or index that carries a gradient is not compiled",
                             node)
        if all(isinstance(v, Const) and _literal(v.value) for v in pack.items):
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
            value = self.expr(node)
            if isinstance(value, Const):
                return value.value if _literal(value.value) else value
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
        if spec is None:
            raise self.error(f"srcgrad cannot compile the array method .{name}()", node)
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

    def user_call(self, fn: Const, node: ast.Call) -> Any:
        values = [self.expr(a) for a in node.args]
        keywords = {k.arg: self.expr(k.value) for k in node.keywords}
        if any(isinstance(v, (Pack, Tree)) or self.is_runtime_list(v)
               for v in [*values, *keywords.values()]):
            return inline_call(self, fn.value, values, keywords, node)   # helper([a, b])
        args = [self.materialize(v, "t") for v in values]
        callee = fn.value
        if isinstance(callee, types.MethodType):          # model.forward(x), Cls.make(x)
            if not isinstance(node.func, ast.Attribute):
                raise self.error("srcgrad compiles a method called on its object "
                                 "(obj.method(x))", node)
            receiver = T.constant(callee.__self__, self.rename(node.func.value)[0])
            callee = callee.__func__
            args = [receiver, *args]
            plain = self.fresh_internal(f"{_hint(callee)}_function")
            self.free[plain] = callee                  # called with its object first
            node = ast.copy_location(ast.Call(ast.Name(plain, ast.Load()), node.args,
                                              node.keywords), node)
        for a in args:
            if self.is_runtime_list(a):
                raise self.error(f"passing a list to {callee.__name__}() is not compiled yet "
                                 "(pass np.stack of it, or the arrays one by one)", node)
        signature = inspect.signature(callee)
        try:
            bound = signature.bind(*args, **{k: self.materialize(v, "t")
                                            for k, v in keywords.items()})
        except TypeError as exc:
            raise self.error(f"{callee.__name__}(): {exc}", node) from None
        bound.apply_defaults()
        ordered = [v if isinstance(v, (Var, Const)) else Const(v) for v in bound.arguments.values()]
        label = node.func.id if isinstance(node.func, ast.Name) else callee.__name__
        label = label if isinstance(label, str) and label.isidentifier() else "helper"
        name = self.fresh(f"{label}_out")
        params = {"label": label, "returns": self.returned_items(callee, node)}
        if params["returns"] is not None:           # the adjoint fills unused items with zeros
            params["outputs"] = params["returns"]
        return self.emit(Stmt(name, "call", fn=callee, args=ordered, expr=self.rename(
            node.func)[0], params=params))

    def returned_items(self, callee: Any, node: ast.AST) -> int | None:
        """How many items the tuple ``callee`` returns (None: it returns one value)."""
        from srcgrad.frontend import parse_function, returned_tuple, returns_of
        try:
            fn_node = parse_function(callee).node
        except CompileError:
            return None                      # refused when its vjp is compiled
        count = returned_tuple(fn_node)
        if count is not None and len(returns_of(fn_node)) > 1:
            raise self.error(f"{_qualname(callee)} returns a tuple from more than one place; "
                             "srcgrad compiles a helper returning a tuple with one return "
                             "(assign the items in the branches, return them once)", node)
        if count == -1:
            raise self.error(f"{_qualname(callee)} returns a tuple in one place and another "
                             "value (or a tuple of another length) in another; srcgrad "
                             "compiles helpers that always return the same kind", node)
        return count

    def tuple_items(self, value: Any) -> int | None:
        """The number of items of a tuple a helper returned into ``value`` (else None)."""
        if not isinstance(value, Var):
            return None
        made_by = next((st for st in reversed(self.body) if st.target == value.name), None)
        if made_by is None or made_by.kind != "call":
            return None
        return made_by.params.get("returns")

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
            if isinstance(v, Const) and getattr(v, "expr", None) is None and not _literal(
                    v.value):
                raise self.error(f"the parameter {k} of {prim.name} must be a literal or a "
                                 "named value", node)
        target = self.fresh(hint)
        return self.emit(Stmt(target, "prim", fn=prim, args=inputs, params=params, uses=uses))


def _literal(value: Any) -> bool:
    try:
        T.value_expr(value)
    except TypeError:
        return False
    return True


def _as_const(value: Any) -> Any:
    return value if isinstance(value, (Var, Const, Pack)) else Const(value)


def _lookup(table: Any, f: Any) -> Any:
    try:
        return table.get(f) if isinstance(table, dict) else (True if f in table else None)
    except TypeError:                               # unhashable
        return None


def _is_random(f: Any) -> bool:
    """A random draw: NumPy's ``np.random`` functions and Generator/RandomState methods."""
    module = getattr(f, "__module__", "") or ""
    owner = getattr(f, "__self__", None)
    return (module.startswith("numpy.random") or isinstance(
        owner, (np.random.Generator, np.random.RandomState, np.random.BitGenerator)))


def _draws(node: ast.Call) -> bool:
    """``rng.normal(...)`` of a run-time value ``rng``: named like a Generator's draw."""
    return isinstance(node.func, ast.Attribute) and not node.func.attr.startswith("_") and \
        callable(getattr(np.random.Generator, node.func.attr, None))


LIBRARIES = frozenset({"numpy", "scipy", "autograd", "jax", "jaxlib", "torch", "pandas",
                       "sklearn", "matplotlib", "networkx", "sympy", "numba"})
"""Packages whose Python functions are never transformed as the user's code: a call of one
that no table covers is refused by name.  So is a function of any module installed in
``site-packages`` or of the standard library (:func:`_is_library`)."""


def _is_library(f: Any) -> bool:
    """A Python function of NumPy, SciPy, another installed library or the standard library:
    srcgrad has no rule for it, and its source is not the user's to transform."""
    module = getattr(getattr(f, "__func__", f), "__module__", None)
    if not isinstance(module, str) or not module:
        return False
    if module.partition(".")[0] in LIBRARIES:
        return True
    path = getattr(sys.modules.get(module), "__file__", None)
    if not isinstance(path, str):
        return False
    parts = pathlib.Path(path).resolve().parts
    return "site-packages" in parts or "dist-packages" in parts or pathlib.Path(
        path).resolve().is_relative_to(_STDLIB)


_STDLIB = pathlib.Path(sysconfig.get_paths()["stdlib"]).resolve()


def _static_when_constant(f: Any) -> bool:
    """Static when every argument is: the allow-list, classes, random draws."""
    return _lookup(T.STATIC_WHEN_CONSTANT, f) is not None or isinstance(f, type) or \
        _is_random(f)


def _is_transform(f: Any) -> bool:
    """A srcgrad transform, or ``srcgrad.grad``/``value_and_grad``/``vjp`` themselves."""
    from srcgrad import api
    return isinstance(f, api.Transform) or any(f is t for t in (
        api.grad, api.value_and_grad, api.vjp))


def _names(node: ast.AST, scope: dict) -> list[str]:
    return [n.id for n in ast.walk(node) if isinstance(n, ast.Name) and n.id in scope]


def _hint(f: Any) -> str:
    name = getattr(f, "__name__", None)
    return name if isinstance(name, str) and name.isidentifier() else "value"


def _qualname(f: Any) -> str:
    module = getattr(f, "__module__", None) or ("numpy" if isinstance(f, np.ufunc) else "")
    name = getattr(f, "__qualname__", None) or getattr(f, "__name__", repr(f))
    return f"{module}.{name}" if module else name
