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
from srcgrad.transforms.fallback import eager_transform

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


@st.composite
def programs_with_control_flow(draw):
    """Straight-line statements mixed with branches on data, (possibly empty) loops, writes
    into arrays in loops, and a list that loops and branches append to, read back by index,
    comprehension and sum."""
    names = ["x0", "x1"]
    lines = ["    kept = [x0 * 1.0]"]

    def expression(pool):
        kind = draw(st.sampled_from(["unary", "binary"]))
        if kind == "unary":
            return draw(st.sampled_from(UNARY)).format(draw(st.sampled_from(pool)))
        return draw(st.sampled_from(BINARY)).format(draw(st.sampled_from(pool)),
                                                    draw(st.sampled_from(pool)))

    for k in range(draw(st.integers(2, 5))):
        kind = draw(st.sampled_from(["assign", "if", "for", "while", "append", "read",
                                     "generator", "write", "loop if", "nested"]))
        target = f"v{k}"
        lines.append(f"    {target} = {expression(names)}")
        names.append(target)
        if kind == "if":
            threshold = draw(st.floats(-2.0, 2.0))
            lines += [f"    if np.sum({target}) > {threshold!r}:",
                      f"        {target} = {expression(names)}",
                      "    else:",
                      f"        {target} = {expression(names)}"]
        elif kind == "for":
            trips = draw(st.integers(0, 3))
            lines += [f"    for i in range({trips}):",
                      f"        {target} = {expression(names)} * 0.5 + {target} * 0.5"]
        elif kind == "while":
            lines += ["    j = 0",
                      f"    while j < {draw(st.integers(0, 2))}:",
                      f"        {target} = np.tanh({expression(names)})",
                      "        j = j + 1"]
        elif kind == "append":
            lines += [f"    for i in range({draw(st.integers(0, 3))}):",
                      f"        if np.sum(kept[-1]) > {draw(st.floats(-3.0, 3.0))!r}:",
                      f"            kept.append(np.tanh(kept[-1]) * {target})"]
        elif kind == "read":
            lines += [f"    {target} = {target} * kept[{draw(st.integers(-1, 0))}]"]
        elif kind == "write":
            lines += [f"    {target} = {target} * 1.0",       # PyTorch's rules for the
                      f"    for i in range({draw(st.integers(0, 4))}):",   # eager oracle
                      f"        {target}[i % 3] = {target}[(i + 1) % 3] + "
                      f"{expression(['x1[i % 4]', 'x0[i % 3, 1]'])} * 0.5"]
        elif kind == "loop if":
            lines += [f"    for i in range({draw(st.integers(0, 3))}):",
                      f"        if np.sum({target}) > {draw(st.floats(-3.0, 3.0))!r}:",
                      f"            {target} = {target} * 0.5 + x1[i % 4] * {expression(names)}",
                      "        else:",
                      f"            {target} = {target} + x0[i % 3] * 0.1"]
        elif kind == "nested":
            lines += [f"    for i in range({draw(st.integers(0, 2))}):",
                      f"        for j in range({draw(st.integers(0, 2))}):",
                      f"            {target} = np.tanh({target} + x1[(i + j) % 4] * 0.3)"]
        elif kind == "generator":
            lines += [f"    {target} = {target} + sum(np.sin({target} * i) for i in "
                      f"range({draw(st.integers(0, 3))}))"]
    used = " + ".join(f"np.sum({n})" for n in names[-2:])
    used += " + np.sum(np.concatenate([np.ravel(v) for v in kept]))"
    source = "def program(x0, x1):\n" + "\n".join(lines) + f"\n    return {used}\n"
    return source, draw(st.integers(0, 2 ** 16))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs_with_control_flow())
def test_branches_and_loops_compiled_equals_eager_equals_fd(case):
    source, seed = case
    fn = define(source, {"np": np})
    rng = np.random.default_rng(seed)
    args = [rng.uniform(-1.5, 1.5, (3, 4)), rng.uniform(-1.5, 1.5, (4,))]
    g = srcgrad.grad(fn, wrt=(0, 1), strict=True)
    compiled = g(*args)
    eager = eager_transform(fn, "grad", args, (0, 1), False)
    for k in (0, 1):
        np.testing.assert_allclose(compiled[k], eager[k], rtol=1e-9, atol=1e-11,
                                   err_msg=source)
        fd = numerical_grad(lambda *xs: float(fn(*xs)), [a.copy() for a in args], k)
        np.testing.assert_allclose(compiled[k], fd, rtol=1e-4, atol=1e-6, err_msg=source)
