"""Random programs (``program_generator``) through forward mode and second order
(``program_forward``): the compiled jvp (``strict=True``) along random tangents equals
``f(*args)`` and central finite differences of ``f`` along them, or is refused with a
``CompileError``; so does the jvp of the programs returning their terms unsummed (a tuple of
arrays); the Hessian-vector product ``jvp(grad(f, wrt=i))`` and ``hessian(f, wrt=i)`` equal
finite differences of the compiled gradient; nothing else comes out, and neither the
arguments nor the tangents are ever changed.

``benchmarks/random_campaign.py --transform jvp|jvp-tuple|hvp`` runs thousands of them.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
from program_forward import (
    FAILURES,
    check_hvp,
    check_jvp,
    directional,
    tangents_for,
    vector,
)
from program_generator import Program, generate, load, shrink

import srcgrad

JVP_COUNT, TUPLE_COUNT, HVP_COUNT = 120, 60, 60

# Seeds that fail on a genuine bug (strict: the lead sees the fix land); checked beyond the
# counts too, the Hessian-vector products at every argument.
KNOWN_JVP: dict[int, str] = {}
KNOWN_TUPLE: dict[int, str] = {}
KNOWN_HVP: dict[int, str] = {}
# Seeds of bugs since fixed, checked at every argument: the hvp of a dict argument written
# into (p['a'][0] = ...) kept the tangent of the overwritten items (the jvp lacked its tree);
# a helper returning a tuple bound to a name broke the second order (its jvp now returns the
# items and their tangents as one flat tuple).
FIXED_HVP = (97, 141, 157, 180, 209, 290)


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tmp_path_factory.mktemp("forward_programs")


def _seeds(count: int, known: dict[int, str], fixed: tuple = ()) -> list:
    return [pytest.param(s, marks=[pytest.mark.xfail(strict=True, reason=known[s])])
            if s in known else s for s in sorted(set(range(count)) | set(known) | set(fixed))]


def _hvp_at(seed: int):
    """The check of one argument per program (in turn), to keep the test short; of every
    argument for the known failures."""
    return lambda program, folder: check_hvp(
        program, folder, None if seed in KNOWN_HVP or seed in FIXED_HVP else (
            seed % len(program.wrt),))


def _holds(check, program: Program, folder, known: dict[int, str], compiles: tuple) -> None:
    outcome, detail = check(program, folder)
    if outcome in FAILURES and program.seed in known:
        pytest.fail(f"{outcome}: {detail} (known)")           # not shrunk: it takes seconds
    if outcome in FAILURES:
        small = shrink(program, lambda p: check(p, folder)[0] == outcome)
        pytest.fail(f"{outcome}: {detail}\n{small.source}\nargs = {small.args!r}")
    if program.seed in compiles:                  # not everything is refused
        assert outcome == "correct", (outcome, detail)


# Programs that compile and are right (so that the property is not held by refusing).
COMPILES_JVP = (2, 8, 15, 18, 19, 29, 33, 35, 44, 50, 51, 59)
COMPILES_HVP = (2, 8, 29, 30, 35, 51)


@pytest.mark.parametrize("seed", _seeds(JVP_COUNT, KNOWN_JVP))
def test_jvp_right_or_refused_never_mutated(seed, folder):
    _holds(check_jvp, generate(seed), folder, KNOWN_JVP, COMPILES_JVP)


@pytest.mark.parametrize("seed", _seeds(TUPLE_COUNT, KNOWN_TUPLE))
def test_jvp_of_a_tuple_of_arrays(seed, folder):
    _holds(check_jvp, vector(generate(seed)), folder, KNOWN_TUPLE, COMPILES_JVP)


@pytest.mark.parametrize("seed", _seeds(HVP_COUNT, KNOWN_HVP, FIXED_HVP))
def test_hvp_and_hessian_right_or_refused_never_mutated(seed, folder):
    _holds(_hvp_at(seed), generate(seed), folder, KNOWN_HVP, COMPILES_HVP)


# Programs that also draw dead branches (all assignments dead, or ``pass``) and loops left
# early (``return`` inside ``for``/``while``, ``break`` inside either): their jvp, Hessian-
# vector products and Hessians; the seeds in COMPILES_JUMPS compile and are right.
JUMPS_JVP_COUNT, JUMPS_HVP_COUNT = 30, 8
COMPILES_JUMPS_JVP = (1, 5, 7, 12, 14, 20)
COMPILES_JUMPS_HVP = (1, 5, 7)


@pytest.mark.parametrize("seed", range(JUMPS_JVP_COUNT))
def test_jvp_of_dead_branches_and_early_exits(seed, folder):
    _holds(check_jvp, generate(seed, jumps=True), folder, {}, COMPILES_JUMPS_JVP)


@pytest.mark.parametrize("seed", range(JUMPS_HVP_COUNT))
def test_hvp_and_hessian_of_dead_branches_and_early_exits(seed, folder):
    _holds(_hvp_at(seed), generate(seed, jumps=True), folder, {}, COMPILES_JUMPS_HVP)


def test_the_programs_with_jumps_draw_every_kind():
    text = "\n".join(line for seed in range(JUMPS_JVP_COUNT)
                     for _, block in generate(seed, jumps=True).statements for line in block)
    for construct in ("    pass", "    dead", "        return ", "        break", "while j"):
        assert construct in text, construct
    assert "for k in range(3):\n    if" in text or "for k in range(4):\n    if" in text


# --- the harness itself: the checks can fail ------------------------------------------------

def _program(lines: list[str], terms: list[str], x0: float = 0.05) -> Program:
    x = np.linspace(-1.0, 1.0, 12).reshape(3, 4)
    x[0, 0] = x0
    return Program(0, ["x", "s"], [x, 0.7], [("assign", lines)], terms, (0, 1))


def test_a_wrong_tangent_or_value_is_caught(folder, monkeypatch):
    program = _program(["v0 = np.tanh(x) * s"], ["np.sum(np.sin(v0) * 0.5)"])
    assert check_jvp(program, folder) == ("correct", "")
    jvp = srcgrad.jvp
    monkeypatch.setattr(srcgrad, "jvp", lambda *a, **k: (jvp(*a, **k)[0], jvp(*a, **k)[1] * 1.01))
    assert check_jvp(program, folder)[0] == "wrong derivative"
    monkeypatch.setattr(srcgrad, "jvp", lambda *a, **k: (jvp(*a, **k)[0] + 1e-6, jvp(*a, **k)[1]))
    assert check_jvp(program, folder)[0] == "wrong value"


def test_a_write_into_the_arguments_or_tangents_is_caught(folder, monkeypatch):
    program = _program(["v0 = np.tanh(x) * s"], ["np.sum(np.sin(v0) * 0.5)"])
    jvp = srcgrad.jvp

    def writes(k):
        def fake(fn, primals, tangents, **options):
            out = jvp(fn, primals, tangents, **options)
            (primals, tangents)[k][0][0, 0] += 1.0
            return out
        return fake
    for k in (0, 1):
        monkeypatch.setattr(srcgrad, "jvp", writes(k))
        assert check_jvp(program, folder) == ("mutated argument", "by the compiled jvp")


def test_a_wrong_hessian_or_hvp_is_caught(folder, monkeypatch):
    program = _program(["v0 = np.tanh(x) * s"], ["np.sum(np.sin(v0) * 0.5)"])
    assert check_hvp(program, folder) == ("correct", "")
    hessian = srcgrad.hessian
    monkeypatch.setattr(srcgrad, "hessian", lambda *a, **k: (
        lambda *args: hessian(*a, **k)(*args) * 1.01))
    assert check_hvp(program, folder, (1,)) == (
        "wrong derivative", "hessian of argument 1 != finite differences of the gradient")
    monkeypatch.undo()
    jvp = srcgrad.jvp
    monkeypatch.setattr(srcgrad, "jvp", lambda *a, **k: (jvp(*a, **k)[0], jvp(*a, **k)[1] * 1.01))
    assert check_hvp(program, folder, (0,)) == (
        "wrong derivative", "hvp of argument 0 tangent != finite differences")


def test_a_kink_next_to_the_point_is_inconclusive(folder):
    """|x - 0.25| at x = 0.25 + 2e-6: steps of 1e-6 stay on one side of the kink, steps of
    1e-5 cross it (a kink right at the point looks alike to both: central differences of
    |x| are 0 there, as the rules' sign(0) is)."""
    program = _program(["v0 = np.abs(x - 0.25)"], ["np.sum(v0 * s)"], 0.25 + 2e-6)
    assert check_jvp(program, folder)[0] == "inconclusive"
    assert check_hvp(program, folder, (0,))[0] == "inconclusive"


def test_tangents_and_directional_differences(folder):
    """Tangents take each leaf's kind (float, NumPy scalar, 0-d array, pytree), and the
    directional difference of a function that writes into its argument sees the copy."""
    args = [np.ones((2, 3)), 0.5, np.float64(0.5), np.array(0.5), {"a": [np.ones(2), 1.5]}]
    tangents = tangents_for(args, 3)
    assert [type(t) for t in tangents[:4]] == [np.ndarray, float, np.float64, np.ndarray]
    assert tangents[0].shape == (2, 3) and tangents[3].shape == ()
    assert isinstance(tangents[4]["a"][1], float) and tangents[4]["a"][0].shape == (2,)
    program = _program(["x *= 3.0"], ["np.sum(x ** 2) * s"])
    saved = copy.deepcopy(program.args)
    fn = load(program, folder)
    t = tangents_for(program.args, 0)
    x, s = program.args
    want = np.sum(18 * x * t[0]) * s + np.sum(9 * x ** 2) * t[1]
    assert np.allclose(directional(fn, program.args, t, 1e-6)[0], want, rtol=1e-6)
    assert np.array_equal(program.args[0], saved[0])


def test_a_tuple_program_returns_its_terms_unsummed(folder):
    program = vector(_program(["v0 = np.tanh(x) * s"],
                              ["np.sum(np.sin(v0) * 0.5)", "np.sum(x * s)"]))
    assert program.runs()
    out = load(program, folder)(*copy.deepcopy(program.args))
    x, s = program.args
    assert len(out) == 2 and np.allclose(out[0], np.sin(np.tanh(x) * s) * 0.5)
    assert np.allclose(out[1], x * s)
    small = shrink(program, lambda p: len(p.terms) >= 1)
    assert type(small) is type(program) and small.terms == ["np.sin(v0) * 0.5"]
