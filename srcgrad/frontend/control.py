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
from contextlib import AbstractContextManager
from typing import Any, Protocol

from srcgrad.errors import CompileError
from srcgrad.frontend.callbacks import as_tree, is_function, starred_names
from srcgrad.frontend.dead_results import carried_outputs
from srcgrad.frontend.dicts import Dicts
from srcgrad.frontend.inline import closure_reads
from srcgrad.frontend.iteration import Iteration, rebound
from srcgrad.frontend.jumps import Jumps, placeholders
from srcgrad.frontend.lists import Lists
from srcgrad.frontend.loop_names import checking_bound, late_bound
from srcgrad.frontend.objects import handed_as_is
from srcgrad.frontend.parse import Source
from srcgrad.frontend.scopes import assigned, exposed, exposed_suffixes, read
from srcgrad.frontend.sharing import Sharing, stored_and_written
from srcgrad.frontend.statics import Statics
from srcgrad.frontend.structural import known_branch, lower_in_place, over_argument
from srcgrad.frontend.user_calls import UserCalls
from srcgrad.ir import Closure, Pack, Stmt, Tree, Var, bind_free

__all__ = ["ControlFlow"]


class Host(Protocol):
    """What the lowering of control flow reads of, and asks of, the lowerer that holds it.
    The names in scope, the line and the source change as lowering goes on (a helper lowered
    in place swaps them): they are read here when needed, never kept."""

    scope: dict[str, Any]
    src: Source
    line: int
    static: set[str]                   # SSA names of values with no gradient
    inline: set[str]                   # SSA names printed in place
    source_names: dict[str, str]
    runtime_lists: set[str]
    free: dict[str, Any]               # names the generated module binds when it loads
    jumps: Jumps
    sharing: Sharing
    dicts: Dicts
    iteration: Iteration
    user_calls: UserCalls
    statics: Statics
    lists: Lists

    def block_lowerer(self, src: Source) -> Any: ...

    def statement(self, s: ast.stmt) -> None: ...

    def emit(self, stmt: Stmt) -> Var: ...

    def materialize(self, value: Any, hint: str) -> Any: ...

    def fresh(self, base: str) -> str: ...

    def fresh_internal(self, base: str) -> str: ...

    def error(self, message: str, node: ast.AST) -> CompileError: ...

    def consume(self, old: Var, line: int, what: str) -> None: ...

    def node_of_line(self) -> ast.AST: ...

    def live_after(self) -> set[str]: ...

    def live_as(self, names: set[str]) -> AbstractContextManager: ...


class ControlFlow:
    """The lowering of ``if``, ``for`` and ``while``; the lowerer's ``control``."""

    def __init__(self, host: Host) -> None:
        self.host = host

    def block_function(self, body: list[ast.stmt], params: list[str], outputs: list[str],
                       label: str, node: ast.AST, rebuild: dict | None = None,
                       values: list | None = None, static: set[str] = frozenset()) -> Any:
        """Lower ``body`` as ``def label(*params): body; return tuple(outputs)`` (by a
        lowerer of this one's kind)."""
        host = self.host
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
        src = Source(fn, host.src.filename, host.src.lines, host.src.name)
        child = host.block_lowerer(src)
        child.in_block = True
        child.objects.handed = host.objects.handed_to(params)   # objects: their classes
        child.objects.foreign.update(host.objects.foreign_to(params))
        handed = child.parameters                  # what its parameters are, beyond names
        handed.lists = {p for p in params if host.lists.is_list(host.scope.get(p))} | {
            p for p, v in zip(params, values or ()) if host.lists.is_list(v)}
        handed.rebuild = rebuild or {}
        handed.static = set(static)                # parameters known to carry no gradient
        handed.closures = {n: v for n in closure_reads(host.scope, read(body))
                           if isinstance(v := host.scope.get(n), Closure) or handed_as_is(v)
                           or is_function(v)}
        ir = child.lower_function()
        ir.static_names = set(child.static)
        ir.name = label
        ir.nondiff = {p for p in ir.params if child.source_names.get(p, p) in host.jumps.flags}
        host.jumps.flags |= child.jumps.flags
        bind_free(host.free, ir)
        return ir

    def inputs_of(self, blocks: list[list[ast.AST]], extra: set[str]) -> list[str]:
        """The outer variables the blocks read (or must pass through), in a stable order."""
        host = self.host
        names = closure_reads(host.scope, set().union(*(read(b) for b in blocks)) | extra)
        return sorted(n for n in names if n in host.scope and
                      not isinstance(host.scope[n], Closure) and not handed_as_is(host.scope[n])
                      and not is_function(host.scope[n]))         # functions: handed too

    def bind_inputs(self, names: list[str], node: ast.AST) -> list:
        host = self.host
        for n in names:
            host.dicts.local_value(host.scope[n], node)     # a dict the function built
            if isinstance(host.scope[n], Tree):
                raise host.error(f"the pytree argument {n!r} is assigned in a branch or loop; "
                                 "srcgrad compiles reading it there", node)
        return [host.materialize(host.scope[n], n) for n in names]

    def expand_inputs(self, names: list[str], sequences_as_lists: bool = False,
                      starred: set[str] = frozenset()) -> tuple[list[str], list, dict]:
        """Block parameters and the values bound to them; a pytree argument is passed leaf by
        leaf (``params_w``, ``params_b`` …) and rebuilt inside the block.  What a loop only
        reads may be indexed by the counter: its tuples are passed as lists."""
        host = self.host
        params: list[str] = []
        values: list = []
        rebuild: dict[str, tuple] = {}
        for n in names:
            value = host.scope[n]
            if n in starred and as_tree(value) is not None:     # f(*args) in the block
                value = as_tree(value)
            elif sequences_as_lists and isinstance(value, Pack) and \
                    not host.statics.is_static(value):
                value = Pack(value.items, is_list=True)
            if not isinstance(value, Tree):
                params.append(n)
                values.append(host.materialize(value, n))
                continue
            leaves = []
            for path, var in value.leaves():
                arg = host.fresh_internal("_".join([n, *map(str, path)]))
                params.append(arg)
                values.append(var)
                leaves.append((path, arg))
            rebuild[n] = (value, leaves)
        return params, values, rebuild

    def consume_inputs(self, names: list[str], values: list, blocks: tuple,
                       carried: set[str]) -> None:
        """Inputs a block changes in place are old versions after it; a loop may not change
        what it only reads (the next iteration would see the change)."""
        host = self.host
        for name, value in zip(names, values):
            mutated = any(p in ir.mutates for ir in blocks if ir is not None
                          for p, user in ir.source_names.items() if user == name
                          and p in ir.params)
            if not mutated or not isinstance(value, Var):
                continue
            if name not in carried:
                raise host.error(f"the loop changes {name!r} in place but does not carry it "
                                 "to the next iteration; make a copy inside the loop",
                                 host.node_of_line())
            for ir in blocks:
                if ir is not None and stored_and_written(ir, name):
                    raise host.error(f"{name!r} is written in place and also put in a list or "
                                     "tuple in the loop; in NumPy every element would be the "
                                     "same array: put a copy in the list",
                                     host.node_of_line())
            host.consume(value, host.line, "a list" if host.lists.is_list(value) else "an array")

    def refuse_tuples(self, blocks: tuple, outputs: list[str], node: ast.AST, how: str
                       ) -> None:
        """A tuple that leaves a block is one run-time value, which srcgrad would index as
        an array: refused (its items, as names of their own, are compiled)."""
        host = self.host
        for i, name in enumerate(outputs):
            before = host.scope.get(name)
            tuple_before = isinstance(before, Pack) and not before.is_list and \
                not host.statics.is_static(before) or \
                host.user_calls.tuple_items(before) is not None
            made = [(ir, st) for ir in blocks for st in ir.body if st.target == ir.returned(i)]
            if tuple_before or any(st.kind == "pack" and not st.params.get("list") and any(
                    isinstance(a, Var) and a.name not in ir.static_names for a in st.args)
                    or st.kind == "call" and st.params.get("returns") is not None
                    for ir, st in made):               # a helper's tuple too
                raise host.error(f"{name!r} is a tuple {how}; srcgrad does not compile that "
                                 "yet: give its items names of their own (a, b = ...)", node)

    def bind_outputs(self, pack: Var, outputs: list[str], blocks: tuple = ()) -> None:
        host = self.host
        for i, name in enumerate(outputs):
            part = host.fresh(name)
            host.source_names[part] = name
            host.emit(Stmt(part, "unpack", args=[pack], params={"index": i}))
            host.scope[name] = Var(part)
            if any(ir.returned(i) in ir.lists for ir in blocks):
                host.runtime_lists.add(part)

    # ------------------------------------------------------------------------------- if
    def if_statement(self, s: ast.If) -> None:
        host = self.host
        then, orelse = s.body, s.orelse or [ast.copy_location(ast.Pass(), s)]
        for block in (then, orelse):
            host.jumps.refuse_returns(block)
        known = host.objects.known_branch(s, known_branch(host, s))   # known when compiling
        if known is not None:
            return lower_in_place(host, known)
        cond = self.condition(s.test)
        assigned_here = assigned(then) | assigned(orelse)
        live = host.live_after()
        outputs = carried_outputs(host, sorted(n for n in assigned_here
                                               if n in host.scope or n in live), live)
        skipped = host.jumps.jumped_over(s)
        missing = [n for n in outputs if n not in host.scope and n not in assigned(orelse)]
        for name in outputs:
            if name not in host.scope and not (name in assigned(then) and name in
                                               assigned(orelse)) and \
                    not (skipped and name in missing):
                raise host.error(f"{name!r} is assigned in one branch only and used after "
                                 "the if statement", s)
        inputs = self.inputs_of([then, orelse], {n for n in outputs if n in host.scope})
        host.sharing.check_block_writes(then + orelse, set(), s)
        label = host.fresh(f"{host.src.name}_if_{s.lineno}")
        params, values, rebuild = self.expand_inputs(inputs, True,
                                                     starred_names([then, orelse]))
        then_ir = self.block_function(then, params, outputs, f"{label}_then", s, rebuild,
                                      values)
        if missing:
            orelse = placeholders(missing, [then_ir.returned(outputs.index(n)) in
                                            then_ir.lists for n in missing], s) + orelse
        blocks = (then_ir, self.block_function(orelse, params, outputs, f"{label}_else", s,
                                               rebuild, values))
        self.refuse_tuples(blocks, outputs, s, "assigned in a branch")
        pack = host.fresh(f"if_{s.lineno}")
        host.emit(Stmt(pack, "branch", fn=blocks, args=[cond, *values],
                       params={"outputs": len(outputs)}))
        self.consume_inputs(params, values, blocks, set(params))
        self.bind_outputs(Var(pack), outputs, blocks)

    def if_expression(self, node: ast.IfExp) -> Any:
        """``a if c else b`` as a branch whose blocks each compute one side."""
        host = self.host
        name = host.fresh("choice")
        stmt = ast.If(test=node.test, body=[ast.Assign([ast.Name(name, ast.Store())],
                                                       node.body)],
                      orelse=[ast.Assign([ast.Name(name, ast.Store())], node.orelse)])
        for n in ast.walk(stmt):
            ast.copy_location(n, node)
        with host.live_as(host.live_after() | {name}):
            self.if_statement(stmt)
        return host.scope.pop(name)

    # ------------------------------------------------------------------------------ for
    def for_statement(self, s: ast.For) -> None:
        with over_argument(self.host, s):      # over a list argument: unrolled at the call?
            self._for_statement(s)

    def _for_statement(self, s: ast.For) -> None:
        host = self.host
        items = host.iteration.unrolled_items(s)
        if items is not None:
            return host.iteration.unroll(s, items)
        s = copy.copy(s)
        s.iter = host.iteration.hoist_iterable(s.iter, rebound([s.target, *s.body]))
        simple = (isinstance(s.target, ast.Name) and isinstance(s.iter, ast.Call)
                  and isinstance(s.iter.func, ast.Name) and s.iter.func.id == "range"
                  and len(s.iter.args) == 1      # and the variable is not read after the loop
                  and s.target.id not in host.live_after() | exposed(s.orelse))
        counter = s.target.id if simple else host.fresh_internal("k")  # in range(n): i counts
        prologue, trip = host.iteration.binding(s, counter)
        body = ([] if simple else prologue) + s.body
        self._loop(s, body, counter, trip, None, s.orelse)

    def while_statement(self, s: ast.While) -> None:
        host = self.host
        self._loop(s, s.body, host.fresh_internal("k"), None, s.test, s.orelse)

    def _loop(self, s: ast.stmt, body: list[ast.stmt], counter: str, trip: Any,
              test: ast.expr | None, orelse: list[ast.stmt] | None = None) -> None:
        host = self.host
        body, late = late_bound(host, s, body, test, counter, orelse)   # bound in it first
        body, stop = host.jumps.loop_jumps(body, s)
        with checking_bound(host, late, s, exposed(orelse or [])):   # what the else reads
            pack, flag = self._loop_block(s, body, counter, trip, test, stop)
        if orelse:
            self._else(s, orelse, pack, flag)

    def _loop_block(self, s: ast.stmt, body: list[ast.stmt], counter: str, trip: Any,
                    test: ast.expr | None, stop: str | None) -> tuple[Var, int | None]:
        """The ``loop`` statement; its pack, and where the flag of a ``break`` is in it."""
        host = self.host
        live = closure_reads(host.scope, host.live_after() | exposed(body) | (
            read([test]) if test is not None else set()))
        carried = sorted(n for n in assigned(body) if n in live and n != counter
                         and (n in host.scope or n in host.live_after()) and n != stop)
        for name in carried:
            if name not in host.scope:
                raise host.error(f"{name!r} is first assigned inside the loop and used after "
                                 "it; give it a value before the loop", s)
        consts = [n for n in self.inputs_of([body] + ([[test]] if test is not None else []),
                                            set()) if n not in carried and n != counter]
        host.sharing.check_block_writes(body, read([test]) if test is not None else set(), s)
        label = host.fresh(f"{host.src.name}_loop_{s.lineno}")
        const_params, const_values, rebuild = self.expand_inputs(consts, True,
                                                                 starred_names([body]))
        params = [counter, *carried, *const_params]
        outputs = carried + ([stop] if stop else [])
        static = {n for n in carried if host.statics.is_static(host.scope[n])}
        while True:              # counters (n += 1) stay static when every iteration keeps them
            body_ir = self.block_function(body, params, outputs, f"{label}_body", s, rebuild,
                                          [None] * (1 + len(carried)) + const_values,
                                          static | {counter})      # the counter: an int
            made = dict(zip(carried, body_ir.outputs()))
            lost = {n for n in static if made.get(n) not in body_ir.static_names}
            if not lost:
                break
            static -= lost
        body_ir.nondiff |= {counter} | {p for p in body_ir.params
                                        if body_ir.source_names.get(p) in static}
        host.sharing.check_carried_sharing(body, carried, const_params, body_ir, s)
        cond_ir = None
        if test is not None:
            cond_ir = self._condition(test, params, f"{label}_test", s, rebuild)
            cond_ir.nondiff = set(params)
        self.refuse_tuples((body_ir,), carried, s, "carried through a loop")
        args = [*self.bind_inputs(carried, s), *const_values]
        pack = host.fresh(f"loop_{s.lineno}")
        host.emit(Stmt(pack, "loop", fn=(body_ir, cond_ir), args=args,
                       params={"trip": trip, "carried": len(carried), "counter": counter,
                               "stops": bool(stop)}))
        self.consume_inputs(carried + const_params, args, (body_ir,), set(carried))
        self.bind_outputs(Var(pack), carried, (body_ir,))
        host.static |= {host.scope[n].name for n in static}
        return Var(pack), len(carried) if stop else None

    def _else(self, s: ast.stmt, orelse: list[ast.stmt], pack: Var, flag: int | None) -> None:
        """``for … else``: the else block runs unless the loop ended by ``break``."""
        host = self.host
        if flag is None:                 # no break in the body: the else block always runs
            rest = exposed_suffixes(orelse)          # what each statement leaves live
            for i, st in enumerate(orelse):
                with host.live_as(host.live_after() | rest[i + 1]):
                    host.statement(st)
            return
        name = host.fresh_internal("broke")
        part = host.fresh(name)
        host.emit(Stmt(part, "unpack", args=[pack], params={"index": flag}))
        host.static.add(part)
        host.jumps.flags.add(name)
        host.source_names[part] = name
        host.scope[name] = Var(part)
        test = ast.UnaryOp(ast.Not(), ast.Name(name, ast.Load()))
        guard = ast.If(test, orelse, [])
        for n in ast.walk(test):
            ast.copy_location(n, orelse[0])
        ast.copy_location(guard, orelse[0])
        self.if_statement(guard)

    def condition(self, test: ast.expr) -> Var:
        """A branch or loop condition: a plain Python expression (never differentiated)."""
        host = self.host
        cond = host.statics.static_expr(test, hint="cond")
        host.inline.add(cond.name)
        return cond

    def _condition(self, test: ast.expr, params: list[str], label: str, node: ast.AST,
                   rebuild: dict | None = None) -> Any:
        """The ``while`` test as a block returning ``(bool(test),)``."""
        host = self.host
        name = host.fresh_internal("holds")
        assign = ast.Assign([ast.Name(name, ast.Store())], ast.Call(
            ast.Name("bool", ast.Load()), [copy.deepcopy(test)], []))
        for n in ast.walk(assign):
            ast.copy_location(n, test)
        return self.block_function([assign], params, [name], label, node, rebuild)
