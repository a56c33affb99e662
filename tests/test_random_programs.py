"""Hypothesis writes random straight-line NumPy programs (several operations, broadcasting
shapes, reused variables); each one's compiled gradient must equal the eager engine's and
central finite differences (float64)."""

from __future__ import annotations

import numpy as np
from compiled_helpers import define
from conftest import numerical_grad
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import srcgrad
from srcgrad.fallback import eager_transform

UNARY = ["np.sin({})", "np.cos({})", "np.tanh({})", "np.exp({} * 0.3)", "np.sqrt({} ** 2 + 1)",
         "np.log1p({} ** 2)", "-{}", "{} ** 2", "np.abs({}) + 0.5", "np.arctan({})"]
BINARY = ["{} + {}", "{} - {}", "{} * {}", "{} / (1.5 + {} ** 2)", "np.maximum({}, {})",
          "np.logaddexp({}, {})"]
REDUCE = ["np.sum({}, axis=0, keepdims=True)", "np.mean({}, axis=-1, keepdims=True)",
          "np.max({}, axis=0, keepdims=True)"]
SHAPES = [(3, 4), (1, 4), (3, 1), (4,)]


@st.composite
def programs(draw):
    n_inputs = draw(st.integers(1, 3))
    shapes = [draw(st.sampled_from(SHAPES)) for _ in range(n_inputs)]
    names = [f"x{i}" for i in range(n_inputs)]
    lines = []
    for k in range(draw(st.integers(2, 7))):
        kind = draw(st.sampled_from(["unary", "binary", "binary", "reduce"]))
        if kind == "unary":
            expr = draw(st.sampled_from(UNARY)).format(draw(st.sampled_from(names)))
        elif kind == "binary":
            a, b = draw(st.sampled_from(names)), draw(st.sampled_from(names))
            expr = draw(st.sampled_from(BINARY)).format(a, b)
        else:
            expr = draw(st.sampled_from(REDUCE)).format(draw(st.sampled_from(names)))
        lines.append(f"    v{k} = {expr}")
        names.append(f"v{k}")
    body = "\n".join(lines)
    used = " + ".join(f"np.sum({n})" for n in names[-2:])
    source = f"def program({', '.join(names[:n_inputs])}):\n{body}\n    return {used}\n"
    seed = draw(st.integers(0, 2 ** 16))
    return source, shapes, seed


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_compiled_equals_eager_equals_finite_differences(case):
    source, shapes, seed = case
    fn = define(source, {"np": np})
    rng = np.random.default_rng(seed)
    args = [rng.uniform(-1.5, 1.5, shape) for shape in shapes]
    wrt = tuple(range(len(args)))
    g = srcgrad.grad(fn, wrt=wrt, strict=True)
    compiled = g(*args)
    eager = eager_transform(fn, "grad", args, wrt, False)
    for k in wrt:
        assert compiled[k].shape == args[k].shape
        np.testing.assert_allclose(compiled[k], eager[k], rtol=1e-9, atol=1e-11,
                                   err_msg=source)
        fd = numerical_grad(lambda *xs: float(fn(*xs)), [a.copy() for a in args], k)
        np.testing.assert_allclose(compiled[k], fd, rtol=1e-4, atol=1e-6, err_msg=source)
