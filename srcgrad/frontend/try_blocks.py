"""``try``/``except``/``else``/``finally`` in a compiled function.

The try body (assignments of NumPy code to names, prints, a last ``return``) runs once, as a
block of its own whose branch is marked ``catch``: the generated code runs that block in a
Python ``try`` and, when it raises an exception a handler names, the block's other arm
instead (placeholders).  The block hands out the values the body assigns under internal names
and the exception it raised (``None`` when none) under another; which handler that exception
selects is read off it, and only the path Python takes is lowered and differentiated: a
handler, or the body's assignments with the ``else`` and ``finally`` blocks.  A name the body
assigned before the statement that raised is refused where a handler's path reads it.
``except E as e`` binds ``e`` to the exception, for prints, logging and ``raise`` to read; a
bare ``raise`` raises the same exception object again.
"""

from __future__ import annotations

import ast
import copy
from typing import Any

from srcgrad.frontend.callbacks import starred_names
from srcgrad.frontend.jumps import placeholders
from srcgrad.frontend.scopes import assigned, read
from srcgrad.frontend.tables.guards import handler_index
from srcgrad.ir import Const, Stmt, Var, bind_values, is_generated

__all__ = ["TryBlocks", "raises"]

_PURE_BUILTINS = (len, abs, float, int, min, max, sum, range)


class TryBlocks:
    """The lowering of ``try`` statements; ``checks`` (the lowerer's ``statements``) says
    which exception classes and names a handler may use."""

    def __init__(self, host: Any, checks: Any) -> None:
        self.host, self.checks = host, checks

    def lower(self, s: ast.Try) -> None:
        """``try: body except E: handler`` as the body run once in a ``catch`` block,
        then ``if <handler selected> == 0: handler else: <body's assignment>``; a
        ``finally`` block runs at the end of each path (before a handler's last ``raise``),
        and an exception no handler catches runs it, then is raised again."""
        host = self.host
        statements, after = self._probed(s.body, s)
        kinds, paths = [], []
        for handler in s.handlers:
            if handler.type is None:
                raise host.error("srcgrad compiles `except` of named exception classes only "
                                 "(a bare except also catches what srcgrad itself raises)",
                                 handler)
            types = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
            for k in types:
                self.checks.exception_class(k, "except")
            body = copy.deepcopy(handler.body)
            if handler.name is not None:
                self._check_bound(handler)
                for st in _statements(body):              # raise e: the same exception
                    if isinstance(st, ast.Raise) and isinstance(st.exc, ast.Name) and \
                            st.exc.id == handler.name:
                        st.srcgrad_again = True
            kinds.append(ast.Tuple(copy.deepcopy(types), ast.Load()))
            paths.append((handler, body))
        final = copy.deepcopy(s.finalbody)
        if final:                          # what no handler catches: finally, then raised
            kinds.append(ast.Tuple([ast.Name("Exception", ast.Load())], ast.Load()))
            paths.append((s, [ast.copy_location(ast.Raise(None, None), s)]))
            paths = [(where, self._then_finally(body, final, where)) for where, body in paths]
        for k in kinds:
            for n in ast.walk(k):
                ast.copy_location(n, s)
        self._check_partial(statements, paths)
        caught, assign = self._attempt(statements, kinds, s)
        which = self._which(caught, kinds, s)
        chain = assign + copy.deepcopy(after) + copy.deepcopy(s.orelse) + copy.deepcopy(final)
        for i in range(len(paths) - 1, -1, -1):
            where, body = paths[i]
            for n in _own_raises(body):                # re-raise: the same exception
                n.exc, n.srcgrad_again = ast.copy_location(ast.Name(caught, ast.Load()), n), True
            if isinstance(where, ast.ExceptHandler) and where.name is not None:
                alias = ast.Assign([ast.Name(where.name, ast.Store())],
                                   ast.Name(caught, ast.Load()))
                for n in ast.walk(alias):
                    ast.copy_location(n, where)
                body = [alias, *body]
            test = ast.Compare(ast.Name(which, ast.Load()), [ast.Eq()], [ast.Constant(i)])
            for n in ast.walk(test):
                ast.copy_location(n, where)
            chain = [ast.copy_location(ast.If(test, body, chain), where)]
        host.statement(chain[0])

    # ----------------------------------------------------------------------- the body
    def _probed(self, body: list[ast.stmt], s: ast.Try) -> tuple[list[ast.stmt],
                                                                  list[ast.stmt]]:
        """The try body's statements that may raise (assignments to names, expressions,
        prints and logging calls, a last ``return``), and the constant assignments after
        them (Python does not run those when one raises)."""
        host = self.host
        found, after = [], []
        for st in body:
            value = st.value if isinstance(st, (ast.Assign, ast.Return, ast.Expr,
                                                ast.AnnAssign)) else None
            if isinstance(st, ast.Pass) and not found:
                continue
            if found and isinstance(value, ast.Constant) and \
                    not isinstance(st, ast.Expr) and _plain_targets(st):
                after.append(st)
                continue
            if after or value is None or not _plain_targets(st) or found and isinstance(
                    found[-1], ast.Return) or isinstance(st, ast.AnnAssign) and not st.simple:
                raise host.error("srcgrad compiles a try body of assignments to names and "
                                 "expressions of NumPy code (and a last `return`), the "
                                 "exception coming from the NumPy code itself; this body is "
                                 "not compiled yet", st if value is None else s)
            if not (isinstance(st, ast.Expr) and isinstance(value, ast.Call)
                    and host.effects.is_effect(value)):       # print(...) runs as written
                self._check_pure(value)
            found.append(st)
        if not found:
            raise host.error("srcgrad compiles a try body with a statement that may raise "
                             "(`x = f(...)` or `return f(...)`); this body is not compiled "
                             "yet", s)
        return found, after

    def _check_pure(self, node: ast.expr) -> None:
        """What a handler may catch comes from NumPy's and SciPy's own functions (no random
        draw: the stream would move on before the exception), or a block of generated code
        (its derivative differentiated again)."""
        host = self.host
        for n in ast.walk(node):
            if not isinstance(n, ast.Call):
                continue
            try:
                fn = host.expr(n.func)
            except Exception:  # noqa: BLE001 - not a value known when compiling
                fn = None
            value = fn.value if isinstance(fn, Const) else None
            module = getattr(value, "__module__", None) or ""
            if not (module.split(".")[0] in ("numpy", "scipy") and "random" not in module
                    or any(value is b for b in _PURE_BUILTINS) or is_generated(value)):
                raise host.error(f"srcgrad compiles a try body that calls NumPy and SciPy "
                                 f"functions only; {ast.unparse(n.func)} is not one", n)

    def _attempt(self, statements: list[ast.stmt], kinds: list[ast.expr], s: ast.Try
                 ) -> tuple[str, list[ast.stmt]]:
        """Lower the body's statements as a ``catch`` block, each name they assign renamed
        to an internal one, and the exception raised in another (returned), with what
        assigns those values to the user's names on the body's path."""
        host = self.host
        renamed: dict[str, str] = {}
        arm: list[ast.stmt] = []
        made: list[str] = []                   # every value the block hands out
        returned = None

        def fresh(base: str) -> ast.Name:
            made.append(host.fresh_internal(f"{base}_tried"))
            return ast.Name(made[-1], ast.Store())
        for st in statements:
            value = _renamed(copy.deepcopy(st.value), renamed)
            if isinstance(st, ast.Expr) and isinstance(value, ast.Call) and \
                    host.effects.is_effect(value):
                arm.append(ast.Expr(value))
                continue
            if isinstance(st, (ast.Expr, ast.Return)):
                arm.append(ast.Assign([fresh("value")], value))
                returned = made[-1] if isinstance(st, ast.Return) else returned
                continue
            targets = st.targets if isinstance(st, ast.Assign) else [st.target]
            stores = [_stores(t, fresh) for t in targets]
            for t, new in zip(targets, stores):
                renamed.update(zip(_target_names(t), _target_names(new)))
            arm.append(ast.Assign(stores, value))
        caught = host.fresh_internal("caught")
        arm.append(ast.Assign([ast.Name(caught, ast.Store())], ast.Constant(None)))
        for n in ast.walk(ast.Module(arm, [])):
            ast.copy_location(n, statements[-1])
        kinds_here = host.statics.rename(ast.Tuple(copy.deepcopy(kinds), ast.Load()))[0]
        self._catch_block(arm, [*made, caught], statements[-1], kinds_here.elts)
        assign: list[ast.stmt] = [ast.Assign([ast.Name(n, ast.Store())],
                                             ast.Name(new, ast.Load()))
                                  for n, new in renamed.items()]
        if returned is not None:
            assign.append(ast.Return(ast.Name(returned, ast.Load())))
        for a in assign:
            for n in ast.walk(a):
                ast.copy_location(n, statements[-1])
        return caught, assign

    def _check_partial(self, statements: list[ast.stmt], paths: list) -> None:
        """A name the body assigns before its last statement has, on a handler's path, the
        value the body reached (or the one before it): srcgrad hands a handler neither, so
        such a name must be assigned by the handler before it reads it, when it is read
        after the try statement (a handler that raises reads it only before raising)."""
        host = self.host
        partial = {n for st in statements[:-1] for n in _assigned_names(st)}
        live = host.live_after()
        for where, body in paths:
            for n in sorted(partial):
                given, line = False, where
                for st in body:
                    if not given and n in read([st]):
                        given, line = None, st
                        break
                    if isinstance(st, ast.Assign) and n in _assigned_names(st):
                        given = True
                        break
                if given is None or not given and n in live and not raises(body):
                    raise host.error(f"{n!r} is assigned in the try body before the statement "
                                     "that raised, and this path reads it; srcgrad does not "
                                     "compile the value it has there yet: assign it in the "
                                     "except block first, or before the try statement", line)

    def _catch_block(self, arm: list[ast.stmt], outputs: list[str], st: ast.stmt,
                     kinds: list[ast.expr]) -> None:
        """``arm`` as a branch marked ``catch`` (its last output the exception caught): its
        other arm, run when the first raises one of ``kinds``, assigns placeholders (an empty
        list where the first arm's value is a list) and ``None``."""
        host, control = self.host, self.host.control
        inputs = control.inputs_of([arm], set())
        host.sharing.check_block_writes(arm, set(), st)
        label = host.fresh(f"{host.src.name}_try_{st.lineno}")
        params, values, rebuild = control.expand_inputs(inputs, True, starred_names([arm]))
        body = control.block_function(arm, params, outputs, f"{label}_body", st, rebuild, values)
        tried = outputs[:-1]
        skip = placeholders(tried, [body.returned(i) in body.lists for i in range(len(tried))],
                            st) + [copy.deepcopy(arm[-1])]
        blocks = (body, control.block_function(skip, params, outputs, f"{label}_caught", st,
                                               rebuild, values))
        control.refuse_tuples(blocks, outputs, st, "assigned in a try body")
        cond = control.condition(ast.copy_location(ast.Constant(True), st))
        pack = host.fresh(f"try_{st.lineno}")
        host.emit(Stmt(pack, "branch", fn=blocks, args=[cond, *values], params={
            "outputs": len(outputs), "catch": {"kinds": kinds, "caught": len(tried)}}))
        control.consume_inputs(params, values, blocks, set(params))
        control.bind_outputs(Var(pack), outputs, blocks)

    def _which(self, caught: str, kinds: list[ast.expr], s: ast.Try) -> str:
        """An internal name bound to the index of the handler the caught exception selects
        (-1 when the body raised none)."""
        host = self.host
        helper = host.fresh_internal("handler_index")
        bind_values(host.free, {helper: handler_index}, host.src.where(s))
        call = ast.Call(ast.Name(helper, ast.Load()), [
            ast.Name(caught, ast.Load()), *copy.deepcopy(kinds)], [])
        for n in ast.walk(call):
            ast.copy_location(n, s)
        name = host.fresh_internal("handler")
        host.scope[name] = host.statics.static_expr(call, hint=name)
        return name

    # ------------------------------------------------------------------------- handlers
    def _check_bound(self, handler: ast.ExceptHandler) -> None:
        """``except E as e``: ``e`` is read only by prints, logging calls and ``raise``
        statements of the handler (generated code may also hand it on by assignment)."""
        host, name = self.host, handler.name
        if name in host.live_after():
            raise host.error(f"{name!r} is read after its except block (Python deletes it "
                             "there)", handler)
        generated = is_generated(host.env.fn)
        for st in _statements(handler.body):
            if not any(isinstance(n, ast.Name) and n.id == name for n in _own(st)):
                continue
            stores = [n for n in _own(st) if isinstance(n, ast.Name) and n.id == name
                      and not isinstance(n.ctx, ast.Load)]
            effect = isinstance(st, ast.Raise) or isinstance(st, ast.Expr) and isinstance(
                st.value, ast.Call) and host.effects.is_effect(st.value)
            alias = generated and isinstance(st, ast.Assign) and isinstance(st.value, ast.Name)
            if stores or not (effect or alias):
                raise host.error(f"srcgrad compiles `except ... as {name}` where {name!r} is "
                                 "read only by print, logging and raise statements; this use "
                                 "is not compiled", st)

    def _then_finally(self, body: list[ast.stmt], final: list[ast.stmt],
                      where: ast.AST) -> list[ast.stmt]:
        """A handler's statements, then the finally block (before the handler's last
        ``raise``, which propagates after it)."""
        host = self.host
        jumps = [n for n in ast.walk(ast.Module(final, [])) if isinstance(
            n, (ast.Return, ast.Break, ast.Continue, ast.Raise))]
        if jumps:
            raise host.error("srcgrad cannot compile a finally block that returns, jumps or "
                             "raises yet", jumps[0])
        last = body[-1] if body and isinstance(body[-1], ast.Raise) else None
        inner = [n for n in ast.walk(ast.Module(body[:-1] if last else body, []))
                 if isinstance(n, ast.Raise)]
        if inner or last is not None and assigned(final) & read([last]):
            raise host.error("srcgrad cannot compile this except block with a finally block "
                             "yet (it raises where the finally block would run first)",
                             inner[0] if inner else last)
        tail = [last] if last is not None else []
        return (body[:-1] if last else body) + copy.deepcopy(final) + tail


def raises(block: list[ast.stmt]) -> bool:
    """Whether a block always ends by raising (its last statement is a ``raise``, or an
    ``if`` both of whose branches do)."""
    if not block:
        return False
    last = block[-1]
    if isinstance(last, ast.Raise):
        return True
    return isinstance(last, ast.If) and raises(last.body) and raises(last.orelse)


def _plain_targets(st: ast.stmt) -> bool:
    """Whether an assignment writes names only (a subscript write may raise)."""
    targets = st.targets if isinstance(st, ast.Assign) else [getattr(st, "target", None)]
    return all(isinstance(n, (ast.Name, ast.Tuple, ast.Store)) or n is None
               for t in targets for n in ([t] if t is None else ast.walk(t)))


def _own(node: ast.AST) -> list[ast.AST]:
    """The nodes of one statement, not those of the statements nested in it."""
    out, stack = [], [node]
    while stack:
        n = stack.pop()
        out.append(n)
        stack += [c for c in ast.iter_child_nodes(n) if not isinstance(c, ast.stmt)
                  and not isinstance(c, ast.excepthandler)]
    return out


def _statements(body: list[ast.stmt]) -> list[ast.stmt]:
    """Every statement of ``body``, nested ones included (not those of nested functions)."""
    out, stack = [], list(body)
    while stack:
        st = stack.pop()
        out.append(st)
        if not isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            stack += [c for c in ast.iter_child_nodes(st) if isinstance(c, ast.stmt)]
            for h in getattr(st, "handlers", []):
                out.append(h)
                stack += h.body
    return out


def _own_raises(body: list[ast.stmt]) -> list[ast.Raise]:
    """The bare ``raise`` statements of a handler's body that re-raise its exception: not
    those in the handlers of a try nested in it, nor in nested functions."""
    out, stack = [], list(body)
    while stack:
        st = stack.pop()
        if isinstance(st, ast.Raise) and st.exc is None:
            out.append(st)
        elif not isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            stack += [c for c in ast.iter_child_nodes(st) if isinstance(c, ast.stmt)]
    return out


def _renamed(node: ast.AST, names: dict[str, str]) -> ast.AST:
    """``node`` reading the internal names of the body's values assigned before it."""
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and n.id in names:
            n.id = names[n.id]
    return node


def _stores(target: ast.expr, fresh: Any) -> ast.expr:
    """An assignment target with each name replaced by a fresh internal one."""
    if isinstance(target, ast.Name):
        return fresh(target.id)
    return ast.Tuple([_stores(e, fresh) for e in target.elts], ast.Store())


def _target_names(target: ast.expr) -> list[str]:
    return [n.id for n in ast.walk(target) if isinstance(n, ast.Name)]


def _assigned_names(st: ast.stmt) -> set[str]:
    targets = st.targets if isinstance(st, ast.Assign) else [getattr(st, "target", None)]
    return {n for t in targets if t is not None for n in _target_names(t)}
