"""Random NumPy programs that probe soundness, and the property every one of them must hold.

``generate(seed)`` writes one function ``f`` (plus helper functions) as source text.  It draws
statements from a grammar that covers what makes NumPy gradients hard to get right: aliasing
(``b = a``), views (slices, ``.T``, ``reshape``, ``np.asarray``), in-place operators on arrays
and floats, subscript writes (basic, fancy with duplicate indices, masks), ``out=`` arguments,
``np.add.at``/``np.copyto``, builtins (``float``, ``sum``, ``max``, ``abs``, ``len``, ``list``,
``tuple``), helpers returning tuples or writing into their argument, floats versus 0-d arrays
as arguments, pytree arguments (a dict holding an array and a list; writes into its leaves),
control flow, constructors carrying values (``np.full``, ``np.linspace``,
``np.array([s, 2.0])``), local dicts (literals, comprehensions, ``'w' + str(k)`` keys), nested
defs and lambdas, methods of a global object, method chains, ``np.clip`` with array or keyword
bounds, ``math`` of a ``float()``, and NumPy's in-place ``sort`` and ``view``.  Each
statement is run on the sample arguments as it is drawn and kept only when NumPy runs it and
the values stay finite and small, so every program runs in NumPy.  ``generate(seed,
jumps=True)`` draws other programs, which also hold branches whose assignments are all dead
(or ``pass``) and loops left early (``return`` inside ``for``/``while``, ``break`` inside
either, on a test of the data); the code past a ``return`` must run too.

``check(program, folder)`` writes the program into a real module file, imports it and returns
the outcome class: the compiled gradient (``strict=True``) must equal central finite
differences of the plain NumPy function or be refused with a ``CompileError``; the eager
fallback must equal them too (or raise a ``CompileError``/what NumPy raises); and neither may
change the caller's arguments.
"""

from __future__ import annotations

import copy
import importlib.util
import itertools
import math
import re
import sys
import traceback
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

HELPERS = '''\
def pair(a, b):
    return a * b, a + b


def stats(a):
    m = np.mean(a)
    return a - m, m


def scale(a):
    a *= 2.0
    return a


def head(a):
    return a[0], np.sum(a)


def rows(a):
    out = []
    for r in a:
        out.append(r * 2.0)
    return out


def norm2(a, eps=1e-3):
    return np.sqrt(np.sum(a * a) + eps)


def first_row(a):
    return a[0]


def add_into(a, b, scale=1.0):
    return a + scale * b


def twice(g, a):
    return g(g(a))


class Scaler:
    def __init__(self):
        self.act = np.tanh

    def apply(self, a):
        return self.act(a) * 1.5


SCALER = Scaler()
'''

UNARY = ["np.sin({})", "np.cos({})", "np.tanh({})", "np.exp({} * 0.3)", "np.sqrt({} ** 2 + 1.0)",
         "np.log1p({} ** 2)", "-{}", "{} ** 2", "np.abs({})", "np.arctan({})", "({} * 1.5)",
         "np.square({})", "abs({})", "pow({}, 2)", "np.maximum({}, -0.37)"]
BINARY = ["{} + {}", "{} - {}", "{} * {}", "{} / (1.5 + {} ** 2)", "np.maximum({}, {})",
          "np.minimum({}, {})", "np.where({0} > {1}, {0}, {1} * 0.5)", "np.hypot({}, {})"]
REDUCE = ["np.sum({})", "np.mean({}, axis=0)", "np.max({}, axis=-1)", "np.sum({}, axis=0)",
          "np.prod({} * 0.5 + 1.0)", "np.std({})", "np.dot({0}.ravel(), {0}.ravel())"]


@dataclass
class Program:
    seed: int
    names: list          # the parameters of ``f``
    args: list           # the arguments (``check`` never lets them change)
    statements: list     # (kind, lines) of the body, in order
    terms: list          # what ``f`` returns: the sum of these
    wrt: tuple
    jumps: bool = False  # drawn with dead branches and loops left early (``return`` inside)

    @property
    def features(self) -> tuple:
        return tuple(kind for kind, _ in self.statements)

    @property
    def source(self) -> str:
        """The module text: numpy, the helpers and ``def f``."""
        body = "\n".join("    " + line for _, lines in self.statements for line in lines)
        return (f"import math\n\nimport numpy as np\n\n\n{HELPERS}\n\n"
                f"def f({', '.join(self.names)}):\n{body or '    pass'}\n"
                f"    return {' + '.join(self.terms) or '0.0'}\n")

    def runs(self) -> bool:
        """Whether NumPy runs it (finite, small values), return expression included."""
        lines = [line for _, block in self.statements for line in block]
        return _run([*lines, f"__out = {' + '.join(self.terms) or '0.0'}"], self.names,
                    self.args, self.jumps) is not None


class _Draw:
    """The drawing state: the statements so far and what their variables hold."""

    def __init__(self, seed: int, jumps: bool = False) -> None:
        self.rng = np.random.default_rng(seed)
        self.jumps = jumps
        self.names = itertools.count()
        self.lines: list[str] = []
        self.features: list[str] = []
        self.blocks: list[list[str]] = []

    def choice(self, seq):
        return seq[int(self.rng.integers(len(seq)))]

    def chance(self, p: float) -> bool:
        return bool(self.rng.random() < p)

    def const(self) -> str:
        return repr(round(float(self.rng.uniform(0.2, 1.8)), 2))

    def fresh(self, prefix: str = "v") -> str:
        return f"{prefix}{next(self.names)}"


def _arguments(rng: np.random.Generator) -> tuple[list[str], list]:
    """The signature and sample arguments: ``x`` always; ``y``, a scalar ``s`` (a Python
    float, a 0-d array or ``np.float64``) and a pytree ``p`` sometimes."""
    names, args = ["x"], [rng.uniform(-1.5, 1.5, (3, 4))]
    if rng.random() < 0.6:
        names.append("y")
        args.append(rng.uniform(-1.5, 1.5, (4,)))
    if rng.random() < 0.6:
        names.append("s")
        v = float(rng.uniform(0.3, 1.5))
        args.append([v, np.array(v), np.float64(v)][int(rng.integers(3))]
                    if rng.random() < 0.4 else v)
    if rng.random() < 0.4:
        names.append("p")
        args.append({"a": rng.uniform(-1.5, 1.5, (2, 3)),
                     "b": [rng.uniform(-1.5, 1.5, (3,)), float(rng.uniform(0.3, 1.5))]})
    return names, args


class _Numpy:
    """NumPy for drawing statements, whose ``std`` refuses (near) constant data: the standard
    deviation has a kink at 0, where rounding (a std of 1e-16) makes finite differences and
    the rule disagree without either being wrong."""

    def __getattr__(self, name: str):
        return getattr(np, name)

    @staticmethod
    def std(a, *args, **kwargs):
        out = np.std(a, *args, **kwargs)
        if np.any(np.abs(out) < 1e-6):
            raise FloatingPointError("std at its kink")
        return out


class _Returned(Exception):
    """A ``return`` of the program, run at module level by :func:`_run`."""


def _returning(lines: list[str], taken: bool) -> list[str]:
    """``return e`` as ``__out = e`` for module level, then (``taken``) a :class:`_Returned`
    raised, else nothing: the run goes on past it, as it does where the test is not met."""
    out = []
    for line in lines:
        found = re.match(r"^(\s*)return (.*)$", line)
        if found:
            indent, value = found.groups()
            out += [f"{indent}__out = {value}"] + ([f"{indent}raise _Returned()"] if taken
                                                    else [])
        else:
            out.append(line)
    return out


def _run(lines: list[str], names: list[str], args: list, jumps: bool = False) -> dict | None:
    """Run the statements at module level on copies of the arguments; None when NumPy raises,
    or a value leaves [-1e3, 1e3], is not finite or is exactly zero.  ``jumps``: a
    ``return`` ends the run there, and the code past it must run too (what the variables
    hold then is returned), as a nearby point may not return (without ``jumps``, a
    ``return`` is a syntax error: never drawn)."""
    if not jumps:
        return _exec(lines, names, args)
    if _exec(_returning(lines, True), names, args) is None:
        return None
    return _exec(_returning(lines, False), names, args)


def _exec(lines: list[str], names: list[str], args: list) -> dict | None:
    env: dict = {"np": _Numpy(), "math": math, "_Returned": _Returned}
    exec(HELPERS, env)
    env.update(zip(names, copy.deepcopy(args)))
    try:
        with warnings.catch_warnings(), np.errstate(all="raise"):
            warnings.simplefilter("error")
            try:
                exec("\n".join(lines), env)
            except _Returned:
                pass
    except Exception:
        return None
    for value in env.values():
        for leaf in _leaves(value):
            if isinstance(leaf, (float, np.ndarray, np.floating)) and \
                    np.asarray(leaf).dtype.kind == "f":
                a = np.asarray(leaf)
                if not np.all(np.isfinite(a)) or np.any(np.abs(a) > 1e3) or np.any(a == 0.0):
                    return None       # (exact zeros sit on the kinks of abs, hypot, std)
    return env


def _leaves(value) -> list:
    if isinstance(value, dict):
        return [leaf for k in value for leaf in _leaves(value[k])]
    if isinstance(value, (list, tuple)):
        return [leaf for v in value for leaf in _leaves(v)]
    return [value]


def _floats(env: dict, names: set) -> dict[str, object]:
    """The float variables (arrays, scalars) among ``names``."""
    out = {}
    for n in sorted(names):             # a set: sorted, so a seed means one program
        v = env.get(n)
        if isinstance(v, (np.ndarray, np.floating)) and v.dtype.kind == "f":
            out[n] = v
        elif isinstance(v, float):
            out[n] = v
    return out


def _statement(d: _Draw, env: dict, pool: set) -> tuple[str, list[str], list[str]]:
    """One statement: (kind, lines, new names)."""
    floats = _floats(env, pool)
    arrays = [n for n, v in floats.items() if np.ndim(v) >= 1]
    vecs = [n for n in arrays if np.ndim(floats[n]) == 1]
    scalars = [n for n, v in floats.items() if np.ndim(v) == 0]
    anyf = list(floats)
    pick = d.choice
    c = d.const

    def expr(pool_names=None) -> str:
        names = pool_names or anyf
        r = d.rng.random()
        if r < 0.4:
            return pick(UNARY).format(pick(names))
        if r < 0.85:
            a, b = pick(names), pick(names)
            if a == b and len(names) > 1:        # max(a, a) is a tie, not a test
                b = pick([n for n in names if n != a])
            return pick(BINARY).format(a, b)
        return pick(REDUCE).format(pick(arrays or names))

    kind = pick(["assign", "assign", "alias", "view", "copy", "inplace", "inplace", "setitem",
                 "setitem", "out", "builtin", "builtin", "helper", "if", "for", "constructor",
                 "constructor", "pytree", "pytree", "method", "shape", "viewwrite", "loop2",
                 "math", "swap", "outview", "helper2", "listacc", "numfn", "control", "dict",
                 "nested", "object"] + (["deadif", "deadif", "early", "early", "early"]
                                        if d.jumps else []))
    if kind in ("deadif", "early"):
        return _jump(d, kind, floats)
    new = d.fresh()
    if kind == "assign":
        return kind, [f"{new} = {expr()}"], [new]
    if kind == "alias":
        return kind, [f"{new} = {pick(anyf)}"], [new]
    if kind == "view" and arrays:
        a = pick(arrays)
        v = pick(["{}[0:2]", "{}[1]", "{}.T", "{}.reshape(-1)", "{}[::2]", "np.asarray({})",
                  "{}.ravel()", "{}[...]", "{}[:, 1]", "{}[1:, :2]", "np.reshape({}, (2, -1))",
                  "{}[-1]"]).format(a)
        return kind, [f"{new} = {v}"], [new]
    if kind == "copy" and anyf:
        v = pick(["{}.copy()", "np.array({})", "{} * 1.0", "np.copy({})", "{} + 0.0"])
        return kind, [f"{new} = {v.format(pick(anyf))}"], [new]
    if kind == "inplace":
        t = pick(anyf)
        op = pick(["+=", "-=", "*=", "+=", "*="])
        rhs = expr() if op != "*=" else f"np.tanh({pick(anyf)}) * 0.5"
        return kind, [f"{t} {op} {rhs}"], []
    if kind == "setitem" and arrays:
        t = pick(arrays)
        form = pick(["{t}[0] = {e}", "{t}[1:3] = {e}", "{t}[[0, 0]] = {e}", "{t}[[1, 1]] += {c}",
                     "{t}[[0, 1, 0]] += {e}", "{t}[{t} > 0.5] = {c}", "{t}[{t} < 0.0] *= {c}",
                     "{t}[0] += {e}", "{t}[-1] *= {c}", "{t}[...] = {e}", "{t}[:] = {e}",
                     "{t}[0, 1] = {s}", "{t}[:, 0] += {e}", "{t}[np.array([1, 1])] = {e}"])
        e = pick([pick(scalars or [c()]), expr(), c(), f"np.sin({pick(anyf)})"])
        s = pick(scalars or [c()])
        return kind, [form.format(t=t, e=e, c=c(), s=s)], []
    if kind == "out" and arrays:
        t, a = pick(arrays), pick(anyf)
        form = pick(["np.multiply({a}, {c}, out={t})", "np.add({t}, {a}, out={t})",
                     "np.clip({t}, -0.5, 0.5, out={t})", "np.copyto({t}, {a})",
                     "np.add.at({t}, [0, 0], {c})", "np.sin({t}, out={t})",
                     "np.negative({a}, out={t})", "np.subtract({t}, {a}, {t})",
                     "np.tanh({a}, out={t})", "np.maximum({t}, {a}, out={t})"])
        return kind, [form.format(t=t, a=a, c=c())], []
    if kind == "builtin":
        a = pick(arrays or anyf)
        form = pick(["{n} = float(np.sum({a}))", "{n} = sum({a})", "{n} = max({v})",
                     "{n} = min({v})", "{n} = abs({a})", "{n} = {a} * len({a})",
                     "{n} = list({a})[0]", "{n} = sum(list({a}))", "{n} = tuple({a})[-1]",
                     "{n} = float({s}) * {a}", "{n} = max({s}, {c})", "{n} = sum([{a}, {b}])",
                     "{n} = {a} * float(len({a}) > 1)", "{n} = pow({a}, 2)",
                     "{n} = round(float(np.sum({a})), 3) + {a}"])
        v = pick(vecs or arrays or anyf)
        s = pick(scalars or anyf)
        return kind, [form.format(n=new, a=a, v=v, s=s, c=c(), b=pick(anyf))], [new]
    if kind == "helper":
        a, b = pick(anyf), pick(anyf)
        m = d.fresh()
        form = pick([f"{new}, {m} = pair({a}, {b})", f"{new}, {m} = stats({a})",
                     f"{new} = scale({a})", f"{new}, {m} = head({pick(arrays or anyf)})",
                     f"{new} = pair({a}, {b})[1]", f"{new} = scale({a} * 1.0)"])
        return kind, [form], [new, m]
    if kind == "if":
        a = pick(anyf)
        t = pick(anyf)
        body = pick([f"{t} = {expr()}", f"{t} += {expr()}", f"{t} = {t} * {c()}"])
        other = pick([f"{t} = {expr()}", "pass", f"{t} -= {c()}"])
        return kind, [f"if np.sum({a}) > {round(float(d.rng.uniform(-2, 2)), 2)}:",
                      f"    {body}", "else:", f"    {other}"], []
    if kind == "for":
        t = pick(anyf)
        n = int(d.rng.integers(0, 4))
        if arrays and d.chance(0.5):
            a = pick(arrays)
            return kind, [f"for i in range({n}):",
                          f"    {a}[i % {len(floats[a])}] += np.tanh({pick(anyf)}) * 0.3"], []
        return kind, [f"for i in range({n}):", f"    {t} = {t} * 0.5 + {expr()} * 0.2"], []
    if kind == "constructor":
        s = pick(scalars or [c()])
        a = pick(anyf)
        form = pick(["np.full((3, 4), {s})", "np.full_like({a}, {s})", "np.linspace({s}, 2.0, 4)",
                     "np.array([{s}, 2.0])", "np.array([{s}, {s} * 2.0, 1.0])",
                     "np.float64({s})", "np.zeros_like({a}) + {s}", "np.ones(4) * {s}",
                     "np.array({a})", "np.asarray({a})", "np.stack([{a}, {a} * 2.0])",
                     "np.concatenate([np.ravel({a}), np.ravel({s})])",
                     "np.array([[{s}, 1.0], [0.5, {s}]])", "np.zeros(3) + np.array([{s}])",
                     "np.empty_like({a})"])
        line = f"{new} = {form.format(s=s, a=a)}"
        if "empty_like" in line:
            line += f"\n{new}[...] = {a}"
        return kind, line.split("\n"), [new]
    if kind == "pytree" and "p" in pool:
        form = pick(['{n} = p["a"]', '{n} = p["b"][0]', 'p["a"][0] = {e}', 'p["a"] *= {c}',
                     'p["b"][0][1] += {c}', '{n} = p["a"]\n{n}[:, 1] *= {c}',
                     'p["b"][1] = p["b"][1] * {c}', '{n} = p["b"][1] + {e}',
                     'p["b"].append({e})\n{n} = p["b"][-1]', '{n} = sum(p["b"][0])',
                     '{n} = dict(a=p["a"])["a"]', '{n} = list((p["a"], p["a"]))[1]'])
        lines = form.format(n=new, e=expr(), c=c()).split("\n")
        return kind, lines, [new]
    if kind == "method" and arrays:
        form = pick(["{a}.sum(axis=0)", "{a}.mean()", "{a}.clip(-0.5, 0.5)", "{a}.max(axis=0)",
                     "{a}.T.dot({a})", "{a}.cumsum(axis=0)", "{a}.reshape(-1, 2)",
                     "{a}.std(axis=-1, keepdims=True)", "{a}.var()", "{a}.flatten()",
                     "{a}.astype(np.float64)", "{a}.squeeze()", "{a}.prod(axis=0)",
                     "{a}.min()", "{a}.dot({b})", "{a}.copy().ravel()"])
        return kind, [f"{new} = {form.format(a=pick(arrays), b=pick(anyf))}"], [new]
    if kind == "shape" and arrays:
        form = pick(["np.transpose({a})", "{a}[:, ::-1]", "{a}[::-1]", "np.swapaxes({a}, 0, -1)",
                     "{a}[None]", "{a}[..., 0]", "np.expand_dims({a}, 0)", "np.squeeze({a})",
                     "np.concatenate([{a}, {b}], axis=0)", "np.hstack([{a}, {b}])",
                     "np.vstack([{a}, {b}])", "np.tile({a}, 2)", "np.roll({a}, 1)",
                     "np.flip({a})", "np.moveaxis({a}, 0, -1)", "{a}[np.array([0, 2])]",
                     "{a}[{a} > 0.2]", "np.where({a} > 0.1, {a}, 0.5)", "np.atleast_2d({a})",
                     "np.diag({a})", "np.outer({a}, {b})", "{a} @ {a}.T", "np.dot({a}, {b})",
                     "np.stack(rows({a}))", "np.linalg.norm({a})", "norm2({a})",
                     "np.sum({a}, axis=-1, keepdims=True) * {a}", "np.cumsum({a})",
                     "np.ravel({s}) * {a}", "np.atleast_1d({s}) + {a}", "np.sort({a})",
                     "np.abs({a}).argmax() * {a}"])
        line = form.format(a=pick(arrays), b=pick(arrays), s=pick(scalars or anyf))
        return kind, [f"{new} = {line}"], [new]
    if kind == "viewwrite" and arrays:
        a = pick(arrays)
        form = pick(["{n} = {a}[::-1]\n{n}[0] += {e}", "{n} = {a}.T\n{n}[0] *= {c}",
                     "{n} = np.transpose({a})\n{n} += {c}", "{n} = {a}[1:]\n{n}[...] = np.sin({n})",
                     "{n} = {a}[None]\n{n}[0, 0] = {c}", "{n} = {a}.reshape(-1)\n{n}[0] = {e}",
                     "{n} = {a}[:, 1:3]\n{n} -= {e}", "{n} = {a}[0]\n{n}[:] = {e}",
                     "{n} = {a}\n{n}[:] = {n} * {c}", "{n} = {a}[...]\n{a} += {e}",
                     "{n} = {a}[1]\n{a}[1] = {c}", "{n} = np.asarray({a})\n{n}[0] -= {c}"])
        lines = form.format(n=new, a=a, e=pick([expr(), c(), pick(scalars or [c()])]), c=c())
        return kind, lines.split("\n"), [new]
    if kind == "loop2":
        t = pick(anyf)
        a = pick(arrays or anyf)
        form = pick(["for r in {a}:\n    {t} = {t} + np.sum(r) * 0.1",
                     "{n} = sum([np.sin(r) for r in {a}])",
                     "{n} = [{a} * k for k in range(3)][-1]",
                     "i = 0\nwhile i < 2:\n    {t} = {t} * 0.9 + {c}\n    i += 1",
                     "{n} = 0.0\nfor k, r in enumerate({a}):\n    {n} = {n} + r * k",
                     "{n} = [{t}, {a}]\n{n}[0] = {n}[0] * {c}\n{n} = {n}[0] + {n}[1]",
                     "for u, w in zip({a}, {a}):\n    {t} = {t} + u * w * 0.1",
                     "{n} = {{'k': {a}}}\n{n}['k'] = {n}['k'] * {c}\n{n} = {n}['k']"])
        lines = form.format(n=new, a=a, t=t, c=c()).split("\n")
        return kind, lines, [new]
    if kind == "math":
        s = pick(scalars or anyf)
        a = pick(anyf)
        form = pick(["math.sin(float(np.sum({a})))", "math.exp(float({s}) * 0.1)",
                     "math.sqrt({s} ** 2 + 1.0)", "np.float64({s}) * {a}",
                     "math.tanh({s}) * {a}", "math.log(1.0 + {s} ** 2) + {a}",
                     "float({s}) ** 2 * {a}", "max(float({s}), 0.5) * {a}",
                     "math.fabs(float(np.mean({a}))) + {a}", "math.pi * {s}",
                     "{s} if {s} > 0.7 else -{s}", "float(np.max({a})) - {a}"])
        return kind, [f"{new} = {form.format(a=a, s=s)}"], [new]
    if kind == "swap" and len(anyf) > 1:
        a, b = pick(anyf), pick(anyf)
        return kind, [f"{a}, {b} = {b}, {a}"], []
    if kind == "outview" and arrays:
        t, a = pick(arrays), pick(anyf)
        form = pick(["np.multiply({a}, {c}, out={t}[0])", "np.add({t}[0], 1.0, out={t}[0])",
                     "np.negative({t}[:, 0], out={t}[:, 1])", "np.sin({t}[1:], out={t}[:-1])",
                     "np.exp({t} * 0.1, out={t})", "np.add({a}, {t}, out={t})",
                     "np.add.at({t}, np.array([0, 1, 0]), {a})", "np.copyto({t}[0], {a})",
                     "np.divide({t}, 2.0, out={t})", "np.square({t}[::2], out={t}[::2])"])
        return kind, [form.format(t=t, a=a, c=c())], []
    if kind == "helper2":
        a, b = pick(arrays or anyf), pick(anyf)
        form = pick(["{n} = first_row({a})", "{n} = first_row({a})\n{n} *= {c}",
                     "{n} = add_into({a}, {b}, scale={c})", "{n} = add_into({a}, {b})",
                     "{n} = twice(np.sin, {a})", "{n} = twice(lambda t: t * {c}, {a})",
                     "{n} = (lambda t: t ** 2)({a})", "{n} = head({a})[0]\n{n} += {c}",
                     "{n} = first_row({a})\n{n}[0] = {c}", "{n} = add_into(b={a}, a={b})",
                     "{n} = np.stack(rows({a}))[0]\n{n} += {c}"])
        return kind, form.format(n=new, a=a, b=b, c=c()).split("\n"), [new]
    if kind == "listacc":
        a, t = pick(arrays or anyf), pick(anyf)
        form = pick(["{n} = []\nfor k in range(3):\n    {n}.append({t} * (k + 1.0))\n"
                     "{n} = np.stack({n})",
                     "{n} = []\nfor r in {a}:\n    {n}.append(np.sum(r ** 2))\n{n} = sum({n})",
                     "{n} = [np.sin({t}), np.cos({t})]\n{n} = {n}[0] * {n}[1]",
                     "{n} = [{t}] * 2\n{n} = np.concatenate([np.ravel(v) for v in {n}])",
                     "{n} = ({t}, {a})\n{n} = {n}[1] - {n}[0]",
                     "{n} = []\n{n} += [{t}]\n{n} = {n}[-1] * {c}",
                     "{n} = {{'u': {t}}}\n{n}['w'] = {n}['u'] * {c}\n{n} = {n}['w']"])
        return kind, form.format(n=new, a=a, t=t, c=c()).split("\n"), [new]
    if kind == "numfn":
        a, b = pick(arrays or anyf), pick(anyf)
        form = pick(["np.clip({a}, -0.4, {b})", "np.linalg.norm({a}, axis=-1)",
                     "np.einsum('...i,...i->...', {a}, {a})", "np.matmul({a}, {a}.T)",
                     "np.tensordot({a}, {a}, axes=2)", "np.trace(np.atleast_2d({a}))",
                     "np.cumprod({a} * 0.5 + 1.0)", "np.diff({a})", "np.pad({a}, 1)",
                     "np.take({a}, [0, 1, 1])", "np.logaddexp({a}, {b})",
                     "np.mean({a}, axis=0, keepdims=True)", "np.var({a}, ddof=1)",
                     "np.average({a}, axis=0)", "np.power(np.abs({a}) + 0.5, 1.5)",
                     "np.expm1({a} * 0.2)", "np.log(np.abs({a}) + 1.0)", "np.sinh({a})",
                     "np.arcsinh({a})", "np.reciprocal({a} ** 2 + 1.0)", "np.max({a})",
                     "np.amin({a}, axis=0)", "np.fmax({a}, {b})", "np.cbrt({a})",
                     "np.sum({a} ** 3, axis=(0,))", "np.kron({a}, {b})", "np.sign({a}) * {a}",
                     "np.linalg.norm({a} - {b})", "{a} ** {b}"])
        return kind, [f"{new} = {form.format(a=a, b=b)}"], [new]
    if kind == "control":
        a, t = pick(anyf), pick(anyf)
        form = pick(["if np.sum({a}) > 50.0:\n    return np.sum({a})",
                     "for k in range(3):\n    if k == 2:\n        break\n    {t} = {t} * {c}",
                     "for k in range(3):\n    if k == 1:\n        continue\n    {t} = {t} + {c}",
                     "k = 0\nwhile np.sum(np.abs({t})) < 20.0 and k < 3:\n    {t} = {t} * 1.5\n"
                     "    k += 1",
                     "{t} = {t} if np.max({a}) > 0.3 else {t} * {c}",
                     "if np.sum({a}) > 0.0:\n    {t} = {t} * {c}\nelif np.sum({a}) > -1.0:\n"
                     "    {t} = -{t}"])
        return kind, form.format(a=a, t=t, c=c()).split("\n"), []
    if kind == "dict":                      # local dicts with keys known when compiling
        a, t = pick(anyf), pick(anyf)
        form = pick(["{n} = {{'u': {t}, 'v': {a}}}\n{n}['u'] = {n}['u'] * {c}\n"
                     "{n} = {n}['u'] + {n}.get('w', {a})",
                     "{n} = {{k: {t} * (k + 1.0) for k in range(2)}}\n{n} = {n}[0] - {n}[1]",
                     "{n} = dict(p={t}, q={a})\n{n} = sum({n}.values())",
                     "{n} = {{}}\nfor k in range(2):\n    {n}['w' + str(k)] = {t} * (k + {c})\n"
                     "{n} = {n}['w0'] * {n}['w1']"])
        return kind, form.format(n=new, a=a, t=t, c=c()).split("\n"), [new]
    if kind == "nested":                    # nested defs and closures, read-only
        a, t = pick(anyf), pick(anyf)
        form = pick(["def {n}_f(u):\n    return u * {c} + {a}\n{n} = {n}_f({t})",
                     "def {n}_f(u, k=2.0):\n    return np.sin(u) * k\n{n} = {n}_f({t}, k={c})",
                     "{n}_f = lambda u: u ** 2 + {a}\n{n} = {n}_f({t})"])
        return kind, form.format(n=new, a=a, t=t, c=c()).split("\n"), [new]
    if kind == "object":                    # methods, method chains, clip bounds, math
        a, t = pick(arrays or anyf), pick(anyf)
        form = pick(["{n} = SCALER.apply({t})", "{n} = {a}.copy().sum() * {t}",
                     "{n} = np.clip({t}, {a} - 0.5, {a} + 0.5)",
                     "{n} = np.clip({t}, a_min=-0.3, a_max={a})",
                     "{n} = math.sqrt(abs(float(np.sum({t}))) + 1.0) * {a}",
                     "{n} = {a} * 1.0\n{n}.sort()", "{n} = {t} * 1.0\n{n}.view()[...] *= {c}"])
        return kind, form.format(n=new, a=a, t=t, c=c()).split("\n"), [new]
    return "assign", [f"{new} = {expr()}"], [new]


def _threshold(d: _Draw, value) -> float:
    """A bound for ``np.sum`` of ``value`` that it may or may not pass in a few updates."""
    total = float(np.sum(value))
    return round(total + float(d.rng.uniform(-0.5, 1.5)) * (abs(total) + 1.0), 2)


def _jump(d: _Draw, kind: str, floats: dict) -> tuple[str, list[str], list[str]]:
    """A branch whose assignments are all dead (or a ``pass``), or a loop left early: a
    ``return`` inside ``for`` or ``while``, a ``break`` inside either (data-dependent)."""
    t = d.choice(list(floats))
    c, dead, other = d.const(), d.fresh("dead"), d.fresh("dead")
    bound = _threshold(d, floats[t])
    update = d.choice([f"{t} = {t} * 0.8 + np.tanh({t}) * {c}", f"{t} = np.sin({t}) * 1.3 + {c}",
                       f"{t} = {t} * 1.2 + {c}"])
    if kind == "deadif":
        form = d.choice([
            "if np.sum({t}) > {b}:\n    {n} = np.cos({t}) * {c}\nelse:\n    pass",
            "if np.sum({t}) > {b}:\n    pass\nelse:\n    {n} = {t} * {c}\n    {m} = np.sin({n})",
            "if np.sum({t}) > {b}:\n    {n} = np.exp({t} * 0.1)\nelse:\n    {m} = {t} + {c}",
            "if np.sum({t}) > {b}:\n    pass",
            "if np.sum({t}) > {b}:\n    pass\nelse:\n    pass",
            "for k in range(2):\n    {u}\n    if np.sum({t}) > {b}:\n        {n} = np.sin({t})\n"
            "    else:\n        pass",
            "if np.sum({t}) > {b}:\n    {n} = {t} * {c}\n    {u}\nelse:\n    {m} = np.cos({t})"])
    else:
        j = d.fresh("j")
        form = d.choice([
            "for k in range(3):\n    {u}\n    if np.sum({t}) > {b}:\n"
            "        return np.sum(np.sin({t}) * {c})",
            "{j} = 0\nwhile {j} < 3:\n    {u}\n    if np.sum({t}) > {b}:\n"
            "        return np.sum({t} ** 2) * {c}\n    {j} += 1",
            "{j} = 0\nwhile {j} < 4:\n    {u}\n    if np.sum({t}) > {b}:\n        break\n"
            "    {j} = {j} + 1",
            "for k in range(4):\n    if np.sum({t}) > {b}:\n        break\n    {u}",
            "for k in range(3):\n    if np.sum({t}) > {b}:\n        return np.sum({t}) * {c}\n"
            "    {u}\n    if np.sum({t}) < {lo}:\n        break",
            "if np.sum({t}) > {b}:\n    return np.sum(np.tanh({t}))"])
    text = form.format(t=t, b=bound, c=c, n=dead, m=other, u=update, lo=-abs(bound) - 5.0,
                       j=j if kind == "early" else "")
    return kind, text.split("\n"), []


def generate(seed: int, length: int | None = None, jumps: bool = False) -> Program:
    """A program of ``length`` statements (4 to 10) drawn from ``seed``; ``jumps``: the
    grammar also draws dead branches and loops left early (other programs)."""
    d = _Draw(seed, jumps)
    names, args = _arguments(d.rng)
    pool = set(names) - {"p"} | ({"p"} if "p" in names else set())
    env = _run([], names, args)
    want = length or int(d.rng.integers(4, 11))
    tries = 0
    while len(d.features) < want and tries < 200:
        tries += 1
        kind, lines, new = _statement(d, env, pool)
        trial = _run(d.lines + lines, names, args, jumps)
        if trial is None:
            continue
        d.lines += lines
        d.features.append(kind)
        d.blocks.append(lines)
        pool |= {n for n in new if n in trial}
        env = trial
    floats = _floats(env, pool)
    last = [n for n in floats if n not in names][-3:]
    used = list(dict.fromkeys(last + [n for n in names if n in floats]))
    terms = [f"np.sum(np.sin({n}) * {d.const()})" for n in used]
    if "p" in names:
        terms += ['np.sum(p["a"] ** 2)', 'np.sum(p["b"][0] * p["b"][1])']
    return Program(seed, names, args, list(zip(d.features, d.blocks)), terms,
                   tuple(range(len(names))), jumps)


def shrink(program: Program, fails) -> Program:
    """A smaller program that still ``fails`` (a predicate): statements and returned terms
    are dropped one at a time while the failure stays (greedy, to a fixed point)."""
    current = program
    changed = True
    while changed:
        changed = False
        for field_name in ("statements", "terms"):
            items = getattr(current, field_name)
            for k in range(len(items) - 1, -1, -1):
                items = getattr(current, field_name)
                if k >= len(items):
                    continue
                trial = copy.copy(current)
                setattr(trial, field_name, items[:k] + items[k + 1:])
                if trial.runs() and fails(trial):
                    current, changed = trial, True
    return current


# --- the property ---------------------------------------------------------------------------

_modules = itertools.count()


def load(program: Program, folder: Path):
    """Write the program into a module file in ``folder`` and import it; its ``f``."""
    name = f"srcgrad_random_{program.seed}_{next(_modules)}"
    path = Path(folder) / f"{name}.py"
    path.write_text(program.source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module.f


def _paths(tree, path=()):
    if isinstance(tree, dict):
        return [p for k in sorted(tree) for p in _paths(tree[k], (*path, k))]
    if isinstance(tree, (list, tuple)):
        return [p for i, v in enumerate(tree) for p in _paths(v, (*path, i))]
    return [path]


def _get(tree, path):
    for k in path:
        tree = tree[k]
    return tree


def _set(tree, path, value):
    if not path:
        return value
    parent = _get(tree, path[:-1])
    if isinstance(parent, tuple):
        raise TypeError("tuple leaf")
    parent[path[-1]] = value
    return tree


def _same(a, b) -> bool:
    """Equal values and structure (the caller's argument against its saved copy)."""
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(map(_same, a, b))
    return type(a) is type(b) and np.array_equal(a, b)


def finite_differences(fn, args: list, eps: float) -> list:
    """Central differences of ``fn`` for every float leaf of every argument (on copies)."""
    out = []
    for i, arg in enumerate(args):
        for path in _paths(arg):
            leaf = _get(arg, path)
            g = np.zeros(np.shape(leaf))
            flat = g.reshape(-1)
            for j in range(flat.size):
                vals = []
                for sign in (1.0, -1.0):
                    values = copy.deepcopy(args)
                    x = np.array(leaf, dtype=np.float64)
                    x.reshape(-1)[j] += sign * eps
                    new = type(leaf)(x) if isinstance(leaf, (float, np.floating)) else x
                    values[i] = _set(values[i], path, new)
                    vals.append(float(fn(*values)))
                flat[j] = (vals[0] - vals[1]) / (2 * eps)
            out.append(g)
    return out


def _flat_gradient(grads, args) -> list:
    return [np.asarray(_get(g, path), dtype=np.float64)
            for g, a in zip(grads, args) for path in _paths(a)]


def reason_class(error: BaseException) -> str:
    """A refusal's message with names and numbers taken out, to count refusals by kind."""
    text = str(getattr(error, "message", None) or error).split("\n")[0]
    text = re.sub(r"\b(v|lo|hi|d_v|d_x|d_y|d_s)\d*(_\w+)?\b", "NAME", text)
    text = re.sub(r"'(x|y|s|p|NAME)'", "NAME", text)
    text = re.sub(r"\d+", "N", text)
    return text[:110]


def _where(error: BaseException) -> str:
    frames = traceback.extract_tb(error.__traceback__)
    inside = [f for f in frames if "srcgrad" in f.filename or "/runtime/" in f.filename
              or "/codegen/" in f.filename or f.filename.startswith("<srcgrad")]
    f = (inside or frames)[-1]
    if "srcgrad_random_" in f.filename:
        return "a line of f"
    if f.filename.startswith("<srcgrad"):
        return "generated code"
    return f"{Path(f.filename).name}:{f.lineno}"


def _error(e: BaseException) -> str:
    first = str(e).splitlines()[0][:100] if str(e) else ""
    return f"{type(e).__name__} at {_where(e)}: {first}"


def check(program: Program, folder: Path) -> tuple[str, str]:
    """(outcome, detail).  Outcomes: ``correct``, ``refused`` (a CompileError, the eager
    fallback right), ``inconclusive`` (a kink next to the point), and the failures in
    ``FAILURES``: ``wrong gradient``/``internal error`` (compiled, strict), ``mutated
    argument`` (compiled or fallback), ``fallback wrong`` (eager != finite differences),
    ``fallback error`` (refused, and the eager fallback raises what NumPy does not).
    ``correct`` carries a detail when the eager engine alone fails (compiled was right)."""
    import srcgrad
    from srcgrad.transforms.fallback import eager_transform

    fn = load(program, folder)
    saved = program.args               # stays as drawn: the caller's copies are compared to it
    args = copy.deepcopy(saved)
    fd = finite_differences(fn, args, 1e-6)
    fd2 = finite_differences(fn, args, 1e-5)
    if any(not np.allclose(a, b, rtol=1e-3, atol=1e-4) for a, b in zip(fd, fd2)):
        return "inconclusive", "a kink within 1e-5 of the point"

    # central differences of a large value carry its rounding: |f| * 1e-16 / 1e-6, and more
    atol = 1e-5 + 1e-9 * abs(float(fn(*copy.deepcopy(args))))

    def agrees(grads) -> bool:
        got = _flat_gradient(grads, args)
        return len(got) == len(fd) and all(
            g.shape == w.shape and np.allclose(g, w, rtol=1e-4, atol=atol)
            for g, w in zip(got, fd))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            grads = srcgrad.grad(fn, wrt=program.wrt, strict=True)(*args)
            compiled = ("correct", "") if agrees(grads) else (
                "wrong gradient", "compiled != finite differences")
        except srcgrad.CompileError as e:
            compiled = ("refused", reason_class(e))
            if compiled[1].startswith("internal error"):     # a bug, even if wrapped
                compiled = ("internal error", "wrapped in a CompileError: " + compiled[1])
        except Exception as e:                   # NumPy ran this very call without error
            compiled = ("internal error", _error(e))
        if not _same(args, saved):
            return "mutated argument", "by the compiled gradient"
        try:
            eager = eager_transform(fn, "grad", list(args), program.wrt, False)
            fallback = ("ok", "") if agrees(eager) else ("wrong", "eager != finite differences")
        except srcgrad.CompileError as e:
            fallback = ("refused", reason_class(e))
        except Exception as e:
            fallback = ("error", _error(e))
        if not _same(args, saved):
            return "mutated argument", "by the eager fallback"
    if fallback[0] == "wrong":
        return "fallback wrong", fallback[1] + (" (compiled right)"
                                                if compiled[0] == "correct" else "")
    if compiled[0] == "refused" and fallback[0] == "error":
        return "fallback error", fallback[1]
    if compiled[0] == "correct" and fallback[0] == "error":
        return "correct", "eager alone: " + fallback[1]
    return compiled


FAILURES = ("wrong gradient", "internal error", "mutated argument", "fallback wrong")
"""Outcomes that break the property (CI fails on them)."""
DEAD_ENDS = ("fallback error",)
"""Refused, and then the fallback raises: counted and reported, not a CI failure."""
