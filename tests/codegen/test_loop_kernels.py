"""Whole loops as numba functions (``backend="numba"``): a loop whose body keeps one
shape for every value becomes a forward and an adjoint ``@njit`` function in the module
specialised at the first call; the gradients match the NumPy backend's and finite
differences; loops the pass cannot prove it handles keep their generic code and stay right.

Run as a script (``python tests/codegen/test_loop_kernels.py``) it checks the RNN in a fresh
process, as the test does under ``NUMBA_DISABLE_JIT=1``."""

from __future__ import annotations

import ast
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import srcgrad

pytest.importorskip("numba")

ROOT = pathlib.Path(__file__).resolve().parents[2]


def rnn(w, u, xs, h0):
    h = h0
    total = 0.0
    for t in range(xs.shape[0]):
        h = np.tanh(w @ h + u @ xs[t])
        total = total + np.sum(h * h)
    return total


def rnn_last(w, u, xs, h0):
    h = h0
    for t in range(xs.shape[0]):
        h = np.tanh(w @ h + u @ xs[t])
    return np.sum(h * h)


def two_states(w, xs, h0, c0):
    h, c = h0, c0
    for t in range(xs.shape[0]):
        c = 0.5 * c + np.sin(w @ h) * xs[t]
        h = np.tanh(c) - 0.1 * h
    return np.sum(h * c)


def scale(v):
    return 2.0 * v


def calls_a_function(w, xs, h0):
    h = h0
    for t in range(xs.shape[0]):
        h = np.tanh(scale(w @ h) + xs[t])
    return np.sum(h)


def reads_a_list(w, xs, h0):
    h = h0
    rows = [xs[0], xs[1], xs[2]]
    for t in range(3):
        h = np.tanh(w @ h + rows[t])
    return np.sum(h * h)


def grows(w, xs, h0):
    h = h0
    for t in range(xs.shape[0]):
        h = np.concatenate([h, np.tanh(w * xs[t])])
    return np.sum(h * h)


def rnn_dot_sum(w, u, b, xs, h0):
    h = h0
    loss = 0.0
    for t in range(len(xs)):
        h = np.tanh(np.dot(w, h) + np.dot(u, xs[t]) + b)
        loss = loss + np.sum(h * h)
    return loss


def rnn_batch(w, u, b, xs, h0):
    h = np.zeros((xs.shape[1], w.shape[0]))
    for t in range(xs.shape[0]):
        h = np.tanh(h @ w.T + xs[t] @ u.T + b)
    return np.mean(h ** 2)


def batch_losses(w, u, b, xs, h0):
    h = h0 + np.zeros((xs.shape[1], 1))
    loss = 0.0
    for t in range(xs.shape[0]):
        h = np.tanh(h @ w.T + xs[t] @ u.T + b)
        loss += np.sum(np.mean(h * h, axis=0)) + np.mean(np.sum(h, 1))
    return loss / len(xs)


def first_row(w, u, b, xs, h0):
    h = h0
    for t in range(xs.shape[0]):
        h = np.tanh(w @ h + u @ xs[t, 0] + b * xs[t, 0, 0])
    return np.sum(h)


def scaled_weights(w, u, b, xs, h0):
    h = h0
    for t in range(xs.shape[0]):
        h = np.tanh((0.5 * w) @ h + u @ xs[t] + np.exp(b))
    return np.sum(h * h)


def batch_data(t=4, n=3, m=2, batch=3, seed=3):
    rng = np.random.default_rng(seed)
    return (rng.normal(size=(n, n)) / 2, rng.normal(size=(n, m)) / 2, rng.normal(size=n) / 4,
            rng.normal(size=(t, batch, m)), rng.normal(size=n) / 2)


def data(t=7, n=5, m=3, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.normal(size=(n, n)) / 3, rng.normal(size=(n, m)) / 2,
            rng.normal(size=(t, m)), rng.normal(size=n) / 2)


def finite_differences(f, args, wrt, eps=1e-6):
    out = []
    for i in wrt:
        base = args[i]
        grad = np.zeros_like(base)
        for k in np.ndindex(base.shape):
            up, down = base.copy(), base.copy()
            up[k] += eps
            down[k] -= eps
            grad[k] = (f(*args[:i], up, *args[i + 1:]) - f(*args[:i], down, *args[i + 1:])) \
                / (2 * eps)
        out.append(grad)
    return out


def specialised(g) -> str:
    assert g.sources, "the transform did not specialise"
    return list(g.sources.values())[-1]


def check(f, args, wrt, kernels: bool):
    """The numba transform's second call (the specialised module) against the NumPy
    backend and finite differences; whether the module runs the loop as kernels."""
    g = srcgrad.grad(f, wrt=wrt, backend="numba", strict=True)
    first = g(*args)
    second = g(*args)
    expect = srcgrad.grad(f, wrt=wrt, strict=True)(*args)
    numeric = finite_differences(f, args, wrt)
    for a, b, c, d in zip(first, second, expect, numeric):
        np.testing.assert_allclose(a, c, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(b, c, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(b, d, rtol=1e-6, atol=1e-7)
    source = specialised(g)
    assert ("@njit(cache=True, error_model='numpy')\ndef " in source
            and "_forward(" in source and "_adjoint(" in source) is kernels, source
    return g


def test_rnn_runs_as_two_loop_kernels():
    g = check(rnn, data(), (0, 1), kernels=True)
    source = specialised(g)
    main = source[source.index("def rnn_grad("):]
    code = [line for line in main.splitlines() if not line.strip().startswith("#")]
    assert not any("for " in line or "reversed(" in line for line in code)  # no closures
    assert "add_outer(d_u, d_u_at_xs_at, xs_at)" in source         # matmul_lhs_grad spelled
    assert "d_h = d_w_at_h @ w" in source                           # matmul_rhs_grad spelled
    assert "test_loop_kernels.py:" in source.split("def rnn_loop")[1]  # the user's lines


def test_rnn_value_and_grad():
    args = data()
    g = srcgrad.value_and_grad(rnn, wrt=(0, 1), backend="numba")
    g(*args)
    value, grads = g(*args)
    expect_value, expect = srcgrad.value_and_grad(rnn, wrt=(0, 1))(*args)
    assert value == pytest.approx(expect_value, rel=1e-13)
    for a, b in zip(grads, expect):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_loss_on_the_last_state_only():
    check(rnn_last, data(), (0, 1, 3), kernels=True)


def test_every_argument_including_the_sequence():
    check(rnn, data(t=4), (0, 1, 2, 3), kernels=True)


def test_a_loop_carrying_two_arrays():
    rng = np.random.default_rng(1)
    args = (rng.normal(size=(4, 4)) / 2, rng.normal(size=(6, 4)), rng.normal(size=4),
            rng.normal(size=4))
    check(two_states, args, (0, 2, 3), kernels=True)


def test_np_dot_and_a_carried_float_loss():
    w, u, xs, h0 = data(t=5)
    args = (w, u, np.linspace(-0.2, 0.3, 5), xs, h0)
    check(rnn_dot_sum, args, (0, 1, 2, 4), kernels=True)
    g = srcgrad.value_and_grad(rnn_dot_sum, wrt=(0,), backend="numba")
    g(*args)
    value, _ = g(*args)
    expect, _ = srcgrad.value_and_grad(rnn_dot_sum, wrt=(0,))(*args)
    assert type(value) is type(expect) is np.float64 and value == pytest.approx(expect)


@pytest.mark.parametrize("f", [rnn_batch, batch_losses, first_row])
def test_batches_transposes_and_reductions_over_an_axis(f):
    check(f, batch_data(), (0, 1, 2, 3), kernels=True)


def test_a_bias_broadcast_along_a_kept_axis():
    w, u, b, xs, h0 = batch_data()
    source = specialised(check(rnn_batch, (w, u, b[None, :], xs, h0), (0, 1, 2),
                               kernels=True))
    assert "d_b += np.sum(d_plus_plus_b, axis=0).reshape((1, 3))" in source


def _forward_kernel(source: str) -> tuple[str, str]:
    """The forward kernel's lines before its loop and those of its loop."""
    start = source.index("_forward(trips")
    text = source[start:source.index("return (", start)]
    return text[:text.index("    for t in range")], text[text.index("    for t in range"):]


def test_loop_invariants_are_computed_once_and_rows_taken_again():
    source = specialised(check(rnn_batch, batch_data(), (0, 1, 2, 3), kernels=True))
    before, loop = _forward_kernel(source)
    assert "w_T = w.T" in before and "u_T = u.T" in before and " = w.T" not in loop
    assert "w_T_saved" not in source and "xs_at_saved" not in source
    adjoint = source.split("_adjoint(trips")[1]
    assert "index = t" in adjoint and "xs_at = xs[index]" in adjoint   # a view, not a copy
    # without xs's gradient: the row is spelled xs[t], still taken again
    source = specialised(check(rnn_batch, batch_data(), (0, 1, 2), kernels=True))
    assert "index_saved" not in source and "xs_at_saved" not in source


@pytest.mark.parametrize("t", [6, 1, 0])
def test_invariants_computed_from_constants(t):
    w, u, b, xs, h0 = batch_data(t=t)
    args = (w, u, b, np.ascontiguousarray(xs[:, 0]), h0)
    g = check(scaled_weights, args, (0, 1, 2, 3, 4), kernels=t > 0)  # 0 trips: no facts
    if not t:
        return
    before, loop = _forward_kernel(specialised(g))
    assert " = np.exp(b)" in before and " = 0.5 * w" in before and " = 0.5 * w" not in loop
    assert "_saved = np.empty" in before and "times_saved" not in specialised(g)


def test_an_update_in_place_of_a_view_stores_every_value():
    """find_reuse reuses nothing where the adjoint adds into a view of an invariant."""
    from srcgrad.codegen.backends.numba.loop_invariants import find_reuse

    forward = ast.parse("w_T = w.T\nxs_at = xs[t]\nh_1 = w_T @ h + xs_at").body
    backward = ast.parse("d_h = g @ w_T.T\nd_w = d_h").body
    reuse = find_reuse(forward, backward, [ast.Name("d_h")], ["w", "xs"], "t")
    assert reuse.invariants == ["w_T"] and list(reuse.rows) == ["xs_at"]
    for bad in ("view = w_T.T\nview += g", "view = xs_at\nadd_outer(view, g, g)"):
        backward = ast.parse(bad).body
        reuse = find_reuse(forward, backward, [ast.Name("d_h")], ["w", "xs"], "t")
        assert not reuse.invariants and not reuse.rows and len(reuse.loop) == 3
    reuse = find_reuse(forward, [], [ast.Name("w_T")], ["w", "xs"], "t")  # carried: a view
    assert not reuse.invariants
    first = ast.parse("x0 = xs[0]\nh_1 = h + x0").body     # an index: not before the loop
    assert not find_reuse(first, [], [], ["xs"], "t").invariants


@pytest.mark.parametrize("f", [calls_a_function, reads_a_list])
def test_other_loops_keep_their_generic_code(f):
    w, _, xs, h0 = data(t=3, m=5)
    g = srcgrad.grad(f, wrt=(0, 2), backend="numba")
    expect = srcgrad.grad(f, wrt=(0, 2))(w, xs, h0)
    numeric = finite_differences(f, (w, xs, h0), (0, 2))
    for _ in range(2):
        for a, b, c in zip(g(w, xs, h0), expect, numeric):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(a, c, rtol=1e-6, atol=1e-7)
    assert not any("_adjoint(" in s for s in g.sources.values())


def test_a_carried_value_that_grows_is_no_kernel():
    rng = np.random.default_rng(2)
    args = (rng.normal(size=2), rng.normal(size=(3, 2)), rng.normal(size=2))
    check(grows, args, (0, 2), kernels=False)


def test_another_trip_count_redispatches():
    g = srcgrad.grad(rnn, wrt=(0, 1), backend="numba")
    for t in (7, 7, 3, 3, 7, 0, 0):
        args = data(t=t)
        for a, b in zip(g(*args), srcgrad.grad(rnn, wrt=(0, 1))(*args)):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    assert sum("_adjoint(" in s for s in g.sources.values()) == 2    # T=7 and T=3


def test_numpy_backend_does_not_specialise_loops():
    g = srcgrad.grad(rnn, wrt=(0, 1))
    g(*data())
    g(*data())
    assert g.sources == {}


def _main() -> None:
    args = data()
    g = srcgrad.grad(rnn, wrt=(0, 1), backend="numba")
    g(*args)
    got = g(*args)
    assert "_adjoint(" in specialised(g)
    for a, b in zip(got, srcgrad.grad(rnn, wrt=(0, 1))(*args)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    print("ok")


def test_without_jit():
    """The same module under NUMBA_DISABLE_JIT=1: the kernels run as Python."""
    env = dict(os.environ, NUMBA_DISABLE_JIT="1")
    run = subprocess.run([sys.executable, __file__], env=env, capture_output=True, text=True,
                         cwd=ROOT, timeout=240)
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stderr[-3000:]


if __name__ == "__main__":
    _main()


# --- found in review: scalars in loop kernels --------------------------------------------
def relu_sum(xs):
    s = 0.0
    for t in range(xs.shape[0]):
        s = s + np.maximum(xs[t, 0], 0.0)
    return s


def test_a_maximum_of_numbers_in_a_loop_kernel():
    # the gradient of a scalar maximum is an np.where of numbers, which numba makes a 0-d
    # array: the kernel writes a conditional expression
    xs = np.array([[0.5, -1.0], [-0.2, 2.0], [1.5, 0.1]])
    g = srcgrad.grad(relu_sum, backend="numba", strict=True)
    g(xs)
    np.testing.assert_array_equal(g(xs), [[1.0, 0.0], [0.0, 0.0], [1.0, 0.0]])
    assert "_adjoint(" in specialised(g)


def decaying(w, xs, h0):
    s = np.sum(h0) / (xs.shape[0] - 3)
    for t in range(xs.shape[0]):
        s = s * 0.5 + np.sum(np.tanh(w @ xs[t]))
    return s


def test_a_scalar_cotangent_leaves_the_adjoint_as_numpys_float():
    # d_s / 0 after the loop: NumPy's inf, not Python's ZeroDivisionError
    xs, w, h0 = np.ones((3, 2)), np.eye(2) * 0.5, np.array([0.3, -0.4])
    g = srcgrad.grad(decaying, wrt=(0, 2), backend="numba", strict=True)
    with np.errstate(divide="ignore"):
        g(w, xs, h0)
        second = g(w, xs, h0)
        expect = srcgrad.grad(decaying, wrt=(0, 2), strict=True)(w, xs, h0)
    assert "_adjoint(" in specialised(g)
    np.testing.assert_allclose(second[0], expect[0], rtol=1e-12)
    np.testing.assert_array_equal(second[1], [np.inf, np.inf])


def scaled_by(w, xs, c):
    h = xs[0]
    for t in range(xs.shape[0]):
        h = np.tanh(w @ h) * (1.0 / c) + xs[t]
    return np.sum(h)


def test_python_arithmetic_that_may_raise_keeps_the_generic_loop():
    # 1.0 / c of Python floats raises at c = 0.0, as the function does; a kernel gives inf
    xs, w = np.ones((3, 2)), np.eye(2) * 0.5
    g = srcgrad.grad(scaled_by, wrt=(0, 1), backend="numba", strict=True)
    g(w, xs, 2.0)
    assert "_adjoint(" not in specialised(g)
    with pytest.raises(ZeroDivisionError):
        g(w, xs, 0.0)
