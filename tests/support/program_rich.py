"""Statements for the programs drawn with objects (``generate(seed, objects=True)``):
parameters held in objects (a plain class and its methods, a module global, a dataclass, a
namedtuple, a list of layers), draws of a ``RandomState`` or ``Generator`` argument, guards
(``try``/``except``, ``np.errstate``, ``raise`` and ``assert`` not taken, a logger's calls),
callbacks (arguments, ``functools.partial``, ``map``), iteration (``zip``, ``enumerate``,
starred unpacking, ``itertools.chain`` and ``product``), a settings dict, and arrays filled
after they are made (by index, or a list appended to and stacked)."""

from __future__ import annotations

import numpy as np
from program_run import _floats

KINDS = ("objects", "objects", "random", "random", "guard", "guard", "callback", "iterate",
         "iterate", "config", "fill", "fill")

# (what a form needs: an argument's name, "" for nothing, "?" for a form srcgrad refuses, drawn
# less often; the form).  In a form: {n} a new name, {t} and {b} floats, {r} an array whose
# last axis has 4 elements and {kr} its length, {m} a matrix, {v} a vector and {k} its length,
# {c} and {d} constants, {shape} the shape of {t} and {nd} its number of axes, {seed} a seed.
FORMS = {
    "objects": [
        ("prm", "{n} = {t} * prm.b + np.sum(prm.w ** 2)"),
        ("prm", "{n} = {r} * prm.w + prm.b"),
        ("prm", "{n} = np.tanh({r} @ prm.w) * prm.b"),
        ("nt", "{n} = {r} * nt.u + nt.v"),
        ("nt", "{n} = np.sum(nt.u * np.sin(nt.u)) * {t}"),
        ("nt", "{n}_u, {n}_v = nt\n{n} = {t} * {n}_v + np.sum({n}_u)"),
        ("nt", "{n} = nt[0] * nt[1] + {r}"),
        ("layers", "{n} = {r}\nfor lay in layers:\n    {n} = np.tanh({n} @ lay.w + lay.b)"),
        ("layers", "{n} = {r}\nfor lay in layers:\n    {n} = np.sin(lay.apply({n}))"),
        ("layers", "{n} = sum(np.sum(lay.w ** 2) for lay in layers) * {t}"),
        ("layers", "{n} = {r}\nfor k, lay in enumerate(layers):\n"
                   "    {n} = {n} + (k + 1.0) * np.tanh(lay.apply({n})) * 0.5"),
        ("layers", "{n} = layers[-1].apply(layers[0].apply({r}))"),
        ("model", "{n} = model.forward({r})"),
        ("model", "{n} = model({r}) * {c}"),
        ("model", "{n} = np.sum(model.w) * {t} + model.b[0]"),
        ("", "{n} = MODEL({r}) * {c}"),
        ("", "{n} = MODEL.forward({r}) + MODEL.b"),
        ("", "{n}_m = Affine(np.eye(4) * {c}, np.full(4, {d}))\n{n} = {n}_m.forward({r})"),
        ("", "{n}_m = Affine(np.outer({r}[0], {r}[-1]) * 0.1, {r}[0])\n{n} = {n}_m({r})"),
        ("?", "{n} = Pair({t}, {b})\n{n} = {n}.u * {n}.v"),
        ("?", "{n} = Params({r}, {c})\n{n} = np.sum({n}.w) * {n}.b"),
    ],
    "random": [
        ("rs", "{n} = {t} * (1.0 + 0.1 * rs.randn({dims}))"),
        ("rs", "{n} = {t} + 0.1 * rs.normal(size={shape})"),
        ("rs", "{n} = {t} * rs.uniform(0.5, 1.5, size={shape})"),
        ("rs", "{n} = {t} * (rs.rand({dims}) > 0.3)"),
        ("rs", "{n}_e = rs.standard_normal({shape})\n{n} = {t} + {n}_e * 0.1 + {b}"),
        ("rng", "{n} = {t} + 0.1 * rng.normal(size={shape})"),
        ("rng", "{n} = {t} * rng.uniform(0.5, 1.5, size={shape})"),
        ("rng", "{n} = {t} * (rng.random({shape}) > 0.3)"),
        ("rng", "{n} = {t} * (1.0 + 0.1 * rng.standard_normal({shape}))"),
        ("rng", "{n} = {t}\nfor k in range(2):\n    {n} = {n} + rng.normal(0.0, 0.1) * {b}"),
        ("", "{n}_g = np.random.default_rng({seed})\n"
             "{n} = {t} * (1.0 + 0.1 * {n}_g.standard_normal({shape}))"),
        ("", "{n}_g = np.random.RandomState({seed})\n{n} = {t} + {n}_g.uniform(-0.1, 0.1)"),
    ],
    "guard": [
        ("", "try:\n    {n} = np.linalg.solve(np.eye({k}) * 2.0 + 0.1 * np.outer({v}, {v}), {v})\n"
             "except np.linalg.LinAlgError:\n    {n} = {v} * 0.5"),
        ("", "try:\n    {n} = np.linalg.inv(np.eye({k}) + 0.1 * np.outer({v}, {v})) @ {v}\n"
             "except np.linalg.LinAlgError:\n    raise"),
        ("", "try:\n    {n} = np.sqrt({t} ** 2 + {c})\nexcept FloatingPointError:\n    {n} = {t}"),
        ("", "with np.errstate(divide='ignore', invalid='ignore'):\n"
             "    {n} = np.log(np.abs({t}) + 0.5) * {b}"),
        ("", "with np.errstate(all='ignore'):\n    {n} = {t} / (1.0 + {t} ** 2)"),
        ("", "if np.any(np.isnan({t})):\n    raise ValueError('nan in the input')\n"
             "{n} = {t} * {c}"),
        ("", "if np.shape({t}) != {shape}:\n    raise ValueError('unexpected shape')"),
        ("", "if not np.all(np.isfinite({t})):\n    raise FloatingPointError('not finite')"),
        ("", "assert np.all(np.isfinite({t}))"),
        ("", "assert np.ndim({t}) == {nd}, 'rank'"),
        ("", "LOGGER.debug('norm %s', np.sum({t} ** 2))\n{n} = {t} * {c}"),
        ("", "logging.debug('a step')\n{n} = np.cos({t})"),
    ],
    "callback": [
        ("act", "{n} = act({t})"),
        ("act", "{n} = act({t} * {c}) + {b}"),
        ("act", "{n} = sum(map(act, [{t}, {b}]))"),
        ("act", "{n} = twice(act, {t})"),
        ("loss", "{n} = loss({t}, {b}) * {b}"),
        ("loss", "{n} = loss({t}, np.zeros_like({t})) + {t}"),
        ("", "{n}_g = functools.partial(scaled, k={c})\n{n} = {n}_g({t})"),
        ("", "{n} = twice(functools.partial(scaled, k={c}), {t})"),
        ("", "{n} = list(map(np.tanh, [{t}, {b}]))[1]"),
        ("", "{n} = sum(map(lambda q: q * {c}, [{t}, {b}]))"),
        ("", "{n} = list(map(softplus, ({t}, {b})))[0] * {d}"),
    ],
    "iterate": [
        ("", "{n} = 0.0\nfor q, z in zip([{t}, {b}], [{c}, {d}]):\n    {n} = {n} + q * z"),
        ("", "{n}, *{n}_rest = [{t}, {b}, {t} * {c}]\n{n} = {n} + sum({n}_rest)"),
        ("?", "{n}, *{n}_rest = {r}\n{n} = {n} * len({n}_rest) + sum({n}_rest)"),
        ("", "*{n}_rest, {n} = ({t}, {b})\n{n} = {n} * {n}_rest[0]"),
        ("", "{n}_a = [{t}]\n{n}_b = [{b}, {c}]\n{n} = 0.0\n"
             "for q in itertools.chain({n}_a, {n}_b):\n    {n} = {n} + np.sin(q)"),
        ("", "{n} = 0.0\nfor k in itertools.chain(range(2), range(1, 3)):\n"
             "    {n} = {n} * 0.5 + {r}[k] * {c}"),
        ("?", "{n} = 0.0\nfor q in itertools.chain([{t}], [{b}, {c}]):\n    {n} = {n} + np.sin(q)"),
        ("?", "{n} = sum(itertools.chain([{t}], [{b}]))"),
        ("", "{n} = 0.0\nfor i, j in itertools.product(range(2), range(2)):\n"
             "    {n} = {n} + {m}[i, j] * (i + j + {c})"),
        ("", "{n} = 0.0\nfor k, q in enumerate([{t}, {b}]):\n    {n} = {n} + q * (k + {c})"),
        ("", "{n} = [q * z for q, z in zip({v}, {v}[::-1])]\n{n} = np.stack({n})"),
    ],
    "config": [
        ("cfg", "{n} = {t} * cfg['scale']"),
        ("cfg", "{n} = np.sqrt({t} ** 2 + cfg.get('eps', 1e-5))"),
        ("cfg", "{n} = {t}\nfor k in range(cfg['steps']):\n"
                "    {n} = {n} * 0.9 + np.tanh({n}) * cfg['scale']"),
        ("cfg", "{n} = {t} * cfg.get('decay', {c})"),
        ("cfg", "{n} = {t} - np.mean({t}) * 0.5 if cfg['center'] else {t} * {c}"),
        ("cfg", "if cfg.get('center', False):\n    {n} = {t} * {c}\nelse:\n    {n} = {t} + {c}"),
    ],
    "fill": [
        ("", "{n} = np.zeros({kr})\nfor i in range({kr}):\n    {n}[i] = np.sum({r}[i] ** 2) + {c}"),
        ("", "{n} = np.zeros_like({r})\nfor i in range(len({r})):\n"
             "    {n}[i] = np.tanh({r}[i]) * (i + 1.0) + {c}"),
        ("", "{n} = np.empty(({k}, 2))\n{n}[:, 0] = {v}\n{n}[:, 1] = np.sin({v}) + {c}"),
        ("", "{n} = []\nfor i in range({kr}):\n    {n}.append({r}[i] * (i + 1.0))\n"
             "{n} = np.stack({n})"),
        ("", "{n} = []\nfor q in {r}:\n    {n}.append(np.cos(q))\n{n} = np.stack({n}, axis=-1)"),
        ("", "{n} = np.ones(({k}, {k}))\nfor i in range({k}):\n    {n}[i, i] = {v}[i] ** 2 + {c}"),
    ],
}


def rich_statement(d, env: dict, pool: set) -> tuple[str, list[str], list[str]]:
    """One statement of the kinds above: (kind, lines, new names).  A form whose argument
    was not drawn is not chosen; one that does not run is dropped by the caller."""
    floats = _floats(env, pool)
    anyf = list(floats)
    arrays = [n for n in anyf if np.ndim(floats[n]) >= 1]
    fours = [n for n in arrays if np.shape(floats[n])[-1] == 4]
    mats = [n for n in arrays if np.ndim(floats[n]) == 2 and min(np.shape(floats[n])) >= 2]
    vecs = [n for n in arrays if np.ndim(floats[n]) == 1]
    kind = d.choice(KINDS)
    rare = d.chance(0.2)
    forms = [form for need, form in FORMS[kind]
             if not need or need in env or need == "?" and rare]
    if not forms:
        kind, forms = "guard", [form for _, form in FORMS["guard"]]
    form = d.choice(forms)
    t = d.choice(anyf)
    v = d.choice(vecs or arrays or anyf)
    r = d.choice(fours or arrays or anyf)
    shape = tuple(np.shape(floats[t]))
    new = d.fresh()
    text = form.format(n=new, t=t, b=d.choice(anyf), r=r, kr=len(np.atleast_1d(floats[r])),
                       m=d.choice(mats or arrays or anyf), v=v, k=len(np.atleast_1d(floats[v])),
                       c=d.const(), d=d.const(), shape=shape, nd=len(shape),
                       seed=int(d.rng.integers(1000)),
                       dims=", ".join(map(str, shape)))
    return kind, text.split("\n"), [new]
