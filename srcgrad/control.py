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

from srcgrad.errors import describe
from srcgrad.expressions import Pack, Tree
from srcgrad.ir import Stmt, Var

__all__ = ["ControlFlow", "assigned", "read"]


def _walk(stmts: list[ast.stmt]):
    for s in stmts:
        stack = [s]
        while stack:
            node = stack.pop()
            if isinstance(node, (ast.FunctionDef, ast.Lambda, ast.ClassDef)):
                continue
            yield node
            stack.extend(ast.iter_child_nodes(node))


def assigned(stmts: list[ast.stmt]) -> set[str]:
    """Names a block assigns (targets of assignments and of ``for``, arrays written into)."""
    names = set()
    for n in _walk(stmts):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            names.add(n.id)
        elif isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Store):
            base = n.value
            while isinstance(base, ast.Subscript):
                base = base.value
            if isinstance(base, ast.Name):
                names.add(base.id)                     # y[i] = v makes a new y
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and \
                n.func.attr == "append" and isinstance(n.func.value, ast.Name):
            names.add(n.func.value.id)                 # so does xs.append(v)
    return names


def read(stmts: list[ast.AST]) -> set[str]:
    """Names a block reads."""
    return {n.id for n in _walk(stmts) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _own_statements(stmts: list[ast.stmt]):
    """The statements of a block and of its branches, not of the loops nested in it."""
    for st in stmts:
        yield st
        if isinstance(st, ast.If):
            yield from _own_statements(st.body)
            yield from _own_statements(st.orelse)
        elif isinstance(st, (ast.With, ast.Try)):
            yield from _own_statements(st.body)


def exposed(stmts: list[ast.stmt]) -> set[str]:
    """Names a sequence reads before assigning them (what must be live on entry)."""
    killed: set[str] = set()
    out: set[str] = set()
    for s in stmts:
        if isinstance(s, ast.For):
            reads = read([s.iter]) | (exposed(s.body) - _targets(s.target)) | read(s.orelse)
        elif isinstance(s, (ast.Assign, ast.AnnAssign)) and s.value is not None:
            targets = s.targets if isinstance(s, ast.Assign) else [s.target]
            reads = read([s.value]) | set().union(*(read([t]) for t in targets))
        else:
            reads = read([s])
        out |= reads - killed
        if isinstance(s, (ast.Assign, ast.AnnAssign)):
            targets = s.targets if isinstance(s, ast.Assign) else [s.target]
            killed |= set().union(*(_targets(t) for t in targets))
    return out


def _targets(target: ast.expr) -> set[str]:
    """Names bound by an assignment target (a subscript write binds nothing new)."""
    if isinstance(target, ast.Name):
        return {target.id}
    if isinstance(target, (ast.Tuple, ast.List)):
        return set().union(*(_targets(t) for t in target.elts))
    return set()


class ControlFlow:
    """The lowering of ``if``, ``for`` and ``while`` (mixed into the Lowerer)."""

    def live_after(self) -> set[str]:
        return self._live[-1] if self._live else set()

    def block_function(self, body: list[ast.stmt], params: list[str], outputs: list[str],
                       label: str, node: ast.AST) -> Any:
        """Lower ``body`` as ``def label(*params): body; return tuple(outputs)``."""
        from srcgrad.frontend import Source
        from srcgrad.lower import Lowerer
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
        child = Lowerer(src, self.env, set(self.reserved), result_name="out")
        child.flags = set(self.flags)
        child.in_block = True
        child.list_names = {p for p in params if self.is_list(self.scope.get(p))
                            or self.is_sequence_tree(self.scope.get(p))}
        ir = child.lower_function()
        ir.name = label
        ir.nondiff = {p for p in ir.params if child.source_names.get(p, p) in self.flags}
        self.flags |= child.flags
        self.free.update(ir.free)
        return ir

    def inputs_of(self, blocks: list[list[ast.AST]], extra: set[str]) -> list[str]:
        """The outer variables the blocks read (or must pass through), in a stable order."""
        names = set().union(*(read(b) for b in blocks)) | extra
        return sorted(n for n in names if n in self.scope)

    def bind_inputs(self, names: list[str], node: ast.AST) -> list:
        return [self.materialize(self.tree_as_list(self.scope[n], n, node), n) for n in names]

    def is_sequence_tree(self, value: Any) -> bool:
        return isinstance(value, Tree) and value.kind != "dict"

    def tree_as_list(self, value: Any, name: str, node: ast.AST) -> Any:
        """A list or tuple argument read inside a block: the list of its leaves."""
        if not isinstance(value, Tree):
            return value
        leaves = list(value.children.values())
        if value.kind == "dict" or not all(isinstance(v, Var) for v in leaves):
            raise self.error(f"the pytree argument {name!r} is read inside a branch or "
                             "loop; srcgrad compiles that for a flat list or tuple of arrays",
                             node)
        return Pack(leaves, is_list=True)

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
                                 self._node_of_line())
            self.consume(value, self.line, "a list" if self.is_list(value) else "an array")

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
            self._no_jumps(block)
        cond = self.condition(s.test)
        assigned_here = assigned(then) | assigned(orelse)
        live = self.live_after()
        outputs = sorted(n for n in assigned_here if n in self.scope or n in live)
        for name in outputs:
            if name not in self.scope and not (name in assigned(then) and name in
                                               assigned(orelse)):
                raise self.error(f"{name!r} is assigned in one branch only and used after "
                                 "the if statement", s)
        inputs = self.inputs_of([then, orelse], {n for n in outputs if n in self.scope})
        label = self.fresh(f"{self.src.name}_if_{s.lineno}")
        blocks = tuple(self.block_function(b, inputs, outputs, f"{label}_{part}", s)
                       for b, part in ((then, "then"), (orelse, "else")))
        pack = self.fresh(f"if_{s.lineno}")
        values = self.bind_inputs(inputs, s)
        self.emit(Stmt(pack, "branch", fn=blocks, args=[cond, *values],
                       params={"outputs": len(outputs)}))
        self.consume_inputs(inputs, values, blocks, set(inputs))
        self.bind_outputs(Var(pack), outputs, blocks)

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
        simple = (isinstance(s.target, ast.Name) and isinstance(s.iter, ast.Call)
                  and isinstance(s.iter.func, ast.Name) and s.iter.func.id == "range"
                  and len(s.iter.args) == 1)
        counter = s.target.id if simple else self.fresh_internal("k")  # in range(n): i counts
        prologue, trip = self._iteration(s, counter)
        body = ([] if simple else prologue) + s.body
        self._loop(s, body, counter, trip, None, s.orelse)

    def _jumps(self, body: list[ast.stmt], node: ast.AST) -> tuple[list[ast.stmt], str | None]:
        """``break``/``continue`` in a loop body as flags: the rest of the body is guarded.

        Returns the new body and the name of the break flag (an extra output of the body),
        or the body unchanged and None when it has no jumps of its own.
        """
        if not any(isinstance(n, (ast.Break, ast.Continue)) for n in _own_statements(body)):
            return body, None
        brk, skip = self.fresh_internal("stop"), self.fresh_internal("skip")
        self.flags |= {brk, skip}

        def flag(name: str, value: bool) -> ast.stmt:
            st = ast.Assign([ast.Name(name, ast.Store())], ast.Constant(value))
            for n in ast.walk(st):
                ast.copy_location(n, node)
            return st

        def rewrite(stmts: list[ast.stmt]) -> tuple[list[ast.stmt], bool]:
            out: list[ast.stmt] = []
            for i, st in enumerate(stmts):
                if isinstance(st, (ast.Break, ast.Continue)):
                    out.append(ast.copy_location(flag(brk if isinstance(st, ast.Break)
                                                      else skip, True), st))
                    return out, True
                if isinstance(st, ast.If):
                    then, j1 = rewrite(st.body)
                    orelse, j2 = rewrite(st.orelse)
                    filler = [ast.copy_location(ast.Pass(), st)]
                    out.append(ast.copy_location(ast.If(st.test, then or filler,
                                                        orelse), st))
                    if j1 or j2:
                        rest, _ = rewrite(stmts[i + 1:])
                        if rest:
                            test = ast.UnaryOp(ast.Not(), ast.BoolOp(ast.Or(), [
                                ast.Name(brk, ast.Load()), ast.Name(skip, ast.Load())]))
                            for n in ast.walk(test):
                                ast.copy_location(n, rest[0])
                            out.append(ast.copy_location(ast.If(test, rest, []), rest[0]))
                        return out, True
                    continue
                out.append(st)
            return out, False

        new, _ = rewrite(body)
        return [flag(brk, False), flag(skip, False)] + new, brk

    def while_statement(self, s: ast.While) -> None:
        self._loop(s, s.body, self.fresh_internal("k"), None, s.test, s.orelse)

    def _loop(self, s: ast.stmt, body: list[ast.stmt], counter: str, trip: Any,
              test: ast.expr | None, orelse: list[ast.stmt] | None = None) -> None:
        body, stop = self._jumps(body, s)
        if orelse:                       # what the else block reads is live after the loop
            self._live.append(self.live_after() | exposed(orelse))
        live = self.live_after() | exposed(body) | (read([test]) if test is not None else set())
        carried = sorted(n for n in assigned(body) if n in live and n != counter
                         and (n in self.scope or n in self.live_after()) and n != stop)
        for name in carried:
            if name not in self.scope:
                raise self.error(f"{name!r} is first assigned inside the loop and used after "
                                 "it; give it a value before the loop", s)
        consts = [n for n in self.inputs_of([body] + ([[test]] if test is not None else []),
                                            set()) if n not in carried]
        label = self.fresh(f"{self.src.name}_loop_{s.lineno}")
        params = [counter, *carried, *consts]
        outputs = carried + ([stop] if stop else [])
        body_ir = self.block_function(body, params, outputs, f"{label}_body", s)
        body_ir.nondiff |= {counter}
        cond_ir = None
        if test is not None:
            cond_ir = self._condition(test, params, f"{label}_test", s)
            cond_ir.nondiff = set(params)
        args = [*self.bind_inputs(carried, s), *self.bind_inputs(consts, s)]
        pack = self.fresh(f"loop_{s.lineno}")
        self.emit(Stmt(pack, "loop", fn=(body_ir, cond_ir), args=args,
                       params={"trip": trip, "carried": len(carried), "counter": counter,
                               "stops": bool(stop)}))
        self.consume_inputs(carried + consts, args, (body_ir,), set(carried))
        self.bind_outputs(Var(pack), carried, (body_ir,))
        if orelse:
            self._live.pop()
            self._else(s, orelse, Var(pack), len(carried) if stop else None)

    def _else(self, s: ast.stmt, orelse: list[ast.stmt], pack: Var, flag: int | None) -> None:
        """``for … else``: the else block runs unless the loop ended by ``break``."""
        if flag is None:                 # no break in the body: the else block always runs
            for i, st in enumerate(orelse):
                self._live.append(self.live_after() | exposed(orelse[i + 1:]))
                try:
                    self.statement(st)
                finally:
                    self._live.pop()
            return
        name = self.fresh_internal("broke")
        part = self.fresh(name)
        self.emit(Stmt(part, "unpack", args=[pack], params={"index": flag}))
        self.static.add(part)
        self.flags.add(name)
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

    def _condition(self, test: ast.expr, params: list[str], label: str, node: ast.AST) -> Any:
        """The ``while`` test as a block returning ``(bool(test),)``."""
        name = self.fresh_internal("holds")
        assign = ast.Assign([ast.Name(name, ast.Store())], ast.Call(
            ast.Name("bool", ast.Load()), [copy.deepcopy(test)], []))
        for n in ast.walk(assign):
            ast.copy_location(n, test)
        return self.block_function([assign], params, [name], label, node)

    def _iteration(self, s: ast.For, counter: str) -> tuple[list[ast.stmt], Any]:
        """Statements that bind the loop target from the counter, and the trip expression."""
        it = s.iter
        k = ast.Name(counter, ast.Load())

        def assign(target: ast.expr, value: ast.expr) -> ast.stmt:
            st = ast.Assign([copy.deepcopy(target)], value)
            for n in ast.walk(st):
                ast.copy_location(n, s)
            return st

        def sequence(node: ast.expr) -> tuple[list[ast.expr], Any]:
            """Element expressions (by the counter) and the length of an iterable."""
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                if node.func.id == "range" and not node.keywords:
                    start, stop, step = _range_args(node.args)
                    value: ast.expr = k
                    if not (isinstance(step, ast.Constant) and step.value == 1):
                        value = ast.BinOp(value, ast.Mult(), step)
                    if not (isinstance(start, ast.Constant) and start.value == 0):
                        value = ast.BinOp(start, ast.Add(), value)
                    return [value], ("range", start, stop, step)
                if node.func.id == "enumerate" and len(node.args) == 1:
                    inner, length = sequence(node.args[0])
                    return [ast.Tuple([k, inner[0]], ast.Load())], length
                if node.func.id == "zip" and node.args:
                    parts = [sequence(a) for a in node.args]
                    return ([ast.Tuple([p[0][0] for p in parts], ast.Load())],
                            ("min", [p[1] for p in parts]))
            return [ast.Subscript(copy.deepcopy(node), k, ast.Load())], ("len", node)

        values, length = sequence(it)
        return [assign(s.target, values[0])], self._trip(length, s)

    def _trip(self, length: Any, node: ast.AST) -> Var:
        """The number of iterations, computed before the loop as a static value."""
        expr = _trip_expr(length)
        for n in ast.walk(expr):
            ast.copy_location(n, node)
        return self.static_expr(expr, hint="trips")

    def early_returns(self, body: list[ast.stmt]) -> list[ast.stmt]:
        """``return`` inside branches and loops as a flag and a value, the rest guarded.

        ``if c: return a`` … ``return b`` becomes ``value = a; done = True`` in the branch,
        ``if not done:`` around what follows, and one ``return value`` at the end; inside a
        loop the return also breaks out (``break`` is then handled like any other).
        """
        nested = [n for st in body if not isinstance(st, ast.Return)
                  for n in _walk([st]) if isinstance(n, ast.Return)]
        if not nested:
            return body
        value, done = self.fresh_internal("returned"), self.fresh_internal("done")
        self.flags.add(done)
        anchor = body[0]

        def make(text: str, where: ast.AST) -> list[ast.stmt]:
            stmts = ast.parse(text).body
            for st in stmts:
                for n in ast.walk(st):
                    ast.copy_location(n, where)
            return stmts

        def rewrite(stmts: list[ast.stmt], in_loop: bool) -> tuple[list[ast.stmt], bool]:
            out: list[ast.stmt] = []
            for i, st in enumerate(stmts):
                if isinstance(st, ast.Return):
                    assign = make(f"{value} = None\n{done} = True", st)
                    assign[0].value = st.value or ast.Constant(None)
                    out += assign + (make("break", st) if in_loop else [])
                    return out, True
                returns = False
                if isinstance(st, ast.If):
                    st.body, r1 = rewrite(st.body, in_loop)
                    st.orelse, r2 = rewrite(st.orelse, in_loop)
                    returns = r1 or r2
                elif isinstance(st, (ast.For, ast.While)):
                    st.body, returns = rewrite(st.body, True)
                out.append(st)
                if returns:
                    rest, _ = rewrite(stmts[i + 1:], in_loop)
                    guard = make(f"if not {done}:\n    pass", stmts[i + 1] if rest else st)
                    if in_loop:
                        out += make(f"if {done}:\n    break", st)
                    if rest:
                        guard[0].body = rest
                        out += guard
                    return out, True
            return out, False

        new, _ = rewrite(copy.deepcopy(body), False)
        return make(f"{value} = 0.0\n{done} = False", anchor) + new + make(
            f"return {value}", body[-1])

    def _no_jumps(self, block: list[ast.stmt]) -> None:
        for n in _own_statements(block):
            if isinstance(n, ast.Return):
                raise self.error(f"srcgrad cannot compile {describe(n)} inside a branch or "
                                 "loop yet", n)


def _range_args(args: list[ast.expr]) -> tuple[ast.expr, ast.expr, ast.expr]:
    if len(args) == 1:
        return ast.Constant(0), args[0], ast.Constant(1)
    if len(args) == 2:
        return args[0], args[1], ast.Constant(1)
    return args[0], args[1], args[2]


def _trip_expr(length: Any) -> ast.expr:
    kind = length[0]
    if kind == "range":
        _, start, stop, step = length
        args = [stop] if (isinstance(start, ast.Constant) and start.value == 0 and isinstance(
            step, ast.Constant) and step.value == 1) else [start, stop, step]
        return ast.Call(ast.Name("len", ast.Load()), [ast.Call(
            ast.Name("range", ast.Load()), args, [])], [])
    if kind == "len":
        return ast.Call(ast.Name("len", ast.Load()), [copy.deepcopy(length[1])], [])
    return ast.Call(ast.Name("min", ast.Load()), [_trip_expr(p) for p in length[1]], [])

