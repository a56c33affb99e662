"""Normalisation: a function's AST lowered to the core IR (one operation per assignment, SSA).

Operators, NumPy and ``math`` functions, methods (``x.sum(axis=0)``) and attributes (``x.T``)
become primitives of the rule table; shapes, counts and constructors become ``static``
statements; calls to other user functions become ``call`` statements.  Anything else raises a
:class:`~srcgrad.errors.CompileError` pointing at the user's line (the fence).
"""

from __future__ import annotations

import ast
import builtins
import copy
import inspect
import math
import types
from typing import Any

import numpy as np

from srcgrad import lowering_tables as T
from srcgrad.control import ControlFlow, exposed
from srcgrad.errors import CompileError, describe
from srcgrad.frontend import Env, Source
from srcgrad.ir import Const, Function, Stmt, Var, fresh_name
from srcgrad.lists import Lists, is_append
from srcgrad.runtime.primitives import NUMPY_BINDINGS, Primitive

__all__ = ["lower", "Pack"]


class Pack:
    """A tuple or list literal not yet materialised (``a, b = b, a``; ``return x, y``)."""

    def __init__(self, items: list, is_list: bool = False) -> None:
        self.items = items
        self.is_list = is_list


class Tree:
    """A pytree argument (dict, list or tuple): constant subscripts select its leaves."""

    def __init__(self, kind: Any, children: dict) -> None:
        self.kind = kind
        self.children = children        # key (str or int) -> Tree or Var
        self.root: Var | None = None    # the parameter, for a whole argument


class Lowerer(ControlFlow, Lists):
    def __init__(self, src: Source, env: Env, reserved: set[str],
                 trees: dict[int, Any] | None = None, result_name: str | None = None) -> None:
        self.src, self.env = src, env
        self.reserved = set(reserved)
        self.result_name = result_name or src.name
        self.trees = trees or {}
        self.leaves: dict[str, Any] = {}      # parameter SSA name -> its Tree
        self._live: list[set[str]] = []       # names read after the statement being lowered
        self.flags: set[str] = set()           # break/continue/return flags (never active)
        self.body: list[Stmt] = []
        self.scope: dict[str, Any] = {}
        self.used: set[str] = set(reserved)
        self.static: set[str] = set()
        self.source_names: dict[str, str] = {}
        self.free: dict[str, Any] = {}
        self.inline: set[str] = set()
        self.lists: set[str] = set()          # names of Python lists built at run time
        self.list_names: set[str] = set()     # parameters (user names) that are such lists
        self.param_lists: set[str] = set()
        self.consumed: dict[str, tuple[int, str]] = {}   # changed in place: (line, what)
        self.in_block = False                 # lowering a branch or loop body
        self.line = src.node.lineno
        self.text = ""

    # ------------------------------------------------------------------------- naming
    def fresh(self, base: str) -> str:
        return fresh_name(base, self.used)

    def fresh_internal(self, base: str) -> str:
        """A name for the compiler's own bookkeeping: never one of the user's names."""
        user = {n.id for n in ast.walk(self.src.node) if isinstance(n, ast.Name)}
        user |= {a.arg for a in ast.walk(self.src.node) if isinstance(a, ast.arg)}
        taken = self.used | user
        name = fresh_name(base, taken)
        self.used.add(name)
        return name

    def error(self, message: str, node: ast.AST) -> CompileError:
        return CompileError(message, self.src.where(node))

    def emit(self, stmt: Stmt) -> Var:
        self.check_fresh(stmt)
        stmt.line, stmt.text = self.line, self.text
        self.body.append(stmt)
        return Var(stmt.target) if stmt.target else None

    # --------------------------------------------------------------------- statements
    def lower_function(self) -> Function:
        node = self.src.node
        args = node.args
        if args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs:
            raise self.error("srcgrad compiles functions with plain positional parameters "
                             "(no *args, **kwargs or keyword-only parameters)", node)
        params = []
        for a in args.args:
            name = self.fresh(a.arg)
            self.scope[a.arg] = Var(name)
            self.source_names[name] = a.arg
            params.append(name)
            if a.arg in self.list_names:
                self.lists.add(name)
                self.param_lists.add(name)
        for position, structure in self.trees.items():
            user = args.args[position].arg
            kind = getattr(structure[0], "__name__", structure[0])
            self.line, self.text = node.lineno, f"{user} (a {kind})"
            tree = self.tree(Var(params[position]), structure, user, ())
            tree.root = Var(params[position])
            self.scope[user] = self.leaves[params[position]] = tree
        defaults = {}
        for a, d in zip(args.args[len(args.args) - len(args.defaults):], args.defaults):
            defaults[a.arg] = d
        if isinstance(node, ast.Lambda):
            self.line, self.text = node.lineno, self.src.text(node.body)
            result = self.materialize(self.expr(node.body), self.src.name)
        else:
            result = self.block(self.early_returns(node.body))
        fn = Function(self.src.name, params, self.body, result, self.src.filename,
                      node.lineno, defaults, self.source_names, self.used, self.free,
                      self.inline, self.leaves)
        fn.flags = {ssa for ssa, user in self.source_names.items() if user in self.flags}
        fn.lists = set(self.lists)
        fn.mutates = {p for p in params if p in self.consumed}
        return fn

    def block(self, stmts: list[ast.stmt]) -> Any:
        for i, s in enumerate(stmts):
            self.line, self.text = s.lineno, self.src.text(s)
            self._live.append(exposed(stmts[i + 1:]))
            if isinstance(s, ast.Return):
                if i != len(stmts) - 1:
                    raise self.error("srcgrad compiles a return only at the end of the "
                                     "function (early returns come with control flow)", s)
                if s.value is None:
                    raise self.error("the function must return a value", s)
                value = self.materialize(self.expr(s.value), self.result_name)
                if isinstance(value, Var) and value.name not in self.source_names:
                    value = self.rename_var(value, self.result_name)
                self._live.pop()
                return value
            try:
                self.statement(s)
            finally:
                self._live.pop()
        raise self.error("the function must end with a return statement",
                         stmts[-1] if stmts else self.src.node)

    def statement(self, s: ast.stmt) -> None:
        if isinstance(s, ast.Assign):
            value = self.expr(s.value)
            for target in s.targets:
                self.assign(target, value)
        elif isinstance(s, ast.AnnAssign) and s.value is not None:
            self.assign(s.target, self.expr(s.value))
        elif isinstance(s, ast.AugAssign):
            if not isinstance(s.target, (ast.Name, ast.Subscript)):
                raise self.error(f"srcgrad cannot compile an augmented assignment to "
                                 f"{describe(s.target).lower()}", s.target)
            load = ast.copy_location(_as_load(s.target), s.target)
            value = self.binop(s.op, load, s.value, s)
            self.assign(s.target, value)
        elif isinstance(s, ast.Expr):
            if isinstance(s.value, ast.Constant):
                return                                     # a docstring
            if is_append(s.value):
                return self.append(s.value)
            value = s.value
            if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute):
                receiver = self.expr(value.func.value)
                if self.is_list(receiver):
                    raise self.error(f"srcgrad compiles a list's .append; list."
                                     f"{value.func.attr}() is not compiled", value)
                if isinstance(receiver, Var) and not self.is_static(receiver):
                    raise self.error(f"srcgrad cannot compile .{value.func.attr}() for its "
                                     "effect on an array", value)
            self.effect(s, s.value)
        elif isinstance(s, ast.Assert):
            self.effect(s, s.test)
        elif isinstance(s, ast.Pass):
            return
        elif isinstance(s, ast.If):
            self.if_statement(s)
        elif isinstance(s, ast.For):
            self.for_statement(s)
        elif isinstance(s, ast.While):
            self.while_statement(s)
        else:
            raise self.error(f"srcgrad cannot compile {describe(s)} yet", s)

    def effect(self, s: ast.stmt, value: ast.expr) -> None:
        expr, uses = self.rename(s)
        self.emit(Stmt(None, "effect", expr=expr, uses=uses))

    def assign(self, target: ast.expr, value: Any) -> None:
        if isinstance(target, ast.Name):
            if isinstance(value, Var) and value.name not in self.source_names and \
                    value.name in {st.target for st in self.body}:
                value = self.rename_var(value, target.id)
            self.scope[target.id] = value
        elif isinstance(target, (ast.Tuple, ast.List)):
            if any(isinstance(e, ast.Starred) for e in target.elts):
                raise self.error("srcgrad cannot compile starred unpacking", target)
            items = self.unpack(value, len(target.elts), target)
            for t, item in zip(target.elts, items):
                self.assign(t, item)
        elif isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
            base = self.expr(target.value)
            if isinstance(base, Pack) and base.is_list:
                key = self.expr(target.slice)
                if isinstance(key, Const) and isinstance(key.value, int) and \
                        -len(base.items) <= key.value < len(base.items):
                    base.items[key.value] = self.materialize(value, "item")
                    return
            if self.is_list(base):
                raise self.error("srcgrad cannot compile assigning to an element of a list "
                                 "built at run time; build it with append", target)
            self.assign(target.value, self.subscript_write(target, value))
        else:
            raise self.error(f"srcgrad cannot compile an assignment to "
                             f"{describe(target).lower()}", target)

    def subscript_write(self, target: ast.Subscript, value: Any) -> Var:
        """``y[i] = v`` as ``y = index_put(y, v, index=i)``: a new array, so that no array
        the caller passed is ever changed (and the adjoint can see the old one)."""
        base = self.expr(target.value)
        if not isinstance(base, Var):
            raise self.error("srcgrad compiles subscript writes into arrays", target)
        index = self.index_param(target.slice)
        value = self.materialize(value, "t")
        new = self.prim(T.lookup("index_put"), [base, value], {"index": index},
                        f"{base.name}_set", target)
        self.consume(base, self.line, "an array")
        return new

    def rename_var(self, var: Var, user_name: str) -> Var:
        """Give the statement that made ``var`` the user's name (SSA: ``x``, ``x_1``, …)."""
        for st in reversed(self.body):
            if st.target == var.name:
                self.used.discard(var.name)
                new = self.fresh(user_name)
                for other in self.body:
                    _substitute(other, var.name, new)
                st.target = new
                if var.name in self.static:
                    self.static.discard(var.name)
                    self.static.add(new)
                self.source_names[new] = user_name
                return Var(new)
        return var

    def unpack(self, value: Any, n: int, node: ast.AST) -> list:
        if isinstance(value, Tree) and value.kind != "dict":
            value = Pack(list(value.children.values()))
        if isinstance(value, Pack):
            if len(value.items) != n:
                raise self.error(f"cannot unpack {len(value.items)} values into {n}", node)
            return value.items
        if isinstance(value, Const):
            return [Const(v) for v in value.value]
        if self.is_runtime_list(value):
            return [self.emit(Stmt(self.fresh(f"{value.name}_item"), "listget", args=[value],
                                   params={"index": i})) for i in range(n)]
        static = value.name in self.static
        made_by = next((st for st in reversed(self.body) if st.target == value.name), None)
        if not static and (made_by is None or made_by.kind not in ("call", "pack")):
            # an array: unpacking takes its rows, as NumPy does
            return [self.prim(T.lookup("getitem"), [value], {"index": i}, f"{value.name}_{i}",
                              node) for i in range(n)]
        out = []
        for i in range(n):
            name = self.fresh(f"{value.name}_{i}")
            if static:
                self.static.add(name)
            out.append(self.emit(Stmt(name, "unpack", args=[value], params={"index": i})))
        return out

    def materialize(self, value: Any, hint: str) -> Any:
        if isinstance(value, Pack):
            items = [self.materialize(v, f"{hint}_{i}") for i, v in enumerate(value.items)]
            made = self.emit(Stmt(self.fresh(hint), "pack", args=items,
                                  params={"list": True} if value.is_list else {}))
            if value.is_list:
                self.lists.add(made.name)
            return made
        return value

    # -------------------------------------------------------------------- expressions
    def expr(self, node: ast.expr) -> Any:
        method = getattr(self, "expr_" + type(node).__name__, None)
        if method is None:
            raise self.error(f"srcgrad cannot compile {describe(node)} yet", node)
        return method(node)

    def expr_IfExp(self, node: ast.IfExp) -> Any:
        return self.if_expression(node)

    def expr_Constant(self, node: ast.Constant) -> Const:
        return Const(node.value)

    def expr_Name(self, node: ast.Name) -> Any:
        if node.id in self.scope:
            return self.scope[node.id]
        try:
            value = self.env.resolve(node.id)
        except Exception:
            raise self.error(f"name {node.id!r} is not defined", node) from None
        if not (value is np and node.id == "np"):
            self.free[node.id] = value
        return T.constant(value, ast.Name(node.id, ast.Load()))

    def expr_Tuple(self, node: ast.Tuple) -> Pack:
        return Pack([self.expr(e) for e in node.elts])

    def expr_List(self, node: ast.List) -> Pack:
        return Pack([self.expr(e) for e in node.elts], is_list=True)

    def expr_ListComp(self, node: ast.ListComp) -> Var:
        return self.comprehension(node)

    expr_GeneratorExp = expr_ListComp

    def expr_Attribute(self, node: ast.Attribute) -> Any:
        base = self.expr(node.value)
        if isinstance(base, Const):
            try:
                value = getattr(base.value, node.attr)
            except AttributeError:
                raise self.error(f"{ast.unparse(node.value)} has no attribute "
                                 f"{node.attr!r}", node) from None
            if base.value is math and isinstance(value, float):
                return Const(value)                          # math.pi prints as a number
            return T.constant(value, ast.Attribute(T.const_expr(base), node.attr, ast.Load()))
        if isinstance(base, Pack):
            raise self.error(f"a tuple has no attribute {node.attr!r}", node)
        if node.attr in ("shape", "ndim", "dtype", "size"):
            return self.static_expr(node, hint=f"{base.name}_{node.attr}")
        if node.attr == "T":
            return self.prim(np.transpose, [base], {}, f"{base.name}_T", node)
        raise self.error(f"srcgrad cannot compile the array attribute .{node.attr}", node)

    def expr_BinOp(self, node: ast.BinOp) -> Any:
        return self.binop(node.op, node.left, node.right, node)

    def binop(self, op: ast.operator, left: ast.expr, right: ast.expr, node: ast.AST) -> Any:
        a, b = self.expr(left), self.expr(right)
        if self.is_list(a) or self.is_list(b):
            if isinstance(a, Pack) and isinstance(b, Pack) and isinstance(op, ast.Add):
                return Pack(a.items + b.items, is_list=True)
            if not (self.is_static(a) and self.is_static(b)):
                raise self.error(f"srcgrad cannot compile {describe(op)} on lists built at "
                                 "run time (build them with append)", node)
        if self.is_static(a) and self.is_static(b):
            return self.static_expr(node if isinstance(node, ast.BinOp)
                                    else ast.BinOp(left, op, right))
        fn = T.BINOPS.get(type(op))
        if fn is None:
            raise self.error(f"srcgrad cannot differentiate the operator {describe(op)}", node)
        a, b = self.materialize(a, "t"), self.materialize(b, "t")
        if fn is np.power and isinstance(b, Const) and isinstance(b.value, (int, float)) \
                and not isinstance(b.value, bool):
            return self.prim(T.lookup("pow_scalar"), [a], {"p": b.value},
                             T.name_of(a, "pow"), node)
        return self.prim(fn, [a, b], {}, T.binop_name(a, b, fn), node)

    def expr_UnaryOp(self, node: ast.UnaryOp) -> Any:
        a = self.expr(node.operand)
        if self.is_static(a):
            return self.static_expr(node)
        fn = T.UNARYOPS.get(type(node.op))
        if fn is None:
            raise self.error(f"srcgrad cannot differentiate {describe(node.op)}", node)
        return self.prim(fn, [a], {}, T.name_of(a, "neg"), node)

    def expr_Compare(self, node: ast.Compare) -> Any:
        if len(node.ops) != 1:
            raise self.error("srcgrad compiles one comparison at a time (a < b, not a < b < c)",
                             node)
        a, b = self.expr(node.left), self.expr(node.comparators[0])
        if self.is_static(a) and self.is_static(b):
            return self.static_expr(node)
        fn = T.CMPOPS.get(type(node.ops[0]))
        if fn is None:
            raise self.error(f"srcgrad cannot compile the comparison {describe(node.ops[0])}",
                             node)
        return self.prim(fn, [a, b], {}, "mask", node)

    def expr_BoolOp(self, node: ast.BoolOp) -> Any:
        values = [self.expr(v) for v in node.values]
        if all(self.is_static(v) for v in values):
            return self.static_expr(node)
        raise self.error("`and`/`or` on arrays is ambiguous; use np.logical_and/np.logical_or",
                         node)

    def tree(self, root: Var, structure: Any, hint: str, path: tuple) -> Any:
        """Leaf variables for a pytree argument, each read once at the top of the function."""
        if structure is None:
            name = self.fresh(hint)
            self.source_names[name] = hint
            return self.emit(Stmt(name, "leaf", args=[root], params={"path": path}))
        kind, keys, children = structure
        keys = keys if keys is not None else list(range(len(children)))
        out = {}
        for key, child in zip(keys, children):
            label = key if isinstance(key, str) and key.isidentifier() else f"{hint}_{key}"
            out[key] = self.tree(root, child, label, path + (key,))
        return Tree(kind, out)

    def expr_Subscript(self, node: ast.Subscript) -> Any:
        base = self.expr(node.value)
        if isinstance(base, Tree):
            key = self.expr(node.slice)
            if isinstance(key, Const) and key.value in base.children:
                return base.children[key.value]
            leaves = list(base.children.values())
            if base.kind != "dict" and all(isinstance(v, Var) for v in leaves):
                return self.list_item(Pack(leaves, is_list=True), node)   # xs[t] in a loop
            raise self.error("a pytree argument is indexed by a constant key here",
                             node.slice)
        if isinstance(base, Pack):
            key = self.expr(node.slice)
            if isinstance(key, Const) and isinstance(key.value, int):
                if not -len(base.items) <= key.value < len(base.items):
                    raise self.error(f"index {key.value} is out of range for "
                                     f"{len(base.items)} items", node.slice)
                return base.items[key.value]
            if isinstance(key, Const) and isinstance(key.value, slice):
                return Pack(base.items[key.value], base.is_list)
            return self.list_item(base, node)
        if self.is_runtime_list(base):
            return self.list_item(base, node)
        if self.is_static(base):
            return self.static_expr(node)
        index = self.index_param(node.slice)
        return self.prim(T.lookup("getitem"), [base], {"index": index},
                         f"{base.name if isinstance(base, Var) else 'item'}_at", node)

    def note_global(self, name: str) -> None:
        """A user global read by code printed verbatim: bind it when the module loads."""
        if name in self.free or name == "np" or hasattr(builtins, name):
            return
        try:
            self.free[name] = self.env.resolve(name)
        except Exception:  # noqa: BLE001 - a local of the generated code, or slice
            pass

    def index_param(self, node: ast.expr) -> Any:
        """An index as a static parameter: a Python value, or a Var of a runtime index."""
        call_form = _call_form(node)
        if all(n.id == "slice" for n in ast.walk(call_form) if isinstance(n, ast.Name)):
            try:
                tree = ast.fix_missing_locations(ast.Expression(call_form))
                return eval(compile(tree, "<index>", "eval"),
                            {"slice": slice, "__builtins__": {}})
            except Exception:  # noqa: BLE001 - not a literal after all
                pass
        index = self.static_expr(call_form, hint="index")
        self.inline.add(index.name)
        return index

    def expr_Call(self, node: ast.Call) -> Any:
        if isinstance(node.func, ast.Attribute):
            receiver = self.expr(node.func.value)
            if isinstance(receiver, Var) and receiver.name not in self.static:
                return self.method(receiver, node.func.attr, node)
        fn = self.expr(node.func)
        if not isinstance(fn, Const):
            raise self.error("srcgrad compiles calls of functions it can see when compiling",
                             node.func)
        return self.call(fn, node)

    # ------------------------------------------------------------------------ calls
    def call(self, fn: Const, node: ast.Call) -> Any:
        f = fn.value
        if any(isinstance(a, ast.Starred) for a in node.args) or any(
                k.arg is None for k in node.keywords):
            raise self.error("srcgrad cannot compile *args/**kwargs in a call", node)
        if f is builtins.sum:
            return self.builtin_sum(node)
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
        if f in T.STATIC_BUILTINS or _is_static_callable(f):
            return self.static_expr(node, hint=getattr(f, "__name__", "value"))
        if isinstance(f, Primitive) or f in NUMPY_BINDINGS or isinstance(f, np.ufunc) or \
                f in T.SPECIAL_CALLS:
            args = [self.expr(a) for a in node.args]
            kwargs = {k.arg: k.value for k in node.keywords}
            return self.numpy_call(f, args, kwargs, node)
        if isinstance(f, (types.FunctionType, types.MethodType)):
            return self.user_call(fn, node)
        raise self.error(f"srcgrad has no derivative rule for {_qualname(f)}; register one "
                         "with srcgrad.defvjp", node)

    def numpy_call(self, f: Any, args: list, kwargs: dict, node: ast.AST) -> Any:
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
        items = list(bound.items())
        inputs = [v for _, v in items[:prim.nin]]
        known = prim.param_names()
        params = {}
        for name, value in items[prim.nin:]:
            if isinstance(value, ast.AST):
                value = self.param(value)
            if known is not None and name not in known:
                if isinstance(value, Const) and value.value is None:
                    continue
                raise self.error(f"{_qualname(f)}(): argument {name!r} is not supported", node)
            params[name] = value
        return inputs, params

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
        spec = T.METHODS.get(name)
        if spec is None:
            raise self.error(f"srcgrad cannot compile the array method .{name}()", node)
        f, varargs = spec
        args = [self.param(a) if i or varargs else self.expr(a) for i, a in enumerate(node.args)]
        if varargs and len(node.args) > 1:
            args = [tuple(args)]                   # x.reshape(2, 3) is np.reshape(x, (2, 3))
        kwargs = {k.arg: k.value for k in node.keywords}
        if f is None:                               # .astype(dtype), .item(), .copy()
            return T.method_special(self, name, receiver, args, kwargs, node)
        return self.numpy_call(f, [receiver, *[_as_const(a) for a in args]], kwargs, node)

    def user_call(self, fn: Const, node: ast.Call) -> Any:
        args = [self.materialize(self.expr(a), "t") for a in node.args]
        callee = fn.value
        for a in args:
            if self.is_runtime_list(a):
                raise self.error(f"passing a list to {callee.__name__}() is not compiled yet "
                                 "(pass np.stack of it, or the arrays one by one)", node)
        signature = inspect.signature(callee)
        try:
            bound = signature.bind(*args, **{k.arg: self.materialize(self.expr(k.value), "t")
                                            for k in node.keywords})
        except TypeError as exc:
            raise self.error(f"{callee.__name__}(): {exc}", node) from None
        bound.apply_defaults()
        ordered = [v if isinstance(v, (Var, Const)) else Const(v) for v in bound.arguments.values()]
        label = node.func.id if isinstance(node.func, ast.Name) else callee.__name__
        name = self.fresh(f"{label}_out")
        return self.emit(Stmt(name, "call", fn=callee, args=ordered, expr=self.rename(
            node.func)[0], params={"label": label}))

    # ------------------------------------------------------------------- primitives
    def prim(self, f: Any, inputs: list, params: dict, hint: str, node: ast.AST) -> Var:
        prim = f if isinstance(f, Primitive) else NUMPY_BINDINGS[f][0]
        inputs = [self.materialize(a, "t") for a in inputs]
        uses = tuple(v.name for v in params.values() if isinstance(v, Var))
        for k, v in params.items():
            if isinstance(v, Const) and getattr(v, "expr", None) is None and not _literal(
                    v.value):
                raise self.error(f"the parameter {k} of {prim.name} must be a literal or a "
                                 "named value", node)
        target = self.fresh(hint)
        return self.emit(Stmt(target, "prim", fn=prim, args=inputs, params=params, uses=uses))

    # ------------------------------------------------------------------------ static
    def is_static(self, value: Any) -> bool:
        if isinstance(value, Const):
            return not isinstance(value.value, np.ndarray)
        if isinstance(value, Pack):
            return all(self.is_static(v) for v in value.items)
        return value.name in self.static

    def static_expr(self, node: ast.expr, hint: str = "value") -> Var:
        expr, uses = self.rename(node)
        target = self.fresh(hint)
        self.static.add(target)
        return self.emit(Stmt(target, "static", expr=expr, uses=uses))

    def rename(self, node: ast.AST) -> tuple[ast.AST, tuple[str, ...]]:
        """``node`` with the user's names replaced by their SSA names (and values)."""
        uses: list[str] = []
        lowerer = self

        class Renamer(ast.NodeTransformer):
            def visit_Name(self, n: ast.Name) -> ast.AST:
                value = lowerer.scope.get(n.id)
                if isinstance(value, Var):
                    uses.append(value.name)
                    return ast.copy_location(ast.Name(value.name, n.ctx), n)
                if isinstance(value, Const):
                    return ast.copy_location(T.const_expr(value), n)
                if isinstance(value, Pack):
                    items = [T.const_expr(v) if isinstance(v, Const) else
                             ast.Name(v.name, ast.Load()) for v in value.items]
                    uses.extend(v.name for v in value.items if isinstance(v, Var))
                    return ast.Tuple(items, ast.Load())
                if isinstance(value, Tree):       # len(xs) of a pytree argument
                    return ast.copy_location(ast.Name(value.root.name, n.ctx), n)
                lowerer.note_global(n.id)
                return n
        new = Renamer().visit(_copy(node))
        return new, tuple(dict.fromkeys(uses))


def _as_load(node: ast.expr) -> ast.expr:
    node = _copy(node)
    for n in ast.walk(node):
        if hasattr(n, "ctx"):
            n.ctx = ast.Load()
    return node


def _copy(node: ast.AST) -> ast.AST:
    return copy.deepcopy(node)


def _call_form(node: ast.expr) -> ast.expr:
    """An index with its slices written as ``slice(...)`` calls: a plain expression."""
    class Slices(ast.NodeTransformer):
        def visit_Slice(self, s: ast.Slice) -> ast.AST:
            parts = [s.lower, s.upper, s.step]
            return ast.Call(ast.Name("slice", ast.Load()),
                            [self.visit(p) if p is not None else ast.Constant(None)
                             for p in parts], [])
    return Slices().visit(_copy(node))


def _substitute(stmt: Stmt, old: str, new: str) -> None:
    stmt.args = [Var(new) if isinstance(a, Var) and a.name == old else a for a in stmt.args]
    stmt.params = {k: Var(new) if isinstance(v, Var) and v.name == old else v
                   for k, v in stmt.params.items()}
    if old in stmt.uses:
        stmt.uses = tuple(new if u == old else u for u in stmt.uses)
        for n in ast.walk(stmt.expr) if stmt.expr is not None else ():
            if isinstance(n, ast.Name) and n.id == old:
                n.id = new


def _literal(value: Any) -> bool:
    try:
        T.value_expr(value)
    except TypeError:
        return False
    return True


def _as_const(value: Any) -> Any:
    return value if isinstance(value, (Var, Const, Pack)) else Const(value)


def _is_static_callable(f: Any) -> bool:
    module = getattr(f, "__module__", "") or ""
    owner = getattr(f, "__self__", None)
    return (f in T.CONSTRUCTORS or module.startswith("numpy.random")
            or isinstance(owner, np.random.Generator) or isinstance(f, type))


def _qualname(f: Any) -> str:
    module = getattr(f, "__module__", None) or ("numpy" if isinstance(f, np.ufunc) else "")
    name = getattr(f, "__qualname__", None) or getattr(f, "__name__", repr(f))
    return f"{module}.{name}" if module else name


def lower(src: Source, env: Env, reserved: set[str], trees: dict[int, Any] | None = None
          ) -> Function:
    """Lower a parsed function to the core IR (``trees``: structures of pytree arguments)."""
    return Lowerer(src, env, reserved, trees).lower_function()
