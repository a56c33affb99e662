"""Random programs (``program_generator``): aliasing, views, in-place operators, subscript
writes, ``out=``, builtins, helpers returning tuples, floats versus arrays, pytrees, control flow
and constructors carrying values; another family takes parameters held in objects, random
generators drawn from, callbacks and settings.  Each one's compiled gradient
(``strict=True``) equals central finite differences or is refused with a ``CompileError``; the
eager fallback is right too; nothing else comes out, and the caller's arguments are never
changed (a generator argument is left where NumPy's own run leaves it).

``benchmarks/random_campaign.py`` runs thousands of them and counts the outcomes.
"""

from __future__ import annotations

import collections

import numpy as np
import pytest
from program_generator import (
    FAILURES,
    Program,
    check,
    finite_differences,
    generate,
    load,
    shrink,
)

COUNT = 300

# Seeds that fail on a genuine bug reported to the lead (strict: the lead sees the fix land).
KNOWN: dict[int, str] = {}


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tmp_path_factory.mktemp("programs")


def _seeds():
    return [pytest.param(s, marks=[pytest.mark.xfail(strict=True, reason=KNOWN[s])])
            if s in KNOWN else s for s in range(COUNT)]


@pytest.mark.parametrize("seed", _seeds())
def test_right_or_refused_never_mutated(seed, folder):
    program = generate(seed)
    outcome, detail = check(program, folder)
    if outcome in FAILURES:
        small = shrink(program, lambda p: check(p, folder)[0] == outcome)
        pytest.fail(f"{outcome}: {detail}\n{small.source}\nargs = {small.args!r}")


JUMPS_COUNT = 40


@pytest.mark.parametrize("seed", range(JUMPS_COUNT))
def test_dead_branches_and_early_exits_right_or_refused(seed, folder):
    """Programs that also draw branches whose assignments are all dead (or ``pass``) and
    loops left early (``return`` inside ``for``/``while``, ``break`` inside either)."""
    program = generate(seed, jumps=True)
    outcome, detail = check(program, folder)
    if outcome in FAILURES:
        small = shrink(program, lambda p: check(p, folder)[0] == outcome)
        pytest.fail(f"{outcome}: {detail}\n{small.source}\nargs = {small.args!r}")


OBJECTS_COUNT = 120

# Programs with objects that compile and are right (the property is not held by refusing):
# generators drawn from, layers, a dataclass, a namedtuple, a plain object and a global one,
# callbacks, settings, try/except, errstate, raise, logging, itertools, filling.
COMPILES_OBJECTS = (4, 8, 9, 10, 12, 16, 18, 22, 24, 28, 29, 30, 33, 34, 50, 56, 58, 61, 66,
                    70, 90, 106, 107)


@pytest.mark.parametrize("seed", range(OBJECTS_COUNT))
def test_programs_with_objects_right_or_refused(seed, folder):
    """Programs that also take parameters held in objects (a dataclass, a namedtuple, a list
    of layers, a plain object and a module global), a RandomState or Generator drawn from,
    callbacks and a settings dict, under guards (try, errstate, raise, assert, logging)."""
    program = generate(seed, objects=True)
    outcome, detail = check(program, folder)
    if outcome in FAILURES:
        small = shrink(program, lambda p: check(p, folder)[0] == outcome)
        pytest.fail(f"{outcome}: {detail}\n{small.source}\nargs = {small.args!r}")
    if seed in COMPILES_OBJECTS:
        assert outcome == "correct", (outcome, detail)


def test_programs_with_objects_cover_their_constructs():
    names, kinds, lines = collections.Counter(), collections.Counter(), []
    for seed in range(OBJECTS_COUNT):
        program = generate(seed, objects=True)
        names.update(program.names)
        kinds.update(program.features)
        lines += [line for _, block in program.statements for line in block]
    for name in ("prm", "nt", "layers", "model", "rs", "rng", "act", "loss", "cfg"):
        assert names[name] >= 5, (name, names)
    for kind in ("objects", "random", "guard", "callback", "iterate", "config", "fill"):
        assert kinds[kind] >= 10, (kind, kinds)
    text = "\n".join(lines)
    for construct in ("rs.randn(", "rs.normal(size=", "rng.normal(size=", "rng.random(",
                      "except np.linalg.LinAlgError:", "with np.errstate(", "raise ValueError",
                      "assert ", "LOGGER.debug(", "functools.partial(", "map(act", "zip(",
                      ", *", "itertools.chain(", "itertools.product(", "enumerate(layers)",
                      "cfg.get(", "cfg['scale']", "= np.zeros(", ".append(", "np.stack(",
                      "prm.w", "nt.u", "lay.apply(", "model.forward(", "MODEL(", "_m = Affine(",
                      "_g = np.random.default_rng(", "_g = np.random.RandomState("):
        assert construct in text, construct


def _draws(x, rs, rng):
    noisy = x * (1.0 + 0.1 * rs.randn(3, 4))
    mask = rng.random((3, 4)) > 0.3
    return np.sum(np.sin(noisy * mask) * rng.normal(size=4))


def test_draws_of_generator_arguments_are_the_same_numbers_compiled_eager_and_autograd():
    """Each run gets a fresh generator of the same seed: the compiled gradient, the eager
    engine's, central differences and HIPS autograd's see the same draws."""
    import autograd
    import autograd.numpy as anp

    import srcgrad
    from srcgrad.transforms.fallback import eager_transform

    x = np.linspace(-1.0, 1.0, 12).reshape(3, 4)

    def fresh():
        return np.random.RandomState(5), np.random.default_rng(5)

    got = srcgrad.grad(_draws, wrt=0, strict=True)(x, *fresh())
    eager = eager_transform(_draws, "grad", [x, *fresh()], (0,), False)[0]
    fd = finite_differences(lambda x, rs, rng: _draws(x, *fresh()), [x, *fresh()], 1e-6,
                            (0,))[0]
    rs, rng = fresh()
    noise, mask, w = 1.0 + 0.1 * rs.randn(3, 4), rng.random((3, 4)) > 0.3, rng.normal(size=4)
    oracle = autograd.grad(lambda x: anp.sum(anp.sin(x * noise * mask) * w))(x)
    for value in (got, eager, fd):
        np.testing.assert_allclose(value, oracle, rtol=1e-6, atol=1e-8)


def test_the_generator_covers_every_construct():
    kinds, scalars, lines = collections.Counter(), collections.Counter(), []
    for seed in range(COUNT):
        program = generate(seed)
        kinds.update(program.features)
        lines += [line for _, block in program.statements for line in block]
        if "s" in program.names:
            scalars[type(program.args[program.names.index("s")]).__name__] += 1
    for kind in ("assign", "alias", "view", "copy", "inplace", "setitem", "out", "builtin",
                 "helper", "if", "for", "constructor", "pytree"):
        assert kinds[kind] >= 10, (kind, kinds)
    assert set(scalars) == {"float", "ndarray", "float64"}, scalars
    text = "\n".join(lines)
    for construct in ("[[0, 0]]", "out=", "np.add.at", "np.copyto", "np.full(", "np.linspace(",
                      "np.array([", "float(", "sum(", "max(", "len(", "list(", "tuple(", ".T",
                      "reshape", " *= ", " += ", 'p["a"]', "pair(", "scale(", "> 0.5] ="):
        assert construct in text, construct


def test_finite_differences_see_writes_into_arguments(folder):
    """The harness itself: a program that writes into its argument is differentiated on
    copies of it, and shrinking keeps what the predicate needs."""
    program = generate(0)
    program.statements = [("inplace", ["x *= 3.0"])]
    program.terms = ["np.sum(x ** 2)"]
    args = [np.full((3, 4), 0.5), *program.args[1:]]
    program.args = args
    fd = finite_differences(load(program, folder), args, 1e-6)
    assert np.allclose(fd[0], 18 * 0.5, rtol=1e-6)
    assert np.array_equal(args[0], np.full((3, 4), 0.5))
    assert shrink(program, lambda p: len(p.statements) == 1).statements == program.statements


FLOATS_AS_ARRAYS = {
    "np.ravel then np.concatenate": ["v0 = float(np.sum(y))",
                                     "v1 = np.concatenate([np.ravel(v0), np.ravel(x)])"],
    "arithmetic, np.reshape and np.expand_dims": [
        "v0 = abs(float(np.sum(y))) * 2.0",
        "v1 = np.reshape(v0, (1, 1)) * x - np.sum(np.expand_dims(v0, 0)) * 0.3"],
    "np.stack, np.broadcast_to and np.atleast_1d": [
        "v0 = max(float(np.sum(y)), 0.1)",
        "v1 = np.sum(np.stack([v0, v0 * 2.0])) * x + np.broadcast_to(v0, (3, 1))",
        "v1 = v1 + np.atleast_1d(v0)"],
}


@pytest.mark.parametrize("case", sorted(FLOATS_AS_ARRAYS))
def test_a_python_float_from_float_passes_through_shape_rules(case, folder):
    """``float()`` makes a Python float, which has no ``.shape``: the rules of shape functions
    (ravel, reshape, stack...) that read the input's shape know it is ``()``."""
    program = Program(0, ["x", "y"], [np.linspace(-1.0, 1.0, 12).reshape(3, 4),
                                      np.array([0.2, 0.4, -0.1, 0.3])],
                      [("builtin", FLOATS_AS_ARRAYS[case])], ["np.sum(np.sin(v1) * 0.7)"],
                      (0, 1))
    assert program.runs()
    assert check(program, folder)[0] == "correct"      # (the eager engine refuses float())


REBOUND_ITERABLES = {
    "for r in x: x = ...": ["for r in x:", "    x = x + np.sum(r) * 0.1"],
    "zip of the rebound name": ["for u, w in zip(x, x):", "    x = x + u * w * 0.1"],
    "enumerate of the rebound name": ["for k, r in enumerate(x):", "    x = x * 0.5 + r * k"],
}


@pytest.mark.parametrize("case", sorted(REBOUND_ITERABLES))
def test_a_loop_iterates_the_array_it_started_with(case, folder):
    """``for r in x: x = x + ...`` iterates the first ``x`` (Python evaluates the iterable
    once); the rows are not read from the rebound ``x`` of the iteration."""
    x = np.linspace(-1.0, 1.0, 12).reshape(3, 4) + 0.05
    program = Program(0, ["x"], [x], [("loop2", REBOUND_ITERABLES[case])],
                      ["np.sum(np.sin(x) * 0.3)"], (0,))
    assert program.runs()
    assert check(program, folder)[0] == "correct"
