"""Constants in generated text mean exactly their value, whatever operator they stand under.

A folded ``v = -0.7`` once printed as ``-0.7 ** 2`` (which Python reads as ``-(0.7 ** 2)``).
The sweep: every kind of constant (negative and positive floats and ints, ``-0.0``,
infinities, tiny and huge magnitudes, NumPy scalars, complex values) × every operator and
position, first through the printer alone (the text evaluated against Python's own value),
then end to end: folded into locals, negated again, read from a global, inlined from a
helper, in a branch and a loop, on a first and a specialised second call, in grad,
value_and_grad and jvp, and through the numba backend.  The value must equal plain
Python's bit for bit, and the gradient the eager engine's (which prints no text).
"""

from __future__ import annotations

import ast
import math
import warnings

import numpy as np
import pytest
from compiled_helpers import define

import srcgrad
from srcgrad.codegen.printer import literal_node, unparse
from srcgrad.transforms.fallback import eager_transform

NUMBERS = [-0.7, 0.7, -2, 2, -0.0, 0.0, math.inf, -math.inf, 1e-300, -1e-300, 1e300, -3e300,
           2 ** 70, -(2 ** 70), True, False]
COMPLEX = [complex(-1, 2), complex(1, -2), complex(-0.0, 1.0), complex(0.0, -0.0), 2j, -2j,
           complex(math.inf, -1.0), complex(-0.0, -0.0)]


def _same(a, b) -> bool:
    """Equal values of one type, nan equal to nan and -0.0 told from 0.0."""
    if type(a) is not type(b):
        return False
    if isinstance(a, complex):
        return _same(a.real, b.real) and _same(a.imag, b.imag)
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or (
            a == b and math.copysign(1.0, a) == math.copysign(1.0, b))
    return a == b


def _python(op: ast.AST, left, right):
    node = ast.Expression(ast.BinOp(ast.Name("a", ast.Load()), op, ast.Name("b", ast.Load())))
    return eval(compile(ast.fix_missing_locations(node), "<op>", "eval"), {"a": left, "b": right})


BINOPS = [ast.Add(), ast.Sub(), ast.Mult(), ast.Div(), ast.Pow(), ast.Mod(), ast.FloorDiv()]


@pytest.mark.parametrize("value", NUMBERS + COMPLEX, ids=repr)
def test_printed_constant_reads_back_as_itself_under_every_operator(value):
    other = 3 if not isinstance(value, complex) else 2.0
    for op in BINOPS:
        for left, right in ((value, other), (other, value)):
            if isinstance(op, ast.Pow) and isinstance(right, int) and abs(right) > 64:
                continue                              # 3 ** 2 ** 70 would never finish
            node = ast.BinOp(ast.Constant(left), op, ast.Constant(right))
            try:
                want = _python(op, left, right)
            except (ZeroDivisionError, OverflowError, TypeError, ValueError) as exc:
                with pytest.raises(type(exc)):
                    eval(unparse(node))
                continue
            got = eval(unparse(node))
            assert _same(got, want), (unparse(node), got, want)
    for node, want in ((ast.UnaryOp(ast.USub(), ast.Constant(value)), -value),
                       (ast.UnaryOp(ast.UAdd(), ast.Constant(value)), +value),
                       (ast.Attribute(ast.Constant(value), "real", ast.Load()), value.real),
                       (ast.Subscript(ast.Tuple([ast.Constant(value)], ast.Load()),
                                      ast.Constant(0), ast.Load()), value)):
        assert _same(eval(unparse(node)), want), unparse(node)
    assert _same(eval(unparse(literal_node(value))), value)


def test_printer_leaves_its_argument_unchanged():
    node = ast.BinOp(ast.Constant(-0.7), ast.Pow(), ast.Constant(2))
    assert unparse(node) == "(-0.7) ** 2"
    assert isinstance(node.left, ast.Constant) and node.left.value == -0.7


# ---------------------------------------------------------------------------------- end to end
KINDS = {"negative float": "-0.7", "negative int": "-2", "negative zero": "-0.0",
         "positive": "0.7", "int": "3", "infinity": "float('inf')",
         "minus infinity": "-float('inf')", "tiny": "1e-300", "minus tiny": "-1e-300",
         "huge": "-1e300", "float32": "np.float32(-0.5)", "float64 scalar": "np.float64(-1.5)"}

TERMS = ["v ** 2 * y", "-v ** 2 * y", "(-v) ** 2 * y", "y * v", "y - v", "v - y", "y / v",
         "np.exp(-(v) ** 2) * y", "(v + y) ** 2", "y ** 2 - v * y", "abs(v) * y",
         "np.maximum(v, y)", "v * y if v < 0 else y * 2.0"]

SHAPES = {                     # how the constant reaches the term
    "folded": "def f(y):\n    v = {k}\n    return {t}\n",
    "negated twice": "def f(y):\n    w = {k}\n    u = -w\n    v = -u\n    return {t}\n",
    "global": "V = {k}\n\ndef f(y):\n    v = V\n    return {t}\n",
    "inlined": "def helper(y, v):\n    return {t}\n\ndef f(y):\n    return helper(y, {k})\n",
    "loop": ("def f(y):\n    acc = 0.0 * y\n    for _ in range(2):\n        v = {k}\n"
             "        acc = acc + ({t})\n    return acc\n"),
}


def _check(fn, y, backend="numpy"):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with np.errstate(all="ignore"):
            vg = srcgrad.value_and_grad(fn, strict=True, backend=backend)
            try:
                plain = fn(y)
            except ArithmeticError as exc:            # 1.25 / -0.0, (-1e300) ** 2
                with pytest.raises(type(exc)):
                    vg(y)
                return
            rtol = 1e-6 if np.result_type(plain) == np.float32 else 1e-12   # float32 sums
            for _ in range(2):                        # first call, then specialised
                value, grad = vg(y)
                assert np.array_equal(value, plain, equal_nan=True), (value, plain, vg.source)
                assert np.array_equal(np.signbit(value), np.signbit(plain)), (value, plain)
                eager = eager_transform(fn, "grad", [y], (0,), True)
                assert np.allclose(grad, eager, equal_nan=True, rtol=rtol, atol=0), (
                    grad, eager, vg.source)
            primal, tangent = srcgrad.jvp(fn, strict=True)((y,), (np.ones_like(y),))
            assert np.array_equal(primal, plain, equal_nan=True)
            assert np.allclose(tangent, np.sum(eager), equal_nan=True, rtol=rtol, atol=0)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("kind", KINDS)
def test_constants_folded_inlined_and_specialised_keep_their_value(kind, shape):
    """Folded, each term alone (a -0.0 keeps its sign); reached otherwise, the terms that
    Python computes at 1.25, as one weighted sum (one build for them all)."""
    if shape == "folded":
        for term in TERMS:
            _check(define(SHAPES[shape].format(k=KINDS[kind], t=term), {"np": np}, name="f"),
                   1.25)
        return
    terms = []
    for term in TERMS:
        alone = define(SHAPES["folded"].format(k=KINDS[kind], t=term), {"np": np}, name="f")
        try:
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                alone(1.25)
        except ArithmeticError:
            continue
        terms.append(f"{len(terms) + 1}.0 * ({term})")
    _check(define(SHAPES[shape].format(k=KINDS[kind], t=" + ".join(terms)), {"np": np},
                  name="f"), 1.25)


@pytest.mark.parametrize("kind", ["negative float", "negative zero", "minus infinity",
                                  "float32"])
def test_constants_in_numba_kernels_keep_their_value(kind):
    pytest.importorskip("numba")
    source = (f"def f(y):\n    v = {KINDS[kind]}\n    return np.sum(np.exp(-(v) ** 2) * y "
              "+ v ** 2 * y - (-v) ** 2 * np.tanh(y))\n")
    _check(define(source, {"np": np}, name="f"), np.linspace(0.1, 1.0, 5000), "numba")


_UINT8, _BIG = np.uint8(200), np.int64(2 ** 40)


def _uint8_twice(x):
    return x * _UINT8 * _UINT8


def _big_twice(x):
    return x * _BIG * _BIG


@pytest.mark.parametrize("fn, want", [(_uint8_twice, 40000.0), (_big_twice, 2.0 ** 80)])
def test_numpy_integer_constants_promote_with_the_gradient(fn, want):
    """``x * K * K`` with K a NumPy integer: the gradient is K * K in floats, as the value's
    arithmetic is (folding the seed 1.0 away once multiplied in uint8, and wrapped)."""
    assert srcgrad.grad(fn, strict=True)(1.5) == pytest.approx(want, rel=1e-12)
    assert srcgrad.jvp(fn, (1.5,), (1.0,), strict=True)[1] == pytest.approx(want, rel=1e-12)
    got = srcgrad.grad(lambda v: np.sum(fn(v)), strict=True)(np.array([1.0, 2.0]))
    np.testing.assert_allclose(got, [want, want], rtol=1e-12)
