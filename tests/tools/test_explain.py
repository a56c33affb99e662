"""``srcgrad.explain``: every refusal of a function and of its helpers, with file:line,
construct and advice, without ever calling them; and what a ``FallbackWarning`` says of the
change that would compile and of what the fallback costs."""

from __future__ import annotations

import pathlib
import warnings

import numpy as np
import pytest
import scipy.integrate

import srcgrad
from srcgrad.tools import cli

CALLS: list[str] = []
HERE = pathlib.Path(__file__).resolve()
HELPER_REFUSAL = "helper's refusal"


def _line(marker: str) -> int:
    """The line of this file that ends with ``# <marker>``."""
    lines = HERE.read_text().splitlines()
    return next(i for i, text in enumerate(lines, 1) if text.rstrip().endswith(f"# {marker}"))


def helper(x):
    kinds = {1, 2}                                  # helper's refusal
    return np.sum(x) * len(kinds)


def two_refusals_and_a_helper(x):
    CALLS.append("called")
    a = scipy.integrate.trapezoid(x)                # first refusal
    global SOMETHING                                # second refusal
    return a + helper(x)


def smooth(x):
    print("called")                                 # an effect the compiled code keeps
    return np.sum(np.tanh(x) ** 2)


def follows(x):
    a = scipy.integrate.trapezoid(x)                # refused, a stands in
    b = scipy.integrate.simpson(a)                  # reads a
    return b


class Box:
    def __init__(self, scale):
        self.scale = scale


def reads_an_object(x, box):
    return np.sum(x * box.scale)


class Model:
    def __init__(self, w):
        self.w = w

    def loss(self, x):
        seen = {0}                                  # the method's refusal
        return np.sum(x * self.w) + len(seen)


MODEL = Model(2.0)


def calls_a_method(x):
    if x[0] > 0:
        y = scipy.integrate.trapezoid(x)            # refused in a branch
    else:
        y = np.sum(x)
    return y + MODEL.loss(x)


def test_a_refusal_in_a_branch_and_one_in_a_method_of_a_global_object():
    found = srcgrad.explain(calls_a_method)
    where = {(r.function, r.lineno) for r in found.refusals}
    assert where == {("calls_a_method", _line("refused in a branch")),
                     ("loss", _line("the method's refusal"))}
    assert found.helpers == ("Model.loss",)


def test_lists_two_refusals_of_the_function_and_one_of_its_helper():
    found = srcgrad.explain(two_refusals_and_a_helper)
    assert not found.compiled and found.compiles["grad"] is False
    where = [(r.function, pathlib.Path(r.filename).name, r.lineno) for r in found.refusals]
    name = HERE.name
    assert ("two_refusals_and_a_helper", name, _line("first refusal")) in where
    assert ("two_refusals_and_a_helper", name, _line("second refusal")) in where
    assert ("helper", name, _line(HELPER_REFUSAL)) in where
    by_line = {r.lineno: r for r in found.refusals}
    first = by_line[_line("first refusal")]
    assert first.construct == "scipy.integrate.trapezoid(x)"
    assert "no derivative rule" in first.message and "srcgrad.defvjp" in first.advice
    assert by_line[_line("second refusal")].construct == "global SOMETHING"
    assert "without global" in by_line[_line("second refusal")].advice
    assert "without a set" in by_line[_line(HELPER_REFUSAL)].advice
    assert found.helpers == ("helper",)
    text = str(found)
    for r in found.refusals:
        assert f"{r.filename}:{r.lineno} in {r.function}" in text
    assert "does not compile" in text and "to compile it:" in text


def test_a_refusal_past_the_first_says_what_it_follows():
    found = srcgrad.explain(follows)
    lines = {r.lineno: r for r in found.refusals}
    assert lines[_line("refused, a stands in")].after is None
    assert lines[_line("reads a")].after == _line("refused, a stands in")
    assert "may change once that line compiles" in str(found)


def test_a_compiling_function_says_so(capsys):
    found = srcgrad.explain(smooth)
    assert found.compiled and found.compiles == {"grad": True, "jvp": True}
    assert found.refusals == ()
    assert str(found) == "smooth compiles (grad, jvp)"
    assert "compiles" in repr(found)
    assert capsys.readouterr().out == ""            # nor called, nor printing by itself


def test_explain_never_calls_the_function_or_its_helpers(capsys):
    CALLS.clear()
    srcgrad.explain(two_refusals_and_a_helper)
    srcgrad.explain(smooth)
    srcgrad.explain(reads_an_object, np.ones(3), Box(2.0))
    assert CALLS == [] and capsys.readouterr().out == ""


def test_code_built_at_the_first_call_is_explained_with_example_arguments():
    waiting = srcgrad.explain(reads_an_object)
    assert not waiting.compiled and waiting.refusals == ()
    assert "example arguments" in waiting.note and "example arguments" in str(waiting)
    found = srcgrad.explain(reads_an_object, np.ones(3), Box(2.0))
    assert found.compiled and found.compiles == {"grad": True}


def test_not_a_function_is_one_refusal():
    found = srcgrad.explain(np.sin)
    assert not found.compiled and found.compiles == {"grad": False}
    assert len(found.refusals) == 1 and "not a function" in found.refusals[0].message
    assert found.refusals[0].advice == "wrap it: lambda x: f(x, ...)"


def test_a_generator_is_one_refusal():
    def numbers(x):
        yield x
    found = srcgrad.explain(numbers)
    assert not found.compiled and len(found.refusals) == 1
    assert "generator" in found.refusals[0].message and found.refusals[0].lineno is None


def test_the_fallback_warning_gives_the_advice_and_the_cost():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        g = srcgrad.grad(helper)
        x = np.linspace(0.1, 1.0, 5)
        np.testing.assert_allclose(g(x), np.full(5, 2.0))
        g(x)
    fallbacks = [w for w in caught if issubclass(w.category, srcgrad.FallbackWarning)]
    assert len(fallbacks) == 1                         # once a function, not once a call
    text = str(fallbacks[0].message)
    assert f"line {_line(HELPER_REFUSAL)}" in text
    assert "to compile it: rewrite this line without a set" in text
    assert "cost: each such call runs on the eager engine" in text
    assert "srcgrad.explain(helper) lists every refusal" in text


def test_a_fallback_measures_its_first_eager_call():
    def f(x):
        s = {1, 2}
        return np.sum(x ** 2) * len(s)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", srcgrad.FallbackWarning)
        g = srcgrad.grad(f)
        x = np.array([0.5, 1.5])
        assert g.eager_seconds is None
        np.testing.assert_allclose(g(x), 4.0 * x)
    assert g.eager_seconds is not None and g.eager_seconds > 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", srcgrad.FallbackWarning)
        forward = srcgrad.jvp(f)
        value, tangent = forward((x,), (np.ones(2),))
    np.testing.assert_allclose(tangent, np.sum(4.0 * x))
    assert forward.eager_seconds is not None and forward.eager_seconds > 0.0
    compiled = srcgrad.grad(lambda v: np.sum(v ** 2))
    compiled(x)
    assert compiled.eager_seconds is None                # the compiled path measures nothing


def test_strict_errors_are_unchanged_and_carry_the_advice():
    with pytest.raises(srcgrad.CompileError) as info:
        srcgrad.grad(two_refusals_and_a_helper, strict=True)
    error = info.value
    assert str(error).startswith("srcgrad compiles .append on lists; 'CALLS' is not one here\n")
    assert f'File "{HERE}", line {error.lineno}, in two_refusals_and_a_helper' in str(error)
    assert "to compile it" not in str(error) and "cost:" not in str(error)
    assert error.construct == 'CALLS.append("called")'
    plain = srcgrad.CompileError("srcgrad cannot compile global yet")
    assert str(plain) == "srcgrad cannot compile global yet"
    assert "without global" in plain.advice
    given = srcgrad.CompileError("x", advice="do y")
    assert given.advice == "do y" and str(given) == "x"


@pytest.mark.parametrize("message, exact, part", [
    ("x.item(index) is not compiled; index the array instead", "index the array instead", ""),
    ("'y' is changed in place after it was put in a list (line 3); in NumPy the change "
     "shows through the list too, which srcgrad does not follow: put a copy in the list",
     "put a copy in the list", ""),
    ("f writes in place into what its argument 'd' holds, and 'd' is a dict, not "
     "differentiated: srcgrad compiles such a write for an array argument only", None,
     "make the change on a copy"),
    ("srcgrad cannot compile m.f(): .f() is not an ndarray method it compiles, and m is a "
     "value computed when the code runs", None, "a global, a closure variable or an argument"),
    ("srcgrad cannot compile changing a dict argument (it would change the caller's dict); "
     "build a new dict: q = dict(p); q[k] = v", "build a new dict: q = dict(p); q[k] = v", ""),
    ("srcgrad cannot compile an assignment to attribute", None, "a local variable"),
    ("np.fft.rfft makes or reads complex values", None, ""),
])
def test_advice_is_read_off_the_kind_of_refusal(message, exact, part):
    found = srcgrad.CompileError(message).advice
    if part:
        assert part in found
    else:
        assert found == exact


def test_the_command_line_explains_a_function(capsys):
    assert cli.main(["explain", f"{HERE}:smooth", "--run-module"]) == 0
    assert "smooth compiles (grad, jvp)" in capsys.readouterr().out
