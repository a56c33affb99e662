"""Whole loops as numba functions (``backend="numba"``, shape-specialised modules).

A loop of the main function runs its body's vjp function once an iteration and keeps the
backward closure each returns; its adjoint calls them in reverse (:mod:`~srcgrad.codegen.
control`).  Where the first call saw every value of the body and of its closure keep one
shape in every iteration (:mod:`~srcgrad.codegen.backends.numba.loop_sites`), and every statement
is one
numba compiles (:mod:`~srcgrad.codegen.backends.numba.loop_shapes`), the pair becomes two ``@njit``
functions, the code a person writes for backpropagation through time:

- ``<loop>_forward(trips, *carried, *read)`` runs the body's primal statements in a loop,
  stores what the closure reads into arrays of ``(trips, *shape)``, and returns the carried
  values and those stores;
- ``<loop>_adjoint(trips, *stores, *cotangents, *totals, *read)`` runs the closure's
  statements for ``t`` from ``trips - 1`` down to 0, carrying the cotangents and adding into
  the totals of what the body only reads.

The main function calls them in place of its two loops.  A loop the pass cannot prove it
handles keeps its generic code, which is right for it.
"""

from __future__ import annotations

import ast
import copy
import logging

from srcgrad.codegen.backends.numba.loop_invariants import find_reuse
from srcgrad.codegen.backends.numba.loop_shapes import (
    ADD_OUTER,
    BOOL,
    F8,
    I8,
    Body,
    Refused,
    is_comment,
)
from srcgrad.codegen.backends.numba.loop_sites import Fact, LoopSite, find_loops
from srcgrad.codegen.printer import unparse

__all__ = ["loop_kernels", "Refused"]

DECORATOR = "@njit(cache=True, error_model='numpy')"

LOG = logging.getLogger(__name__)
"""Why a loop keeps its generic code, logged at DEBUG level
(``srcgrad.codegen.backends.numba.loops``)."""

_COTANGENT = '''def {name}(g, shape):
    """A loop kernel's starting cotangent: ``g`` (None for zero, a number, or an array that
    broadcasts to ``shape``) as a new float64 array of ``shape``, or a float for ()."""
    if g is None:
        g = 0.0
    if shape == ():
        return float(g)
    return np.full(shape, g, dtype=np.float64)'''


def loop_kernels(functions: list[ast.FunctionDef], main: ast.FunctionDef,
                 loops: dict[str, dict[str, dict[str, Fact]]], taken: set[str]) -> list[str]:
    """Rewrite ``main``'s loops that qualify to call their kernels (in place) and return
    the kernels' sources, module-level; ``loops``: the facts of each body's values
    (:class:`~srcgrad.codegen.backends.numba.loop_sites.ShapeFacts`); new names avoid ``taken`` and
    are
    added to it."""
    by_name = {fn.name: fn for fn in functions}
    sources: list[str] = []
    cotangent = add_outer = None
    outer_used = False
    for site in find_loops(main):
        body = by_name.get(site.body)
        seen = loops.get(site.body)
        if body is None or not seen or not {"primal", "backward"} <= set(seen):
            LOG.debug("loop %s: no facts of its body and closure", site.body)
            continue
        try:
            if cotangent is None:
                cotangent = _fresh("loop_cotangent", taken)
                add_outer = _fresh("add_outer", taken)
            kernel = _Kernel(site, body, seen, main, add_outer)
            names = _stem(site.body)
            forward, adjoint = _fresh(f"{names}_forward", taken), _fresh(f"{names}_adjoint",
                                                                         taken)
            texts = kernel.write(forward, adjoint, cotangent)
        except Refused as why:
            LOG.debug("loop %s keeps its generic code: %s", site.body, why)
            continue
        sources += texts
        outer_used = outer_used or kernel.outer_used
    if sources:
        sources.insert(0, _COTANGENT.format(name=cotangent))
    if outer_used:
        sources.insert(1, ADD_OUTER.format(name=add_outer))
    return sources


def _stem(body: str) -> str:
    for end in ("_body_vjp", "_vjp"):
        if body.endswith(end):
            return body[:-len(end)]
    return body


def _fresh(base: str, taken: set[str]) -> str:
    name, k = base, 0
    while name in taken:
        k += 1
        name = f"{base}_{k}"
    taken.add(name)
    return name


def _name(node: ast.AST) -> str | None:
    return node.id if isinstance(node, ast.Name) else None


def _stores(tree: ast.AST) -> list[str]:
    return [n.id for n in ast.walk(tree) if isinstance(n, ast.Name)
            and isinstance(n.ctx, ast.Store)]


class _Kernel:
    """One loop's two kernels, checked when made (raises :class:`Refused`)."""

    def __init__(self, site: LoopSite, body: ast.FunctionDef, seen: dict, main: ast.FunctionDef,
                 add_outer: str) -> None:
        self.site, self.main, self.add_outer = site, main, add_outer
        params = [a.arg for a in body.args.args]
        if body.args.vararg or body.args.kwonlyargs or body.args.kwarg or len(params) < 2:
            raise Refused("the body's parameters")
        closures = [i for i, st in enumerate(body.body) if isinstance(st, ast.FunctionDef)]
        if len(closures) != 1 or closures[0] != len(body.body) - 2:
            raise Refused("no single backward closure")
        closure, ret = body.body[-2], body.body[-1]
        if not (isinstance(ret, ast.Return) and isinstance(ret.value, ast.Tuple)
                and len(ret.value.elts) == 2 and _name(ret.value.elts[1]) == closure.name):
            raise Refused("the body's return")
        primal = body.body[:-2]
        out = self._outputs(primal, ret.value.elts[0])
        n = len(out)
        if not n:
            raise Refused("a loop that carries nothing")
        self.counter, self.carried, self.consts = params[0], params[1:1 + n], params[1 + n:]
        self.seen = seen
        env = {p: seen["primal"][p] for p in params[1:] if p in seen["primal"]}
        env[self.counter] = ((), I8, "int")
        if any(p not in env for p in self.carried):
            raise Refused("a carried value without one shape")
        fwd = Body(env)
        self.forward = fwd.statements(primal)
        fwd.check(seen["primal"], fwd.assigned)
        if fwd.assigned & set(params):
            raise Refused("the body rebinds a parameter")
        self.out = [fwd.expr(e) for e in out]
        if [f for _, f in self.out] != [env[p] for p in self.carried]:
            raise Refused("a carried value changes shape")
        self.remade = self._numpy_scalars(out, seen.get("python", frozenset()))
        self._backward(fwd, closure)

    @staticmethod
    def _outputs(primal: list[ast.stmt], value: ast.expr) -> list[ast.expr]:
        """The carried values the body returns, its ``out = (...)`` statement removed."""
        if isinstance(value, ast.Tuple):
            return value.elts
        for i, st in enumerate(primal):
            if isinstance(st, ast.Assign) and [_name(t) for t in st.targets] == [_name(value)] \
                    and isinstance(st.value, ast.Tuple):
                del primal[i]
                return st.value.elts
        raise Refused("the body's outputs")

    def _numpy_scalars(self, out: list[ast.expr], python: frozenset[str]) -> dict[int, str]:
        """``{i: "float64"}`` for each carried scalar that left the last iteration as a NumPy
        scalar (numba returns Python's: the main function makes NumPy's again)."""
        remade = {}
        for i, (e, (shape, dtype, _)) in enumerate(zip(out, (f for _, f in self.out))):
            if shape or isinstance(e, ast.Constant) or _name(e) in python:
                continue
            if _name(e) is None or dtype != F8:
                raise Refused("a carried scalar of unknown type")
            remade[i] = dtype.name
        return remade

    def _backward(self, fwd: Body, closure: ast.FunctionDef) -> None:
        """The adjoint statements, the cotangents' and totals' names and facts, and the
        values to store in the forward loop."""
        site, n = self.site, len(self.carried)
        call, rebind = site.backward.body
        if not (isinstance(call, ast.Assign) and isinstance(call.targets[0], ast.Tuple)
                and isinstance(call.value, ast.Call) and len(call.value.args) == 1
                and _name(call.value.func) == _name(site.backward.target)):
            raise Refused("the adjoint loop's call")
        targets = [_name(t) for t in call.targets[0].elts]
        seed = call.value.args[0]
        extras: list[str | None] = []
        if isinstance(seed, ast.BinOp) and isinstance(seed.op, ast.Add) \
                and isinstance(seed.right, ast.Tuple):
            seed, extras = seed.left, [_name(e) for e in seed.right.elts]
        if _name(seed) is None or None in targets or None in extras \
                or len(targets) != 1 + n + len(self.consts):
            raise Refused("the adjoint loop's seed")
        if not (isinstance(rebind, ast.Assign) and _name(rebind.targets[0]) == _name(seed)
                and isinstance(rebind.value, ast.Tuple)
                and [_name(e) for e in rebind.value.elts] == targets[1:1 + n]):
            raise Refused("the adjoint loop's cotangents")
        places = [targets.index(e) for e in extras if targets.count(e) == 1]
        if len(places) != len(extras) or any(p <= n for p in places):
            raise Refused("the adjoint loop's totals")
        self.seed, self.targets, self.extras, self.places = _name(seed), targets, extras, places
        self.rebind = rebind
        facts = [fwd.env[p] for p in self.carried] + [
            self.seen["primal"].get(self.consts[p - 1 - n]) for p in places]
        if any(f is None or f[1] == BOOL or f[2] == "int" for f in facts):
            raise Refused("a cotangent of other than floats")
        self.facts = facts
        inner = {*fwd.env, *fwd.shapes, *fwd.indices, *fwd.assigned}
        names = inner | set(self.targets[1:1 + n]) | set(extras) | {*_stores(closure)}
        if set(_stores(closure)) & inner or set(targets[1:1 + n] + extras) & (
                inner | set(_stores(closure))):
            raise Refused("a name of the adjoint is also one of the body")
        self.names = names
        d_out = closure.args.args[0].arg if len(closure.args.args) == 1 else None
        seeds = self.targets[1:1 + n] + extras
        stmts = []
        for st in closure.body[:-1]:
            if isinstance(st, ast.Assign) and isinstance(st.value, ast.Subscript) \
                    and _name(st.value.value) == d_out \
                    and isinstance(st.value.slice, ast.Constant) \
                    and type(st.value.slice.value) is int \
                    and 0 <= st.value.slice.value < len(seeds):
                st = ast.Assign(st.targets, ast.Name(seeds[st.value.slice.value], ast.Load()),
                                lineno=0)
            stmts.append(st)
        back_ret = closure.body[-1]
        if d_out is None or not (isinstance(back_ret, ast.Return)
                                 and isinstance(back_ret.value, ast.Tuple)
                                 and len(back_ret.value.elts) == len(targets)):
            raise Refused("the backward closure's shape")
        env = dict(fwd.env)
        env.update(zip(seeds, facts))
        bwd = Body(env, outer=self.add_outer)
        bwd.shapes, bwd.indices = dict(fwd.shapes), dict(fwd.indices)
        self.backward = bwd.statements(stmts)
        bwd.check(self.seen["backward"], bwd.assigned)
        returned = [back_ret.value.elts[1 + i] for i in range(n)] + [
            back_ret.value.elts[p] for p in places]
        self.returned = [bwd.expr(e) for e in returned]
        if [f for _, f in self.returned] != facts:
            raise Refused("a cotangent changes shape")
        reads = bwd.names_read(self.backward + [ast.Expr(e) for e, _ in self.returned])
        reads -= {"np", self.add_outer}
        self.saved = sorted(reads & (fwd.assigned | set(self.carried)))
        unknown = reads - set(self.saved) - set(self.consts) - {self.counter} - set(seeds)
        fwd_reads = fwd.names_read(self.forward + [ast.Expr(e) for e, _ in self.out])
        unknown |= fwd_reads - set(self.carried) - set(self.consts) - {self.counter, "np"}
        if unknown:
            raise Refused(f"names a kernel cannot see: {sorted(unknown)}")
        self.fwd_env = fwd.env
        self.outer_used = bwd.outer_used
        self.reuse = find_reuse(self.forward, self.backward,
                                [e for e, _ in self.out + self.returned], self.consts,
                                self.counter)

    # --------------------------------------------------------------------- the kernels
    def write(self, forward: str, adjoint: str, cotangent: str) -> list[str]:
        """Both kernels' sources; rewrites the main function's two loops to call them."""
        taken = set(self.names) | set(self.consts) | set(self.carried) | {self.counter, "np"}
        trips = _fresh("trips", taken)
        reuse = self.reuse
        stores = {v: _fresh(f"{v}_saved", taken) for v in self.saved
                  if v not in reuse.invariants and v not in reuse.rows}
        passed = [stores.get(v, v) for v in self.saved if v not in reuse.rows]
        header = ", ".join([trips, *self.carried, *self.consts])
        lines = [DECORATOR, f"def {forward}({header}):",
                 f'    """The loop of {self.site.body} run forward: its carried values at '
                 'the end, and what its adjoint reads from each iteration."""']
        for v, store in stores.items():
            shape, dtype, _ = self.fwd_env[v]
            kind = "" if dtype not in (BOOL, I8) else \
                ", dtype=np.bool_" if dtype == BOOL else ", dtype=np.int64"
            lines.append(f"    {store} = np.empty({(trips,) + shape!r}{kind})".replace(
                f"'{trips}'", trips))
        if reuse.hoisted:
            lines.append("    # computed from the loop's constant inputs alone: once")
            lines += _indent(reuse.hoisted, 1)
        lines.append(f"    for {self.counter} in range({trips}):")
        lines += _indent(reuse.loop, 2)
        lines += [f"        {store}[{self.counter}] = {v}" for v, store in stores.items()]
        lines.append(f"        {_tuple(self.carried)} = "
                     f"{_tuple([unparse(e) for e, _ in self.out])}")
        lines.append(f"    return ({', '.join(self.carried)},), "
                     f"({', '.join([trips, *passed])},)")
        seeds = self.targets[1:1 + len(self.carried)] + self.extras
        header = ", ".join([trips, *passed, *seeds, *self.consts])
        back = [DECORATOR, f"def {adjoint}({header}):",
                f'    """The adjoint of the loop of {self.site.body}: every iteration\'s, '
                'from the last to the first, carrying the cotangents and adding into the '
                'totals."""',
                f"    for {self.counter} in range({trips} - 1, -1, -1):"]
        back += _indent(list(reuse.rows.values()), 2)     # in order: xs[index] after index
        back += [f"        {v} = {store}[{self.counter}]" for v, store in stores.items()]
        back += _indent(self.backward, 2)
        back.append(f"        {_tuple(seeds)} = "
                    f"{_tuple([unparse(e) for e, _ in self.returned])}")
        back.append(f"    return {_tuple(seeds)}")
        self._rewrite_main(forward, adjoint, cotangent, seeds)
        return ["\n".join(lines), "\n".join(back)]

    def _rewrite_main(self, forward: str, adjoint: str, cotangent: str,
                      seeds: list[str]) -> None:
        site, main = self.site, self.main
        call = site.forward.body[0].value
        consts = [unparse(a) for a in call.args[2:]]
        if len(consts) != len(self.consts) or any(
                _stores(main).count(c) > 1 for c in consts):
            raise Refused("the body's arguments")
        text = (f"{site.state}, {site.backs} = {forward}({unparse(site.forward.iter.args[0])}"
                f", *{site.state}{''.join(', ' + c for c in consts)})")
        starts = [f"{self.seed}[{i}]" for i in range(len(self.carried))] + self.extras
        args = [f"{cotangent}({s}, {f[0]!r})" for s, f in zip(starts, self.facts)]
        back = (f"{_tuple(seeds)} = {adjoint}(*{site.backs}, {', '.join(args + consts)})")
        for seed, fact in zip(seeds, self.facts):    # numba's float: NumPy's, as the code had
            if not fact[0] and seed != "_":
                back += f"\n{seed} = np.float64({seed})"
        if self.remade:        # numba returns a Python float where NumPy's code has its own
            items = [f"np.{self.remade[k]}({site.state}[{k}])" if k in self.remade
                     else f"{site.state}[{k}]" for k in range(len(self.carried))]
            text += f"\n{site.state} = ({', '.join(items)},)"
        body = main.body
        i = body.index(site.forward)
        body[i:i + 1] = ast.parse(text).body
        if i and isinstance(body[i - 1], ast.Assign) and _name(body[i - 1].targets[0]) == \
                site.backs and isinstance(body[i - 1].value, ast.List):
            del body[i - 1]
        j = body.index(site.backward)
        body[j:j + 1] = ast.parse(back).body + [copy.deepcopy(self.rebind)]


def _tuple(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items) if items else "()"


def _indent(stmts: list[ast.stmt], depth: int) -> list[str]:
    pad = "    " * depth
    out = []
    for st in stmts:
        text = unparse(ast.fix_missing_locations(st)) if not is_comment(st) else \
            unparse(st)
        out += [pad + line for line in text.split("\n")]
    return out
