"""What branches, loops and calls share: which outputs of a block or a user function may
be (views of) its inputs or of one another, which arguments a user function writes into, and
the writes a block makes into an array that a name outside it also sees.

Inside a block (or a callee) two outer names of one array are two parameters: the block
cannot see that a write into one changes the other, so such programs are refused here.
"""

from __future__ import annotations

import ast
import weakref
from collections.abc import Callable
from typing import Any, Protocol

from srcgrad.frontend.aliases import Aliases, held
from srcgrad.frontend.aliases import Host as AliasesHost
from srcgrad.frontend.read_only import refuse_block_write
from srcgrad.frontend.scope_index import held_vars
from srcgrad.ir import Function, Stmt, Var

__all__ = ["Sharing", "stored_and_written", "written_in_place"]

_CALLEES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()   # function -> (code, IR)
_LOWERING: set[int] = set()         # functions being lowered now (recursion)


class Host(AliasesHost, Protocol):
    """What the sharing analysis reads of the lowerer beyond what its ``aliases`` read: the
    values changed in place so far."""

    consumed: dict[str, tuple[int, str]]   # SSA name -> (line, what) where changed in place
    body: list[Stmt]                       # the statements lowered so far
    aliases: Aliases


class Sharing:
    """Aliases across blocks and calls: the lowerer's ``sharing``.  It records into the
    lowerer's ``aliases``, asks ``host`` (the lowerer, as in :class:`Host`) to raise and to
    mark arrays changed, and lowers a called user function with ``lower_callee``."""

    def __init__(self, aliases: Aliases, host: Host,
                 lower_callee: Callable[[Any], Function]) -> None:
        self.aliases, self.host, self.lower_callee = aliases, host, lower_callee

    def block_links(self, st: Stmt) -> None:
        """A call, branch or loop result: each output may share what its block says."""
        blocks = st.fn if isinstance(st.fn, tuple) else (st.fn,)
        if st.kind == "call":
            blocks = (self.callee_ir(st.fn),)
            skip = len(blocks[0].params) - len(st.args) if blocks[0] is not None else 0
            inputs = [None] * skip + list(st.args)      # a bound method's self first
        elif st.kind == "branch":
            inputs = list(st.args[1:])
        else:
            inputs = [None, *st.args]                 # the counter comes first
        items: dict[int, list] = {}
        for ir in blocks:
            if ir is None:
                continue
            params = getattr(ir, "result_params", None)
            if params is None:                        # not known: any input
                params = [set(range(len(inputs)))]
            for i, (ps, group) in enumerate(zip(params, getattr(
                    ir, "result_groups", [set()] * len(params)))):
                bases = items.setdefault(i, [])
                bases += [inputs[p] for p in ps if p < len(inputs)
                          and isinstance(inputs[p], Var)]
                bases += [Var(f"{st.target}#{min(i, j)}-{max(i, j)}") for j in group]
        if st.kind == "loop":                         # run zero times, it hands them back
            for i in range(st.params.get("carried", 0)):
                if isinstance(inputs[i + 1], Var):
                    items.setdefault(i, []).append(inputs[i + 1])
        if st.kind == "call" and len(items) == 1 and not getattr(blocks[0], "returns_pack",
                                                                False):
            for base in items[0]:
                self.aliases.link(st.target, base)
            return
        self.aliases.item_links[st.target] = items  # "pack#i-j": the storage outputs i, j share

    # ----------------------------------------------------------------- what a block shares
    def result_sharing(self, fn: Function) -> None:
        """Which parameters each output of ``fn`` may share storage with, and which outputs
        share one another's (what a caller records as links)."""
        made = next((s for s in fn.body if isinstance(fn.result, Var)
                     and s.target == fn.result.name), None)
        fn.returns_pack = made is not None and made.kind == "pack"
        outputs = made.args if fn.returns_pack else [fn.result]
        index = {p: i for i, p in enumerate(fn.params)}
        for param, tree in fn.trees.items():         # a pytree's leaves are its parameter's
            for _, var in tree.leaves():
                index[var.name] = index[param]
        roots = [self.aliases.roots(o.name) if isinstance(o, Var) else set() for o in outputs]
        fn.result_params = [{index[r] for r in rs if r in index} for rs in roots]
        fn.result_groups = [{j for j, other in enumerate(roots) if j != i and rs & other}
                            for i, rs in enumerate(roots)]
        consumed = self.host.consumed                # the arguments it writes into
        fn.mutates = {p for p in fn.params if p in consumed}
        fn.mutates |= {p for p, tree in fn.trees.items()
                       if any(v.name in consumed for _, v in tree.leaves())}

    def check_fresh(self, stmt: Stmt) -> None:
        """Refuse ``stmt`` if it reads a value changed in place under another name (the two
        names would diverge from Python's one mutable value)."""
        host = self.host
        for name in stmt.reads():
            if name in host.consumed:
                line, what = host.consumed[name]
                user = self.aliases.source_names.get(name, name)
                raise host.error(
                    f"{user!r} names {what} that was changed in place at line {line} under "
                    f"another name; srcgrad does not follow two names for one mutable value "
                    f"(make a copy, or use one name)", host.node_of_line())

    # ---------------------------------------------------------------- blocks and calls
    def callee_ir(self, callee: Any) -> Any:
        """The lowered IR of a user function called here (None while it is being lowered:
        recursion, which the compiler refuses later)."""
        key = getattr(callee, "__func__", callee)
        code = getattr(key, "__code__", None)
        try:
            cached = _CALLEES.get(key)
        except TypeError:                       # not weakly referable: not cached
            cached = None
        if cached is not None and cached[0] is code:
            return cached[1]
        if id(key) in _LOWERING:
            return None
        _LOWERING.add(id(key))
        try:
            ir = self.lower_callee(callee)
        finally:
            _LOWERING.discard(id(key))
        try:
            _CALLEES[key] = (code, ir)
        except TypeError:
            pass
        return ir

    def call_writes(self, st: Stmt, assigned: set[str]) -> None:
        """A user function that writes into an argument changes the caller's array in
        NumPy: refused while another live name sees that array; that array is stale after."""
        ir = self.callee_ir(st.fn)
        if ir is None or not ir.mutates:
            return
        host = self.host
        offset = len(ir.params) - len(st.args)          # a bound method's self
        for k, p in enumerate(ir.params):
            if p not in ir.mutates or k < offset or not isinstance(st.args[k - offset], Var):
                continue
            arg = st.args[k - offset]
            others = [n for n, _ in self.aliases.sharers(arg) if n not in assigned]
            label = st.params.get("label", "the function")
            user = ir.source_names.get(p, p)
            if others:
                raise host.error(
                    f"{label}() changes its argument {user!r} in place, which {others[0]!r} "
                    f"names here; srcgrad does not follow writes into a caller's array: "
                    f"pass a copy, or return the new array", host.node_of_line())
            for root in self.aliases.roots(arg.name):
                host.consume(Var(root), host.line, "an array")

    def check_carried_sharing(self, body: list[ast.stmt], carried: list[str],
                              consts: list[str], ir: Any, node: ast.AST) -> None:
        """A loop whose body writes in place into a value it carries may not hand the next
        iteration two names for one array (``b = a`` in the body): they would come apart."""
        written = written_in_place(body)
        if not written:
            return
        inputs = [None, *carried, *consts]
        groups = getattr(ir, "result_groups", None)
        params = getattr(ir, "result_params", None)
        if groups is None or params is None:
            return
        for i, name in enumerate(carried):
            others = {carried[j] for j in groups[i] if j < len(carried)}
            others |= {inputs[p] for p in params[i] if p != i + 1 and p < len(inputs)
                       and inputs[p] is not None}
            if others and (name in written or others & written):
                raise self.host.error(
                    f"after an iteration {name!r} and {sorted(others)[0]!r} name the same "
                    f"array (or views of one), and the loop writes into it in place; srcgrad "
                    f"does not follow that: take a copy", node)

    def check_block_writes(self, body: list[ast.stmt], extra_live: set[str],
                           node: ast.AST) -> None:
        """A branch or loop body that writes in place into an array another name outside
        sees (and reads) is refused: inside the block the two names are apart."""
        from srcgrad.frontend.scopes import read
        reads = read(body) | extra_live | self.host.live_after()
        for name in sorted(written_in_place(body)):
            value = self.host.scope.get(name)
            refuse_block_write(self.host, value, node)       # NumPy raises at the write
            for var in held_vars(value) if isinstance(value, Var) else ():
                mine = self.aliases.roots(var.name)
                for other, v in self.aliases.holders(skip=name):
                    if other in reads and self.aliases.roots(v.name) & mine:
                        raise self.host.error(
                            f"{name!r} is changed in place in this block while {other!r} "
                            f"names the same array (or a view of it); srcgrad does not follow "
                            f"the change into {other!r}: take a copy first", node)


def written_in_place(stmts: list[ast.stmt]) -> set[str]:
    """Names a block writes into (``y[i] = v``, ``y += v``), nested blocks included."""
    from srcgrad.frontend.scopes import stored_base, walk
    out = set()
    for n in walk(stmts):
        if stored_base(n) is not None:
            out.add(stored_base(n))
        elif isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name):
            out.add(n.target.id)
    return out


def stored_and_written(ir: Any, name: str) -> bool:
    """Whether a block both writes into the array ``name`` and stores a version of it in a
    list or tuple (other than the block's own result)."""
    versions = {p for p in ir.params if ir.source_names.get(p) == name}
    for st in ir.body:
        if st.kind == "prim" and st.fn.name == "index_put" and st.args[0].name in versions:
            versions.add(st.target)
    result = ir.result.name if isinstance(ir.result, Var) else None
    return any(isinstance(a, Var) and a.name in versions
               for st in ir.body if st.target != result for a in held(st))
