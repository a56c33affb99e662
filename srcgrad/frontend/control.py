"""Control flow lowered to blocks: each branch and each loop body becomes a small function.

``if``/``elif``/``else`` becomes a ``branch`` statement whose two blocks take the same inputs
and return the same outputs; ``for`` and ``while`` become a ``loop`` statement whose body
block maps (counter, carried values, constants) to the new carried values.  Each block is
lowered like a user function and compiled into a vjp function, so the primal keeps, for
every branch taken and every iteration run, the backward closure of that block: the tape is
exactly what each block's adjoint reads, and the adjoint replays the closures in reverse.
"""

from __future__ import annotations

import ast
import copy
from typing import Any

from srcgrad.frontend.aliases import held
from srcgrad.frontend.expressions import Pack, Tree
from srcgrad.frontend.inline import closure_reads
from srcgrad.frontend.iteration import Iteration, rebound
from srcgrad.frontend.parse import Source
from srcgrad.frontend.scopes import assigned, exposed, exposed_suffixes, read
from srcgrad.ir import Closure, Stmt, Var, bind_free

__all__ = ["ControlFlow"]


class ControlFlow(Iteration):
    """The lowering of ``if``, ``for`` and ``while`` (mixed into the Lowerer)."""

    def live_after(self) -> set[str]:
        return self._live[-1] if self._live else set()

    def block_function(self, body: list[ast.stmt], params: list[str], outputs: list[str],
                       label: str, node: ast.AST, rebuild: dict | None = None,
                       values: list | None = None, static: set[str] = frozenset()) -> Any:
        """Lower ``body`` as ``def label(*params): body; return tuple(outputs)`` (by a
        lowerer of this one's kind)."""
        ret = ast.Return(ast.Tuple([ast.Name(o, ast.Load()) for o in outputs], ast.Load()))
        last = body[-1] if body and hasattr(body[-1], "lineno") else node
        ast.copy_location(ret, last)
        ret.end_lineno, ret.end_col_offset = ret.lineno, ret.col_offset
        for n in ast.walk(ret):
            ast.copy_location(n, ret)
        fn = ast.FunctionDef(name=label, args=ast.arguments(
            posonlyargs=[], args=[ast.arg(p) for p in params], vararg=None, kwonlyargs=[],
            kw_defaults=[], kwarg=None, defaults=[]), body=copy.deepcopy(body) + [ret],
            decorator_list=[], returns=None, type_params=[])
        ast.copy_location(fn, node)
        src = Source(fn, self.src.filename, self.src.lines, self.src.name)
        child = type(self)(src, self.env, set(self.reserved), result_name="out")
        child.jumps.flags |= self.jumps.flags
        child.treeless = self.treeless
        child.wrt_users = self.wrt_users          # a dict argument's code comes at the call
        child.list_names = {p for p in params if self.is_list(self.scope.get(p))} | {
            p for p, v in zip(params, values or ()) if self.is_list(v)}
        child.rebuild = rebuild or {}
        child.static_params = set(static)          # parameters known to carry no gradient
        child.in_block = True
        for stack in ("_closures", "_inlining"):     # recursion is seen across blocks
            child.__dict__[stack] = self.__dict__.setdefault(stack, [])
        child.global_aliases = self.global_aliases   # a global has one name in the module
        child.closures = {n: v for n in closure_reads(self.scope, read(body))
                          if isinstance(v := self.scope.get(n), Closure)}
        ir = child.lower_function()
        ir.static_names = set(child.static)
        ir.name = label
        ir.nondiff = {p for p in ir.params if child.source_names.get(p, p) in self.jumps.flags}
        self.jumps.flags |= child.jumps.flags
        bind_free(self.free, ir)
        return ir

    def inputs_of(self, blocks: list[list[ast.AST]], extra: set[str]) -> list[str]:
        """The outer variables the blocks read (or must pass through), in a stable order."""
        names = closure_reads(self.scope, set().union(*(read(b) for b in blocks)) | extra)
        return sorted(n for n in names if n in self.scope and
                      not isinstance(self.scope[n], Closure))    # closures: child.closures

    def bind_inputs(self, names: list[str], node: ast.AST) -> list:
        for n in names:
            self.local_value(self.scope[n], node)     # a dict the function built
            if isinstance(self.scope[n], Tree):
                raise self.error(f"the pytree argument {n!r} is assigned in a branch or loop; "
                                 "srcgrad compiles reading it there", node)
        return [self.materialize(self.scope[n], n) for n in names]

    def expand_inputs(self, names: list[str], sequences_as_lists: bool = False
                      ) -> tuple[list[str], list, dict]:
        """Block parameters and the values bound to them; a pytree argument is passed leaf by
        leaf (``params_w``, ``params_b`` …) and rebuilt inside the block.  What a loop only
        reads may be indexed by the counter: its tuples are passed as lists."""
        params: list[str] = []
        values: list = []
        rebuild: dict[str, tuple] = {}
        for n in names:
            value = self.scope[n]
            if sequences_as_lists and isinstance(value, Pack) and not self.is_static(value):
                value = Pack(value.items, is_list=True)
            if not isinstance(value, Tree):
                params.append(n)
                values.append(self.materialize(value, n))
                continue
            leaves = []
            for path, var in value.leaves():
                arg = self.fresh_internal("_".join([n, *map(str, path)]))
                params.append(arg)
                values.append(var)
                leaves.append((path, arg))
            rebuild[n] = (value, leaves)
        return params, values, rebuild

    def consume_inputs(self, names: list[str], values: list, blocks: tuple,
                       carried: set[str]) -> None:
        """Inputs a block changes in place are old versions after it; a loop may not change
        what it only reads (the next iteration would see the change)."""
        for name, value in zip(names, values):
            mutated = any(p in ir.mutates for ir in blocks if ir is not None
                          for p, user in ir.source_names.items() if user == name
                          and p in ir.params)
            if not mutated or not isinstance(value, Var):
                continue
            if name not in carried:
                raise self.error(f"the loop changes {name!r} in place but does not carry it "
                                 "to the next iteration; make a copy inside the loop",
                                 self.node_of_line())
            for ir in blocks:
                if ir is not None and _stored_and_written(ir, name):
                    raise self.error(f"{name!r} is written in place and also put in a list or "
                                     "tuple in the loop; in NumPy every element would be the "
                                     "same array: put a copy in the list",
                                     self.node_of_line())
            self.consume(value, self.line, "a list" if self.is_list(value) else "an array")

    def _refuse_tuples(self, blocks: tuple, outputs: list[str], node: ast.AST, how: str
                       ) -> None:
        """A tuple that leaves a block is one run-time value, which srcgrad would index as
        an array: refused (its items, as names of their own, are compiled)."""
        for i, name in enumerate(outputs):
            before = self.scope.get(name)
            tuple_before = isinstance(before, Pack) and not before.is_list and \
                not self.is_static(before) or self.tuple_items(before) is not None
            made = [(ir, st) for ir in blocks for st in ir.body if st.target == ir.returned(i)]
            if tuple_before or any(st.kind == "pack" and not st.params.get("list") and any(
                    isinstance(a, Var) and a.name not in ir.static_names for a in st.args)
                    or st.kind == "call" and st.params.get("returns") is not None
                    for ir, st in made):               # a helper's tuple too
                raise self.error(f"{name!r} is a tuple {how}; srcgrad does not compile that "
                                 "yet: give its items names of their own (a, b = ...)", node)

    def bind_outputs(self, pack: Var, outputs: list[str], blocks: tuple = ()) -> None:
        for i, name in enumerate(outputs):
            part = self.fresh(name)
            self.source_names[part] = name
            self.emit(Stmt(part, "unpack", args=[pack], params={"index": i}))
            self.scope[name] = Var(part)
            if any(ir.returned(i) in ir.lists for ir in blocks):
                self.lists.add(part)

    # ------------------------------------------------------------------------------- if
    def if_statement(self, s: ast.If) -> None:
        then, orelse = s.body, s.orelse or [ast.copy_location(ast.Pass(), s)]
        for block in (then, orelse):
            self.jumps.refuse_returns(block)
        cond = self.condition(s.test)
        assigned_here = assigned(then) | assigned(orelse)
        live = self.live_after()
        outputs = sorted(n for n in assigned_here if n in self.scope or n in live)
        skipped = self.jumps.jumped_over(s)
        missing = [n for n in outputs if n not in self.scope and n not in assigned(orelse)]
        for name in outputs:
            if name not in self.scope and not (name in assigned(then) and name in
                                               assigned(orelse)) and \
                    not (skipped and name in missing):
                raise self.error(f"{name!r} is assigned in one branch only and used after "
                                 "the if statement", s)
        inputs = self.inputs_of([then, orelse], {n for n in outputs if n in self.scope})
        self.sharing.check_block_writes(then + orelse, set(), s)
        label = self.fresh(f"{self.src.name}_if_{s.lineno}")
        params, values, rebuild = self.expand_inputs(inputs, True)
        then_ir = self.block_function(then, params, outputs, f"{label}_then", s, rebuild,
                                      values)
        if missing:
            orelse = self._placeholders(missing, [then_ir.returned(outputs.index(n)) in
                                                  then_ir.lists for n in missing], s) + orelse
        blocks = (then_ir, self.block_function(orelse, params, outputs, f"{label}_else", s,
                                               rebuild, values))
        self._refuse_tuples(blocks, outputs, s, "assigned in a branch")
        pack = self.fresh(f"if_{s.lineno}")
        self.emit(Stmt(pack, "branch", fn=blocks, args=[cond, *values],
                       params={"outputs": len(outputs)}))
        self.consume_inputs(params, values, blocks, set(params))
        self.bind_outputs(Var(pack), outputs, blocks)

    def _placeholders(self, names: list[str], lists: list[bool], node: ast.AST
                      ) -> list[ast.stmt]:
        """``name = 0.0`` (``[]`` for a list) on the path that has jumped: a value nothing
        reads, so that the names the guarded code assigns are defined on both paths."""
        out = []
        for name, is_list in zip(names, lists):
            value = ast.List([], ast.Load()) if is_list else ast.Constant(0.0)
            st = ast.Assign([ast.Name(name, ast.Store())], value)
            for n in ast.walk(st):
                ast.copy_location(n, node)
            out.append(st)
        return out

    def if_expression(self, node: ast.IfExp) -> Any:
        """``a if c else b`` as a branch whose blocks each compute one side."""
        name = self.fresh("choice")
        stmt = ast.If(test=node.test, body=[ast.Assign([ast.Name(name, ast.Store())],
                                                       node.body)],
                      orelse=[ast.Assign([ast.Name(name, ast.Store())], node.orelse)])
        for n in ast.walk(stmt):
            ast.copy_location(n, node)
        self._live.append(self.live_after() | {name})
        try:
            self.if_statement(stmt)
        finally:
            self._live.pop()
        return self.scope.pop(name)

    # ------------------------------------------------------------------------------ for
    def for_statement(self, s: ast.For) -> None:
        items = self._structure_items(s)
        if items is not None:
            return self._unrolled(s, items)
        s = copy.copy(s)
        s.iter = self.hoist_iterable(s.iter, rebound([s.target, *s.body]))
        simple = (isinstance(s.target, ast.Name) and isinstance(s.iter, ast.Call)
                  and isinstance(s.iter.func, ast.Name) and s.iter.func.id == "range"
                  and len(s.iter.args) == 1      # and the variable is not read after the loop
                  and s.target.id not in self.live_after() | exposed(s.orelse))
        counter = s.target.id if simple else self.fresh_internal("k")  # in range(n): i counts
        prologue, trip = self._iteration(s, counter)
        body = ([] if simple else prologue) + s.body
        self._loop(s, body, counter, trip, None, s.orelse)

    def while_statement(self, s: ast.While) -> None:
        self._loop(s, s.body, self.fresh_internal("k"), None, s.test, s.orelse)

    def _loop(self, s: ast.stmt, body: list[ast.stmt], counter: str, trip: Any,
              test: ast.expr | None, orelse: list[ast.stmt] | None = None) -> None:
        body, stop = self.jumps.loop_jumps(body, s)
        if orelse:                       # what the else block reads is live after the loop
            self._live.append(self.live_after() | exposed(orelse))
        live = closure_reads(self.scope, self.live_after() | exposed(body) | (
            read([test]) if test is not None else set()))
        carried = sorted(n for n in assigned(body) if n in live and n != counter
                         and (n in self.scope or n in self.live_after()) and n != stop)
        for name in carried:
            if name not in self.scope:
                raise self.error(f"{name!r} is first assigned inside the loop and used after "
                                 "it; give it a value before the loop", s)
        consts = [n for n in self.inputs_of([body] + ([[test]] if test is not None else []),
                                            set()) if n not in carried and n != counter]
        self.sharing.check_block_writes(body, read([test]) if test is not None else set(), s)
        label = self.fresh(f"{self.src.name}_loop_{s.lineno}")
        const_params, const_values, rebuild = self.expand_inputs(consts, True)
        params = [counter, *carried, *const_params]
        outputs = carried + ([stop] if stop else [])
        static = {n for n in carried if self.is_static(self.scope[n])}
        while True:              # counters (n += 1) stay static when every iteration keeps them
            body_ir = self.block_function(body, params, outputs, f"{label}_body", s, rebuild,
                                          [None] * (1 + len(carried)) + const_values, static)
            made = dict(zip(carried, body_ir.outputs()))
            lost = {n for n in static if made.get(n) not in body_ir.static_names}
            if not lost:
                break
            static -= lost
        body_ir.nondiff |= {counter} | {p for p in body_ir.params
                                        if body_ir.source_names.get(p) in static}
        self.sharing.check_carried_sharing(body, carried, const_params, body_ir, s)
        cond_ir = None
        if test is not None:
            cond_ir = self._condition(test, params, f"{label}_test", s, rebuild)
            cond_ir.nondiff = set(params)
        self._refuse_tuples((body_ir,), carried, s, "carried through a loop")
        args = [*self.bind_inputs(carried, s), *const_values]
        pack = self.fresh(f"loop_{s.lineno}")
        self.emit(Stmt(pack, "loop", fn=(body_ir, cond_ir), args=args,
                       params={"trip": trip, "carried": len(carried), "counter": counter,
                               "stops": bool(stop)}))
        self.consume_inputs(carried + const_params, args, (body_ir,), set(carried))
        self.bind_outputs(Var(pack), carried, (body_ir,))
        self.static |= {self.scope[n].name for n in static}
        if orelse:
            self._live.pop()
            self._else(s, orelse, Var(pack), len(carried) if stop else None)

    def _else(self, s: ast.stmt, orelse: list[ast.stmt], pack: Var, flag: int | None) -> None:
        """``for … else``: the else block runs unless the loop ended by ``break``."""
        if flag is None:                 # no break in the body: the else block always runs
            rest = exposed_suffixes(orelse)          # what each statement leaves live
            for i, st in enumerate(orelse):
                self._live.append(self.live_after() | rest[i + 1])
                try:
                    self.statement(st)
                finally:
                    self._live.pop()
            return
        name = self.fresh_internal("broke")
        part = self.fresh(name)
        self.emit(Stmt(part, "unpack", args=[pack], params={"index": flag}))
        self.static.add(part)
        self.jumps.flags.add(name)
        self.source_names[part] = name
        self.scope[name] = Var(part)
        test = ast.UnaryOp(ast.Not(), ast.Name(name, ast.Load()))
        guard = ast.If(test, orelse, [])
        for n in ast.walk(test):
            ast.copy_location(n, orelse[0])
        ast.copy_location(guard, orelse[0])
        self.if_statement(guard)

    def condition(self, test: ast.expr) -> Var:
        """A branch or loop condition: a plain Python expression (never differentiated)."""
        cond = self.static_expr(test, hint="cond")
        self.inline.add(cond.name)
        return cond

    def _condition(self, test: ast.expr, params: list[str], label: str, node: ast.AST,
                   rebuild: dict | None = None) -> Any:
        """The ``while`` test as a block returning ``(bool(test),)``."""
        name = self.fresh_internal("holds")
        assign = ast.Assign([ast.Name(name, ast.Store())], ast.Call(
            ast.Name("bool", ast.Load()), [copy.deepcopy(test)], []))
        for n in ast.walk(assign):
            ast.copy_location(n, test)
        return self.block_function([assign], params, [name], label, node, rebuild)


def _stored_and_written(ir: Any, name: str) -> bool:
    """Whether a block both writes into the array ``name`` and stores a version of it in a
    list or tuple (other than the block's own result)."""
    versions = {p for p in ir.params if ir.source_names.get(p) == name}
    for st in ir.body:
        if st.kind == "prim" and st.fn.name == "index_put" and st.args[0].name in versions:
            versions.add(st.target)
    result = ir.result.name if isinstance(ir.result, Var) else None
    return any(isinstance(a, Var) and a.name in versions
               for st in ir.body if st.target != result for a in held(st))
