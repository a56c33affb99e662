"""The transforms' contract: wrt forms, pytrees, dtypes, vjp, value_and_grad,
.source/.graph/.fallback_reason/__wrapped__, callees, user rules, compile() in the eager graph,
tracebacks into generated lines, the CLI, and that user arrays are never mutated."""

from __future__ import annotations

import subprocess
import sys
import traceback
import warnings
from typing import NamedTuple

import networkx as nx
import numpy as np
import pytest
from compiled_helpers import define
from conftest import numerical_grad

import srcgrad

rng = np.random.default_rng(5)


def loss(w, x, y):
    z = np.tanh(x @ w)
    return np.mean((z - y) ** 2)


W, X, Y = rng.normal(size=3), rng.normal(size=(6, 3)), rng.normal(size=6)


def test_grad_matches_finite_differences_and_reads_ahead_of_time():
    g = srcgrad.grad(loss)
    assert g.source is not None and "def loss_grad(w, x, y):" in g.source  # before any call
    assert isinstance(g.graph, nx.DiGraph) and g.fallback_reason is None
    assert g.__wrapped__ is loss and g.__name__ == "loss"
    np.testing.assert_allclose(g(W, X, Y), numerical_grad(loss, [W.copy(), X, Y], 0), rtol=1e-6)


def test_wrt_by_position_name_and_tuple():
    by_name = srcgrad.grad(loss, wrt="x")(W, X, Y)
    both = srcgrad.grad(loss, wrt=(0, "x"))(W, X, Y)
    assert isinstance(both, tuple) and len(both) == 2
    np.testing.assert_allclose(both[1], by_name)
    np.testing.assert_allclose(both[0], srcgrad.grad(loss)(W, X, Y))
    with pytest.raises(ValueError, match="no argument named"):
        srcgrad.grad(loss, wrt="q")


def test_decorator_forms():
    @srcgrad.grad
    def f(x):
        return np.sum(x ** 2)

    @srcgrad.grad(wrt=(0, 1))
    def h(a, b):
        return np.sum(a * b)

    np.testing.assert_allclose(f(np.array([1.0, 2.0])), [2.0, 4.0])
    ga, gb = h(np.array([1.0, 2.0]), np.array([3.0, 4.0]))
    np.testing.assert_allclose(ga, [3.0, 4.0])
    np.testing.assert_allclose(gb, [1.0, 2.0])


def test_float_and_float32_arguments_keep_their_kind():
    g = srcgrad.grad(lambda a, b: a * b + np.sin(a), wrt=(0, 1))
    ga, gb = g(0.5, 2.0)
    assert type(ga) is float and type(gb) is float
    assert ga == pytest.approx(2.0 + np.cos(0.5)) and gb == pytest.approx(0.5)
    w32 = W.astype(np.float32)
    out = srcgrad.grad(loss)(w32, X.astype(np.float32), Y.astype(np.float32))
    assert out.dtype == np.float32


def test_pytree_gradients_have_the_same_structure():
    def model(params, x):
        w, b = params["layer"]
        return np.sum(np.tanh(x @ w + b) * params["scale"])

    params = {"layer": (rng.normal(size=(3, 2)), np.zeros(2)), "scale": 2.0}
    g = srcgrad.grad(model, strict=True)(params, X)
    assert set(g) == {"layer", "scale"} and isinstance(g["layer"], tuple)
    assert g["layer"][0].shape == (3, 2) and type(g["scale"]) is float
    eager = srcgrad.grad(model)
    from srcgrad.transforms.fallback import eager_transform
    ref = eager_transform(model, "grad", [params, X], (0,), True)
    np.testing.assert_allclose(g["layer"][0], ref["layer"][0])
    assert g["scale"] == pytest.approx(ref["scale"])
    assert eager.fallback_reason is None


def test_non_scalar_result_names_vjp():
    with pytest.raises(ValueError, match="vjp"):
        srcgrad.grad(lambda x: np.sin(x))(np.ones(3))


def test_value_and_grad_and_vjp():
    value, g = srcgrad.value_and_grad(loss)(W, X, Y)
    assert value == pytest.approx(loss(W, X, Y))
    np.testing.assert_allclose(g, srcgrad.grad(loss)(W, X, Y))

    def f(x, y, n):
        return np.sin(x) * y + n

    out, back = srcgrad.vjp(f, np.array([0.1, 0.2]), np.array([1.0, 2.0]), 3)
    np.testing.assert_allclose(out, np.sin([0.1, 0.2]) * [1.0, 2.0] + 3)
    gx, gy, gn = back(np.array([1.0, 10.0]))
    np.testing.assert_allclose(gx, np.cos([0.1, 0.2]) * [1.0, 20.0])
    np.testing.assert_allclose(gy, np.sin([0.1, 0.2]) * [1.0, 10.0])
    assert gn is None


def test_graph_nodes_carry_op_line_active():
    g = srcgrad.grad(loss)
    data = dict(g.graph.nodes(data=True))
    assert data["z"]["op"] == "tanh" and data["z"]["active"]
    assert data["x"]["op"] == "param" and not data["x"]["active"]
    assert data["z"]["line"] == loss.__code__.co_firstlineno + 1
    assert all({"op", "line", "active"} <= set(d) for d in data.values())


def test_callees_keyword_defaults_tuple_returns_lambdas_closures():
    scale = 3.0
    square = lambda t: t * t  # noqa: E731

    def layer(x, w, b=0.0):
        return np.tanh(x @ w + b)

    def split(v):
        return v[:, 0], v[:, 1]

    def f(w1, w2, x):
        h = layer(x, w1)
        out = layer(h, w2, b=0.5)
        a, b = split(out)
        return np.sum(square(a)) * scale + np.sum(b)

    args = [rng.normal(size=(3, 4)), rng.normal(size=(4, 2)), X]
    got = srcgrad.grad(f, wrt=(0, 1), strict=True)(*args)
    for k in (0, 1):
        np.testing.assert_allclose(got[k], numerical_grad(f, [a.copy() for a in args], k),
                                   rtol=1e-5, atol=1e-8)


def test_user_rule_is_used_by_the_compiler():
    def softclip(x):
        return np.tanh(x) * 2

    prim = srcgrad.defvjp(softclip, lambda g, ans, x: g * (2 - ans * ans / 2), nin=1)
    try:
        fn = define("""
            def f(x):
                return np.sum(softclip(x))
            """, {"np": np, "softclip": softclip})
        g = srcgrad.grad(fn, strict=True)
        assert "softclip(x)" in g.source
        np.testing.assert_allclose(g(np.array([0.3, -0.2])), 2 / np.cosh([0.3, -0.2]) ** 2)
    finally:
        from srcgrad.runtime.rules.primitives import NUMPY_BINDINGS, PRIMITIVES
        PRIMITIVES.pop(prim.name)
        NUMPY_BINDINGS.pop(softclip)


def test_caller_arrays_are_never_mutated():
    w, x, y = W.copy(), X.copy(), Y.copy()
    srcgrad.grad(loss, wrt=(0, 1, 2))(w, x, y)
    np.testing.assert_array_equal(w, W)
    np.testing.assert_array_equal(x, X)


def test_tracebacks_show_generated_lines():
    def bad(x):
        return np.sum(np.log(x) @ x)

    g = srcgrad.grad(bad, strict=True)
    with pytest.raises(ValueError) as info:
        g(np.ones((2, 3)))
    text = "".join(traceback.format_exception(info.value))
    assert "log_x @ x" in text                  # the generated line, shown by linecache


def test_show_and_the_command_line(capsys, tmp_path):
    srcgrad.show(srcgrad.grad(loss))
    assert "def loss_grad" in capsys.readouterr().out
    script = tmp_path / "model.py"
    script.write_text("import numpy as np\n\ndef f(a, b):\n    return np.sum(a * np.exp(b))\n")
    out = subprocess.run([sys.executable, "-m", "srcgrad", "show", f"{script}:f", "--wrt", "b"],
                         capture_output=True, text=True, check=True).stdout
    assert "def f_grad(a, b):" in out and "model.py:4" in out


class TestCompileInTheEagerGraph:
    def make(self):
        def mlp_loss(w, x):
            h = np.tanh(x @ w)
            return np.mean(h ** 2)
        return srcgrad.compile(mlp_loss), mlp_loss

    def eager(self, w, x):
        h = (x @ w).tanh()
        return (h ** 2).mean()

    def test_one_node_named_after_the_function(self):
        f, plain = self.make()
        w = srcgrad.tensor(rng.normal(size=(3, 2)), requires_grad=True)
        x = srcgrad.tensor(rng.normal(size=(4, 3)))
        out = f(w, x)
        assert out.grad_fn.name() == "MlpLossBackward"
        assert out.grad_fn.next_functions[0][0].variable is w
        out.backward()
        w2 = srcgrad.tensor(w.detach().numpy(), requires_grad=True)
        self.eager(w2, x).backward()
        np.testing.assert_allclose(w.grad.numpy(), w2.grad.numpy())
        with pytest.raises(RuntimeError, match="backward through the graph a second time"):
            out.backward()
        np.testing.assert_allclose(f(w.detach().numpy(), x.numpy()),
                                   plain(w.detach().numpy(), x.numpy()))

    def test_accumulation_hooks_no_grad_and_create_graph(self):
        f, _ = self.make()
        w = srcgrad.tensor(rng.normal(size=(3, 2)), requires_grad=True)
        x = srcgrad.tensor(rng.normal(size=(4, 3)))
        seen = []
        w.register_hook(lambda g: seen.append(g) or g * 2)
        out = f(w, x)
        out.register_hook(lambda g: g * 10)
        out.backward(retain_graph=True)
        first = w.grad.numpy().copy()
        out.backward()
        np.testing.assert_allclose(w.grad.numpy(), 2 * first)
        assert len(seen) == 2
        with srcgrad.no_grad():
            assert f(w, x).grad_fn is None
        w3 = srcgrad.tensor(w.detach().numpy(), requires_grad=True)
        (g,) = srcgrad.autograd.grad(f(w3, x), w3, create_graph=True)
        g.sum().backward()
        w4 = srcgrad.tensor(w.detach().numpy(), requires_grad=True)
        (g4,) = srcgrad.autograd.grad(self.eager(w4, x), w4, create_graph=True)
        g4.sum().backward()
        np.testing.assert_allclose(g.detach().numpy(), g4.detach().numpy())
        np.testing.assert_allclose(w3.grad.numpy(), w4.grad.numpy())


def test_fallback_is_used_by_compile_too():
    def f(x):
        y = x
        for _ in range(2):
            y = y * x
        return y.sum()

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", srcgrad.FallbackWarning)
        c = srcgrad.compile(f)
    t = srcgrad.tensor([1.0, 2.0], dtype=srcgrad.float64, requires_grad=True)
    out = c(t)
    out.backward()
    np.testing.assert_allclose(t.grad.numpy(), [3.0, 12.0])


class TestSpecialisation:
    def test_shapes_of_a_first_call_specialise_later_calls(self):
        g = srcgrad.grad(loss, wrt=(0, 1))
        first = g(W, X, Y)                   # generic code, which reports the shapes
        again = g(W, X, Y)                   # the specialised code
        assert len(g.sources) == 1
        source = next(iter(g.sources.values()))
        assert "unbroadcast" not in source.split("def loss_grad")[1]
        assert "specialised for the shapes" in source
        for a, b in zip(first, again):
            np.testing.assert_allclose(a, b)

    def test_other_shapes_pass_the_guard_to_their_own_code(self):
        g = srcgrad.grad(loss)
        g(W, X, Y)
        g(W, X, Y)
        x2, y2 = rng.normal(size=(9, 3)), rng.normal(size=9)
        for _ in range(2):
            np.testing.assert_allclose(g(W, x2, y2),
                                       numerical_grad(loss, [W.copy(), x2, y2], 0), rtol=1e-6)
        w32 = W.astype(np.float32)
        assert g(w32, X.astype(np.float32), Y.astype(np.float32)).dtype == np.float32
        np.testing.assert_allclose(g(W, X, Y), srcgrad.grad(loss)(W, X, Y))

    def test_data_dependent_shapes_are_never_specialised(self):
        fn = define("""
            def f(x):
                return np.sum(x[x > 0] ** 2)
            """, {"np": np})
        g = srcgrad.grad(fn, strict=True)
        assert not g._shapes_fixed
        a, b = np.array([1.0, -2.0, 3.0]), np.array([-1.0, 2.0, 3.0])
        for x in (a, b, a):
            np.testing.assert_allclose(g(x), 2 * x * (x > 0))

    def test_defaults_after_a_specialisation(self):
        fn = define("""
            def f(x, scale=2.0):
                return np.sum(x * scale)
            """, {"np": np})
        g = srcgrad.grad(fn)
        for _ in range(3):
            np.testing.assert_allclose(g(np.ones(2)), [2.0, 2.0])
        np.testing.assert_allclose(g(np.ones(2), 3.0), [3.0, 3.0])
        np.testing.assert_allclose(g(np.ones(2), scale=4.0), [4.0, 4.0])

    def test_python_floats_get_math_code(self):
        g = srcgrad.grad(lambda a, b: a * b + np.sin(a) * np.exp(b), wrt=(0, 1))
        ga, gb = g(0.5, 2.0)
        assert "math.sin(a)" in g.sources["floats"]
        assert ga == pytest.approx(2.0 + np.cos(0.5) * np.exp(2.0))
        assert gb == pytest.approx(0.5 + np.sin(0.5) * np.exp(2.0))
        arrays = g(np.array([0.5]), np.array([2.0]))       # arrays still take array code
        np.testing.assert_allclose(arrays[0], [ga])


class Params(NamedTuple):
    w: np.ndarray
    b: np.ndarray


@pytest.mark.parametrize("strict", [True, False])
def test_a_namedtuple_argument_gets_its_gradient_as_the_same_namedtuple(strict):
    def loss(p, x):
        return np.sum(x * p.w + p.b)
    p, x = Params(np.ones(2), np.zeros(2)), np.arange(2.0)
    try:
        got = srcgrad.grad(loss, strict=strict)(p, x)
    except srcgrad.CompileError:
        assert strict
        return
    assert type(got) is Params
    np.testing.assert_allclose(got.w, x)
    np.testing.assert_allclose(got.b, [1.0, 1.0])
