"""The grammar of the random programs: the drawing state, the sample arguments and one
statement at a time (the constructs of ``program_generator``'s docstring)."""

from __future__ import annotations

import itertools

import numpy as np
from program_run import _floats

UNARY = ["np.sin({})", "np.cos({})", "np.tanh({})", "np.exp({} * 0.3)", "np.sqrt({} ** 2 + 1.0)",
         "np.log1p({} ** 2)", "-{}", "{} ** 2", "np.abs({})", "np.arctan({})", "({} * 1.5)",
         "np.square({})", "abs({})", "pow({}, 2)", "np.maximum({}, -0.37)"]
BINARY = ["{} + {}", "{} - {}", "{} * {}", "{} / (1.5 + {} ** 2)", "np.maximum({}, {})",
          "np.minimum({}, {})", "np.where({0} > {1}, {0}, {1} * 0.5)", "np.hypot({}, {})"]
REDUCE = ["np.sum({})", "np.mean({}, axis=0)", "np.max({}, axis=-1)", "np.sum({}, axis=0)",
          "np.prod({} * 0.5 + 1.0)", "np.std({})", "np.dot({0}.ravel(), {0}.ravel())"]



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

