"""Normalisation: a function's AST lowered to the core IR (one operation per assignment, SSA).

Operators, NumPy and ``math`` functions, methods (``x.sum(axis=0)``) and attributes (``x.T``)
become primitives of the rule table; shapes, counts and constructors become ``static``
statements; calls to other user functions become ``call`` statements.  Anything else raises a
:class:`~srcgrad.errors.CompileError` pointing at the user's line (the fence).
"""

from __future__ import annotations

import ast
import weakref
from typing import Any

from srcgrad.errors import CompileError, describe
from srcgrad.frontend.aliases import Aliases
from srcgrad.frontend.assignments import Assignments
from srcgrad.frontend.calls import Calls
from srcgrad.frontend.control import ControlFlow
from srcgrad.frontend.expressions import Closure, Expressions, Pack, Tree
from srcgrad.frontend.inline import _free_names, closure_reads, define
from srcgrad.frontend.jumps import Jumps
from srcgrad.frontend.list_operands import ListOperands
from srcgrad.frontend.lists import Lists, is_append
from srcgrad.frontend.parse import Env, Source, Taken, parse_function
from srcgrad.frontend.scope_index import Scope, held_vars
from srcgrad.frontend.scopes import bound, exposed_suffixes
from srcgrad.frontend.sharing import Sharing
from srcgrad.frontend.tables import constructs as T
from srcgrad.ir import Const, Function, Stmt, Var, fresh_name

__all__ = ["lower", "Lowerer", "Pack", "Tree"]


class Lowerer(ListOperands, ControlFlow, Assignments, Lists, Expressions, Calls):
    """Lowers one function (or one block of it); the mixins lower expressions, calls,
    control flow and lists.  It holds ``aliases`` (the links between variables that may
    share storage), ``sharing`` (the same across blocks and calls) and ``jumps`` (the
    rewriting of ``break``, ``continue`` and early ``return``)."""

    def __init__(self, src: Source, env: Env, reserved: set[str],
                 trees: dict[int, Any] | None = None, result_name: str | None = None) -> None:
        self.src, self.env = src, env
        self.reserved = set(reserved)
        self.result_name = result_name or src.name
        self.trees = trees or {}
        self.treeless = not trees             # compiled before any argument's structure
        self.leaves: dict[str, Any] = {}      # parameter SSA name -> its Tree
        self._live: list[set[str]] = []       # names read after the statement being lowered
        self.body: list[Stmt] = []
        self.scope: dict[str, Any] = Scope()
        self.used: set[str] = set(reserved)
        self.static: set[str] = set()
        self.source_names: dict[str, str] = {}
        self.free: dict[str, Any] = {}
        self.global_aliases: dict[str, str] = {}   # a user global -> its name in the module
        self.inline: set[str] = set()
        self.lists: set[str] = set()          # names of Python lists built at run time
        self.list_names: set[str] = set()     # parameters (user names) that are such lists
        self.rebuild: dict[str, tuple] = {}   # a pytree read by a block: its leaves' params
        self.consumed: dict[str, tuple[int, str]] = {}   # changed in place: (line, what)
        self.assigning: set[str] = set()      # names the statement being lowered assigns
        self.wrt_users: frozenset[str] = frozenset()   # user names of differentiated params
        self.line = src.node.lineno
        self.text = ""
        me = weakref.proxy(self)    # what it holds refers back weakly: freed with it, no cycle
        self.aliases = Aliases(me, self.body, self.source_names)
        self.sharing = Sharing(self.aliases, me, lambda callee: me.lower_callee(callee))
        self.jumps = Jumps(lambda base: me.fresh_internal(base),
                           lambda message, node: me.error(message, node))

    # ------------------------------------------------------------------------- naming
    def fresh(self, base: str) -> str:
        return fresh_name(base, self.used)

    def fresh_internal(self, base: str) -> str:
        """A name for the compiler's own bookkeeping: never one of the user's names."""
        name = fresh_name(base, Taken(self.used, self.src.user_names()))
        self.used.add(name)
        return name

    def error(self, message: str, node: ast.AST) -> CompileError:
        return CompileError(message, self.src.where(node))

    def lower_callee(self, callee: Any) -> Function:
        """A user function called here, lowered as this one is (same kind, same names)."""
        return type(self)(parse_function(callee), Env(callee), self.reserved).lower_function()

    def emit(self, stmt: Stmt) -> Var:
        self.check_fresh(stmt)
        if stmt.kind in ("static", "effect"):
            self.aliases.refuse_writing_code(stmt)
        stmt.line, stmt.text = self.line, self.text
        if stmt.kind == "call":
            self.sharing.call_writes(stmt, self.assigning)
        self.body.append(stmt)
        self.aliases.note_views(stmt)
        if stmt.target is not None and stmt.kind in ("call", "branch", "loop"):
            self.sharing.block_links(stmt)
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
            if a.arg in getattr(self, "static_params", ()):    # a loop's integer counter
                self.static.add(name)
            if a.arg in self.list_names:
                self.lists.add(name)
        self.param_names = set(params)
        self.scope.update(getattr(self, "closures", {}))   # closures a block calls
        for user, (tree, leaves) in self.rebuild.items():   # from the leaves passed in
            self.scope[user] = tree.with_leaves({path: self.scope[arg] for path, arg in leaves})
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
            result = self.block(self.jumps.early_returns(node.body))
        fn = Function(self.src.name, params, self.body, result, self.src.filename,
                      node.lineno, defaults, self.source_names, self.used, self.free,
                      self.inline, self.leaves)
        fn.flags = {ssa for ssa, user in self.source_names.items() if user in self.jumps.flags}
        fn.lists = set(self.lists)
        fn.mutates = {p for p in params if p in self.consumed}
        fn.mutates |= {p for p, tree in self.leaves.items()
                       if any(v.name in self.consumed for _, v in tree.leaves())}
        self.sharing.result_sharing(fn)
        return fn

    def block(self, stmts: list[ast.stmt], structure: bool = False) -> Any:
        """Lower statements ending with a return; its value (``structure``: a list or tuple
        literal stays one, as a helper lowered in place returns it to its caller)."""
        after = exposed_suffixes(stmts, _free_names)   # live_in of each suffix, one pass
        for i, s in enumerate(stmts):
            self.line, self.text = s.lineno, self.src.text(s)
            if define(self, s, stmts[i + 1:]):        # a nested def: a closure
                continue
            self._live.append(closure_reads(self.scope, after[i + 1]))
            if isinstance(s, ast.Return):
                if i != len(stmts) - 1:
                    raise self.error("srcgrad compiles a return only at the end of the "
                                     "function (early returns come with control flow)", s)
                if s.value is None:
                    raise self.error("the function must return a value", s)
                value = self.expr(s.value)
                if not (structure and isinstance(value, (Pack, Tree))):
                    value = self.materialize(value, self.result_name)
                elif any(isinstance(v, Closure) for v in _items(value)):
                    self.materialize(value, self.result_name)       # refused: a lambda
                for var in held_vars(value):
                    if var.name in self.consumed:
                        self.check_fresh(Stmt(None, "effect", args=[var]))
                if isinstance(value, Var) and value.name not in self.source_names:
                    value = self.rename_var(value, self.result_name)
                self._live.pop()
                return value
            self.assigning = bound(s)
            try:
                self.statement(s)
            finally:
                self._live.pop()
                self.assigning = set()
        raise self.error("the function must end with a return statement",
                         stmts[-1] if stmts else self.src.node)

    def statement(self, s: ast.stmt) -> None:
        if isinstance(s, ast.Assign):
            value = self.expr(s.value)
            for target in s.targets:
                self.assign(target, value)
                if isinstance(target, ast.Name):      # ``a = b = v``: one value, two names
                    value = self.scope[target.id]
        elif isinstance(s, ast.AnnAssign) and s.value is not None:
            self.assign(s.target, self.expr(s.value))
        elif isinstance(s, ast.AugAssign):
            self.dict_aug_assign(s) or self.aug_assign(s)     # d['k'] += v, or an array's
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
            if isinstance(value, ast.Call) and self._is_effect(value):
                self.effect(s, s.value)                     # print(...)
            else:
                self.expr(value)                           # its value is not used
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

    def _is_effect(self, call: ast.Call) -> bool:
        try:
            fn = self.expr(call.func) if not isinstance(call.func, ast.Attribute) or \
                not isinstance(self.expr(call.func.value), Var) else None
        except CompileError:
            return False
        return isinstance(fn, Const) and _hashable(fn.value) and fn.value in T.EFFECTS

    def effect(self, s: ast.stmt, value: ast.expr) -> None:
        expr, uses = self.rename(s)
        self.emit(Stmt(None, "effect", expr=expr, uses=uses))

    def assign(self, target: ast.expr, value: Any) -> None:
        if self.dict_store(target, value):             # d['k'] = v, d['a']['b'] = v
            return
        if isinstance(target, ast.Name):
            if isinstance(value, Var) and value.name not in self.source_names and \
                    any(st.target == value.name for st in reversed(self.body)):
                value = self.rename_var(value, target.id)
            self.scope[target.id] = value
        elif isinstance(target, (ast.Tuple, ast.List)):
            if any(isinstance(e, ast.Starred) for e in target.elts):
                return self.starred_assign(target, value)
            items = list(self.unpack(value, len(target.elts), target))
            for k, t in enumerate(target.elts):
                item = items[k]
                self.assign(t, item)
                now = self.scope.get(t.id) if isinstance(t, ast.Name) else None
                if isinstance(item, Var) and isinstance(now, Var) and now.name != item.name:
                    # renamed for the user's name (``y, y = y, y``): so are the other items
                    items = [now if isinstance(v, Var) and v.name == item.name else v
                             for v in items]
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
        elif isinstance(target, ast.Subscript):          # y[0][1] = v, p["a"][0] = v
            base = self.expr(target.value)
            if not isinstance(base, Var) or self.is_list(base):
                raise self.error("srcgrad compiles subscript writes into arrays", target)
            index = self.index_param(target.slice)
            new = self.prim(T.lookup("index_put"), [base, self.materialize(value, "t")],
                            {"index": index}, f"{base.name}_set", target)
            self.aliases.write_through("", base, new, target)   # every name of it sees the write
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
        self.aliases.write_through(target.value.id, base, new, target)
        return new

    def rename_var(self, var: Var, user_name: str) -> Var:
        """Give the statement that made ``var`` the user's name (SSA: ``x``, ``x_1``, …)."""
        for at in range(len(self.body) - 1, -1, -1):
            st = self.body[at]
            if st.target == var.name:
                self.used.discard(var.name)
                new = self.fresh(user_name)
                for other in self.body[at:]:             # SSA: only later statements use it
                    _substitute(other, var.name, new)
                st.target = new
                for kind in (self.static, self.lists):      # what the value is goes along
                    if var.name in kind:
                        kind.discard(var.name)
                        kind.add(new)
                self.aliases.rename(var.name, new)
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
        items = made_by.params.get("returns") if made_by is not None and \
            made_by.kind == "call" else None
        if items is not None and items != n:
            raise self.error(f"cannot unpack {items} values into {n}", node)
        if made_by is not None and made_by.kind == "call" and items is None:
            made_by = None                         # a helper returning an array: its rows
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
        self.local_value(value, self.node_of_line())     # a lambda or a dict: refused
        if isinstance(value, Tree):                       # a list argument used whole
            value = self.tree_pack(value)
        if isinstance(value, Pack):
            items = [self.materialize(v, f"{hint}_{i}") for i, v in enumerate(value.items)]
            made = self.emit(Stmt(self.fresh(hint), "pack", args=items,
                                  params={"list": True} if value.is_list else {}))
            if value.is_list:
                self.lists.add(made.name)
            return made
        return value


def _items(pack: Any) -> list:
    """The items of a list or tuple literal, nested ones flattened (none of a tree's)."""
    return [] if isinstance(pack, Tree) else [v for item in pack.items
            for v in (_items(item) if isinstance(item, Pack) else [item])]


def _hashable(value: Any) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


def _substitute(stmt: Stmt, old: str, new: str) -> None:
    stmt.args = [Var(new) if isinstance(a, Var) and a.name == old else a for a in stmt.args]
    stmt.params = {k: Var(new) if isinstance(v, Var) and v.name == old else v
                   for k, v in stmt.params.items()}
    if old in stmt.uses:
        stmt.uses = tuple(new if u == old else u for u in stmt.uses)
        for n in ast.walk(stmt.expr) if stmt.expr is not None else ():
            if isinstance(n, ast.Name) and n.id == old:
                n.id = new


def lower(src: Source, env: Env, reserved: set[str], trees: dict[int, Any] | None = None,
          wrt: tuple[int, ...] | None = None) -> Function:
    """Lower a parsed function to the core IR (``trees``: structures of pytree arguments;
    ``wrt``: the positions differentiated, None where not known, as for a helper)."""
    lowerer = Lowerer(src, env, reserved, trees)
    if wrt is not None:
        params = src.node.args.args
        lowerer.wrt_users = frozenset(params[i].arg for i in wrt if i < len(params))
    return lowerer.lower_function()
