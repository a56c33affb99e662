"""Normalisation: a function's AST lowered to the core IR (one operation per assignment, SSA).

Operators, NumPy and ``math`` functions, methods (``x.sum(axis=0)``) and attributes (``x.T``)
become primitives of the rule table; shapes, counts and constructors become ``static``
statements; calls to other user functions become ``call`` statements.  Anything else raises a
:class:`~srcgrad.errors.CompileError` pointing at the user's line (the fence).
"""

from __future__ import annotations

import ast
import contextlib
import weakref
from collections.abc import Iterator
from typing import Any

from srcgrad.errors import CompileError, describe
from srcgrad.frontend.aliases import Aliases
from srcgrad.frontend.assignments import Assignments
from srcgrad.frontend.calls import Calls
from srcgrad.frontend.control import ControlFlow
from srcgrad.frontend.dicts import Dicts
from srcgrad.frontend.effects import Effects
from srcgrad.frontend.inline import _free_names, closure_reads, define
from srcgrad.frontend.iteration import Iteration
from srcgrad.frontend.jumps import Jumps
from srcgrad.frontend.lists import Lists
from srcgrad.frontend.objects import ArgumentObjects, Record
from srcgrad.frontend.operators import Operators
from srcgrad.frontend.parameters import Parameters
from srcgrad.frontend.parse import Env, Source, Taken, parse_function
from srcgrad.frontend.primitives import Primitives
from srcgrad.frontend.randomness import Randomness
from srcgrad.frontend.scope_index import Scope, held_vars, literal_items
from srcgrad.frontend.scopes import bound, exposed_suffixes
from srcgrad.frontend.sharing import Sharing
from srcgrad.frontend.starred import display_items
from srcgrad.frontend.statements import Statements
from srcgrad.frontend.statics import Statics
from srcgrad.frontend.subscripts import Subscripts
from srcgrad.frontend.tables import constructs as T
from srcgrad.frontend.user_calls import UserCalls
from srcgrad.ir import Closure, Const, Function, Pack, Stmt, Tree, Var, fresh_name

__all__ = ["lower", "Lowerer", "Pack", "Tree"]


class Lowerer:
    """Lowers one function (or one block of it): its statements, and its expressions by kind.
    The rest is done by the parts it holds, each given the lowerer (weakly) as its host and
    reading of it only what its module's ``Host`` protocol names: ``prims`` (NumPy calls and
    primitives), ``statics`` (values printed as plain Python), ``aliases`` and ``sharing``
    (which variables may share storage), ``jumps``, ``parameters``, ``assignments``,
    ``effects``, ``lists``, ``dicts``, ``operators``, ``subscripts``, ``calls``,
    ``user_calls``, ``control`` (branches and loops), ``iteration``, ``randomness`` and
    ``objects`` (user objects: arguments, and objects made in the function)."""

    PARTS = (Primitives, Statics, Aliases, Sharing, Jumps, Parameters, Assignments, Effects,
             Lists, Dicts, Subscripts, Operators, Calls, UserCalls, ControlFlow, Iteration,
             Statements, Randomness, ArgumentObjects)
    """The classes of the objects it holds (read by :mod:`srcgrad.frontend.tables.surface`)."""

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
        self.runtime_lists: set[str] = set()  # names of Python lists built at run time
        self.param_names: set[str] = set()
        self.in_block = False                 # a branch or loop body, lowered as a function
        self.closure_stack: list[ast.AST] = []    # closures being lowered in place
        self.inlining: list[Any] = []             # helpers being lowered in place
        self.consumed: dict[str, tuple[int, str]] = {}   # changed in place: (line, what)
        self.assigning: set[str] = set()      # names the statement being lowered assigns
        self.wrt_users: frozenset[str] = frozenset()   # user names of differentiated params
        self.line = src.node.lineno
        self.text = ""
        me = weakref.proxy(self)    # what it holds refers back weakly: freed with it, no cycle
        self.prims = Primitives(me)
        self.statics = Statics(me)
        self.aliases = Aliases(me, self.body, self.source_names)
        self.sharing = Sharing(self.aliases, me, lambda callee: me.lower_callee(callee))
        self.parameters = Parameters(me)
        self.assignments = Assignments(me)
        self.effects = Effects(me)
        self.lists = Lists(me)
        self.dicts = Dicts(me)
        self.subscripts = Subscripts(me)
        self.calls = Calls(me)
        self.randomness = Randomness(me)
        self.operators = Operators(me)
        self.user_calls = UserCalls(me)
        self.objects = ArgumentObjects(me)     # objects passed as arguments
        self.iteration = Iteration(me)
        self.control, self.statements = ControlFlow(me), Statements(me)   # try, raise, with
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
        self.sharing.check_fresh(stmt)
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

    def block_lowerer(self, src: Source) -> Lowerer:
        """A lowerer of this one's kind for a block of this function (a branch, a loop body,
        a ``while`` test): it shares the globals' names, the jump flags and the recursion seen
        so far."""
        child = type(self)(src, self.env, set(self.reserved), result_name="out")
        child.jumps.flags |= self.jumps.flags
        child.treeless = self.treeless
        child.wrt_users = self.wrt_users          # a dict argument's code comes at the call
        child.closure_stack, child.inlining = self.closure_stack, self.inlining   # recursion
        child.global_aliases = self.global_aliases   # a global has one name in the module
        return child

    # -------------------------------------------------------------------- expressions
    def expr(self, node: ast.expr) -> Any:
        method = getattr(self, "expr_" + type(node).__name__, None)
        if method is None:
            raise self.error(f"srcgrad cannot compile {describe(node)} yet", node)
        return method(node)

    def expr_Lambda(self, node: ast.Lambda) -> Closure:
        return Closure(node)

    def expr_IfExp(self, node: ast.IfExp) -> Any:
        return self.control.if_expression(node)

    def expr_Constant(self, node: ast.Constant) -> Const:
        return Const(node.value)

    def expr_Name(self, node: ast.Name) -> Any:
        if node.id in self.scope:
            return self.scope[node.id]
        try:
            value = self.env.resolve(node.id)
        except Exception:
            raise self.error(f"name {node.id!r} is not defined", node) from None
        alias = self.statics.global_name(node.id, value, node)
        return T.constant(value, ast.Name(alias, ast.Load()))

    def expr_Tuple(self, node: ast.Tuple) -> Pack:
        return Pack(display_items(self, node.elts))          # (a, *rest) spelled out too

    def expr_List(self, node: ast.List) -> Pack:
        return Pack(display_items(self, node.elts), is_list=True)

    def expr_ListComp(self, node: ast.ListComp) -> Var:
        return self.lists.comprehension(node)

    expr_GeneratorExp = expr_ListComp
    expr_DictComp = expr_ListComp

    def expr_Dict(self, node: ast.Dict) -> Any:
        return self.dicts.literal(node)

    def expr_JoinedStr(self, node: ast.JoinedStr) -> Any:
        return self.dicts.text(node)

    def expr_Call(self, node: ast.Call) -> Any:
        return self.calls.lower(node)

    def expr_Subscript(self, node: ast.Subscript) -> Any:
        return self.subscripts.read(node)

    def expr_Slice(self, node: ast.Slice) -> Any:
        return self.subscripts.slice_value(node)

    def expr_Attribute(self, node: ast.Attribute) -> Any:
        return self.operators.attribute(node)

    def expr_BinOp(self, node: ast.BinOp) -> Any:
        return self.operators.binop(node.op, node.left, node.right, node)

    def expr_UnaryOp(self, node: ast.UnaryOp) -> Any:
        return self.operators.unary(node)

    def expr_Compare(self, node: ast.Compare) -> Any:
        return self.operators.compare(node)

    def expr_BoolOp(self, node: ast.BoolOp) -> Any:
        return self.operators.bool_op(node)

    # ------------------------------------------------------------------------- liveness
    def live_after(self) -> set[str]:
        """The names read after the statement being lowered."""
        return self._live[-1] if self._live else set()

    @contextlib.contextmanager
    def live_as(self, names: set[str]) -> Iterator[None]:
        """While lowering inside it, ``names`` are those read after the statement."""
        self._live.append(names)
        try:
            yield
        finally:
            self._live.pop()

    @contextlib.contextmanager
    def body_of(self, scope: dict[str, Any], result_name: str, src: Source | None = None,
                env: Env | None = None) -> Iterator[None]:
        """While lowering inside it, the body of a function lowered in place (a helper, a
        nested ``def``): its names, its result's name and (a helper's) source and globals;
        all those, and the liveness, line and text, are the caller's again after it."""
        saved = (self.src, self.env, self.scope, self.result_name, self._live, self.line,
                 self.text)
        self.src, self.env = src or self.src, env or self.env
        self.scope, self.result_name, self._live = scope, result_name, []
        try:
            yield
        finally:
            (self.src, self.env, self.scope, self.result_name, self._live, self.line,
             self.text) = saved

    # -------------------------------------------------------------------------- writes
    def consume(self, old: Var, line: int, what: str) -> None:
        """``old`` was changed in place: later reads of it would diverge from Python, and so
        would a list or tuple built at run time that holds it."""
        st = self.aliases.first_holder(old.name)
        if st is not None:
            user = self.source_names.get(old.name, old.name)
            raise self.error(
                f"{user!r} is changed in place after it was put in a list or tuple (line "
                f"{st.line}); in NumPy the change shows through the list too, which "
                "srcgrad does not follow: put a copy in the list", self.node_of_line())
        self.consumed[old.name] = (line, what)

    def node_of_line(self) -> ast.AST:
        node = ast.Pass()
        node.lineno, node.col_offset = self.line, 0
        node.end_lineno, node.end_col_offset = self.line, 0
        return node

    # --------------------------------------------------------------------- statements
    def lower_function(self) -> Function:
        node = self.src.node
        params, defaults = self.parameters.bind()
        if isinstance(node, ast.Lambda):
            self.line, self.text = node.lineno, self.src.text(node.body)
            result = self.materialize(self.expr(node.body), self.src.name)
        else:
            result = self.block(self.jumps.early_returns(node.body))
        fn = Function(self.src.name, params, self.body, result, self.src.filename,
                      node.lineno, defaults, self.source_names, self.used, self.free,
                      self.inline, self.leaves)
        fn.flags = {ssa for ssa, user in self.source_names.items() if user in self.jumps.flags}
        fn.lists = set(self.runtime_lists)
        self.sharing.result_sharing(fn)        # what it shares, what it writes into
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
                if not (structure and isinstance(value, (Pack, Tree, Closure, Record))):
                    value = self.materialize(value, self.result_name)
                elif any(isinstance(v, Closure) for v in literal_items(value)):
                    self.materialize(value, self.result_name)       # refused: a lambda
                for var in held_vars(value):
                    if var.name in self.consumed:
                        self.sharing.check_fresh(Stmt(None, "effect", args=[var]))
                if isinstance(value, Var) and value.name not in self.source_names:
                    value = self.rename_var(value, self.result_name)
                self._live.pop()
                return value
            self.assigning, saved, self.following = bound(s), self.following, (s, stmts[i + 1:])
            try:
                self.statement(s)
            finally:
                self._live.pop()
                self.assigning, self.following = set(), saved
        raise self.error("the function must end with a return statement",
                         stmts[-1] if stmts else self.src.node)

    def statement(self, s: ast.stmt) -> None:
        if isinstance(s, ast.Assign):
            value = self.expr(s.value)
            for target in s.targets:
                self.assignments.assign(target, value)
                if isinstance(target, ast.Name):      # ``a = b = v``: one value, two names
                    value = self.scope[target.id]
        elif isinstance(s, ast.AnnAssign) and s.value is not None:
            self.assignments.assign(s.target, self.expr(s.value))
        elif isinstance(s, ast.AugAssign):
            self.dicts.aug_assign(s) or self.assignments.aug_assign(s)   # d['k'] += v, or x += v
        elif isinstance(s, ast.Expr):
            self.effects.expression(s)      # xs.append(v), print(...), a docstring, a value
        elif isinstance(s, ast.Assert):
            self.effects.effect(s)
        elif isinstance(s, ast.Pass):
            return
        elif isinstance(s, (ast.If, ast.For, ast.Raise, ast.Try, ast.With)):
            self.statements.lower(s)       # a loop over a generator is expanded there
        elif isinstance(s, ast.While):
            self.control.while_statement(s)
        else:
            raise self.error(f"srcgrad cannot compile {describe(s)} yet", s)

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
                for kind in (self.static, self.runtime_lists):      # what the value is goes along
                    if var.name in kind:
                        kind.discard(var.name)
                        kind.add(new)
                self.aliases.rename(var.name, new)
                self.objects.rename(var.name, new)
                self.source_names[new] = user_name
                return Var(new)
        return var

    def materialize(self, value: Any, hint: str) -> Any:
        self.dicts.local_value(value, self.node_of_line())     # a lambda or a dict: refused
        if isinstance(value, Tree):                       # a list argument used whole
            value = self.subscripts.tree_pack(value)
        if isinstance(value, Pack):
            items = [self.materialize(v, f"{hint}_{i}") for i, v in enumerate(value.items)]
            made = self.emit(Stmt(self.fresh(hint), "pack", args=items,
                                  params={"list": True} if value.is_list else {}))
            if value.is_list:
                self.runtime_lists.add(made.name)
            return made
        return value


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
