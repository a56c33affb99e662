"""Forward-mode AD in the eager engine (``srcgrad.autograd.forward_ad``) and the eager
``autograd.functional.jvp`` built on it, against PyTorch's ``torch.autograd.forward_ad``."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import needs_torch

import srcgrad
import srcgrad.autograd.forward_ad as fw
from srcgrad.runtime.eager import forward_ad as forward_ad_module
from srcgrad.runtime.eager import tensor as tensor_module
from srcgrad.runtime.eager.ndarray import Array
from srcgrad.runtime.eager.tensor import Tensor

pytestmark = needs_torch
torch = pytest.importorskip("torch")
fwt = torch.autograd.forward_ad

RNG = np.random.default_rng(0)


def _mlp(m, x, w1, b1, w2):
    return ((x @ w1 + b1).tanh() @ w2).sigmoid().sum(1)


def _softmax_chain(m, x):
    e = (x - x.max(1, keepdim=True).values).exp()
    return (e / e.sum(1, keepdim=True)) * x.log_softmax(1) + x.softmax(0)


CASES = {
    "sin": (lambda m, x: x.sin(), [(3, 4)]),
    "exp": (lambda m, x: x.exp() * 2.0, [(5,)]),
    "matmul": (lambda m, a, b: a @ b, [(3, 4), (4, 2)]),
    "matvec": (lambda m, a, b: a @ b, [(3, 4), (4,)]),
    "sum_axis": (lambda m, x: x.sum(1) + x.sum(0).sum(), [(3, 4)]),
    "sum_keepdim": (lambda m, x: (x * x).sum(0, keepdim=True) - x, [(3, 4)]),
    "views": (lambda m, x: x.reshape(6, 2).t()[1:, ::2] * 3.0, [(3, 4)]),
    "fancy_index": (lambda m, x: x[[0, 2, 2]] + x.transpose(0, 1)[1], [(3, 3)]),
    "broadcast": (lambda m, x, y: x * y + y - x / (y * y + 1.0), [(3, 4), (1, 4)]),
    "bias_add": (lambda m, x, b: x + b, [(3, 4), (4,)]),
    "scalar_broadcast": (lambda m, x, s: x * s + s.exp(), [(3, 2), ()]),
    "where": (lambda m, x, y: m.where(x > 0, x * y, y.cos()), [(3, 4), (3, 4)]),
    "softmax_chain": (_softmax_chain, [(3, 5)]),
    "mlp": (_mlp, [(4, 3), (3, 5), (5,), (5, 2)]),
    "pow_sqrt_abs": (lambda m, x: (x.abs() + 1.0).sqrt() ** 3 + x.pow(2), [(4,)]),
}


def _arrays(shapes):
    return [RNG.standard_normal(s) for s in shapes]


def _forward(m, ad, fn, primals, tangents):
    """``fn`` on duals of ``primals`` (None tangent: not dual) → (value, tangent) as arrays."""
    with ad.dual_level():
        args = [ad.make_dual(m.tensor(p), m.tensor(t)) if t is not None else m.tensor(p)
                for p, t in zip(primals, tangents)]
        value, tangent = ad.unpack_dual(fn(m, *args))
        return value.detach().numpy(), (None if tangent is None else
                                        tangent.detach().numpy())


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("which", ["all", "first", "last"])
def test_tangents_match_pytorch(name, which):
    fn, shapes = CASES[name]
    primals, tangents = _arrays(shapes), _arrays(shapes)
    if which == "first":
        tangents = [tangents[0]] + [None] * (len(shapes) - 1)
    elif which == "last":       # a smaller input's tangent alone is broadcast to the result
        tangents = [None] * (len(shapes) - 1) + [tangents[-1]]
    value, tangent = _forward(srcgrad, fw, fn, primals, tangents)
    want_value, want_tangent = _forward(torch, fwt, fn, primals, tangents)
    np.testing.assert_allclose(value, want_value, rtol=1e-12, atol=1e-12)
    assert tangent.shape == want_tangent.shape
    np.testing.assert_allclose(tangent, want_tangent, rtol=1e-10, atol=1e-10)


def test_tangents_are_exact_against_finite_differences():
    x, t = RNG.standard_normal(4), RNG.standard_normal(4)
    f = lambda a: ((a.sin() * a).exp() / (a * a + 1.0)).sum()  # noqa: E731
    with fw.dual_level():
        tangent = fw.unpack_dual(f(fw.make_dual(srcgrad.tensor(x), srcgrad.tensor(t)))).tangent
    eps = 1e-6
    numeric = (f(srcgrad.tensor(x + eps * t)) - f(srcgrad.tensor(x - eps * t))).item() / (2 * eps)
    assert tangent.item() == pytest.approx(numeric, rel=1e-7)


def test_a_tangent_takes_the_dtype_of_its_value():
    with fw.dual_level():
        t64 = srcgrad.ones(3, dtype=srcgrad.float64)
        x = fw.make_dual(srcgrad.ones(3, dtype=srcgrad.float32), t64)
        assert fw.unpack_dual(x).tangent is t64          # kept as given, as in PyTorch
        tangent = fw.unpack_dual(x * 2).tangent
    assert tangent.dtype == srcgrad.float32              # PyTorch keeps float64 here
    np.testing.assert_array_equal(tangent.numpy(), [2.0, 2.0, 2.0])


def test_non_float_results_and_detached_tensors_have_no_tangent():
    with fw.dual_level():
        x = fw.make_dual(srcgrad.tensor([1.0, -2.0]), srcgrad.tensor([1.0, 1.0]))
        assert fw.unpack_dual(x > 0).tangent is None
        assert fw.unpack_dual(x.argmax()).tangent is None
        assert fw.unpack_dual(x.detach()).tangent is None
        assert fw.unpack_dual(srcgrad.tensor([3.0]) * 2).tangent is None


# ---------------------------------------------------------------------------------------------
# Views and writes in place, scenario by scenario as PyTorch behaves.

def _inplace_scenarios(m, ad, p, t):
    """Each scenario's tangents, as arrays (the same code for both libraries)."""
    out = {}
    tangent = lambda x: ad.unpack_dual(x).tangent.detach().numpy().copy()  # noqa: E731
    with ad.dual_level():
        user_t = m.tensor(t)
        x = ad.make_dual(m.tensor(p), user_t)
        view = x[:2]
        x.mul_(2)
        out["mul_"], out["view_sees_mul_"] = tangent(x), tangent(view)
        out["user_tangent_written"] = user_t.numpy().copy()
        x = ad.make_dual(m.tensor(p), m.tensor(t))
        x[1:].mul_(10)
        out["write_through_view"] = tangent(x)
        x = ad.make_dual(m.tensor(p), m.tensor(t))
        sibling = x[:2]
        x[1:].zero_()
        out["sibling"] = tangent(sibling)
        base = m.zeros(4, dtype=m.float64)
        base[:3].add_(ad.make_dual(m.tensor(p), m.tensor(t)))
        out["base_gets_tangent"] = tangent(base)
        rows = m.zeros(2, 3, dtype=m.float64)
        rows[0] = ad.make_dual(m.tensor(p), m.tensor(t))
        out["setitem"] = tangent(rows)
        target = m.ones(3, dtype=m.float64)
        target.copy_(ad.make_dual(m.tensor(p), m.tensor(t)))
        out["copy_"] = tangent(target)
        grid = m.zeros(2, 3, dtype=m.float64)
        grid.t().add_(ad.make_dual(m.tensor(np.outer(p, [1.0, 2.0])),
                                   m.tensor(np.outer(t, [1.0, -1.0]))))
        out["transpose_view"] = tangent(grid)
        x = ad.make_dual(m.tensor(p), m.tensor(t))
        x.view(3, 1).floor_()
        out["floor_"] = tangent(x)
        x = ad.make_dual(m.tensor(p), m.tensor(t))
        y = x * 1.0
        y.exp_()
        y += x
        out["chain"], out["source_untouched"] = tangent(y), tangent(x)
        x = ad.make_dual(m.tensor(p), m.tensor(t))
        y = x + 1.0             # the rule's tangent is x's: y must not share it
        y.mul_(3)
        out["no_shared_tangent"], out["shared_source"] = tangent(y), tangent(x)
        primal = m.tensor(p)
        x = ad.make_dual(primal, m.tensor(t))
        primal.add_(ad.make_dual(m.tensor(p), m.ones(3, dtype=m.float64)))
        out["make_dual_base_written"] = tangent(x)
    return out


def test_views_and_writes_in_place_match_pytorch():
    p, t = RNG.standard_normal(3), RNG.standard_normal(3)
    got = _inplace_scenarios(srcgrad, fw, p, t)
    want = _inplace_scenarios(torch, fwt, p, t)
    assert got.keys() == want.keys()
    for key in want:
        np.testing.assert_allclose(got[key], want[key], rtol=1e-12, atol=1e-12, err_msg=key)


def test_the_hooks_run_only_inside_a_level(monkeypatch):
    def refuse(*_):
        raise AssertionError("a forward-mode hook ran outside a dual level")

    for name in ("lend_tangent", "write_tangent", "write_item", "link_view"):
        monkeypatch.setattr(forward_ad_module, name, refuse)
    x = srcgrad.tensor([1.0, 2.0, 3.0])
    x += 1.0
    x.sin_()
    x[0] = 5.0
    x[1:].mul_(2.0)
    x.t().add_(1.0)
    assert tensor_module._forward_hook is None
    with pytest.raises(AssertionError, match="outside"), fw.dual_level():
        x.add_(1.0)
    assert tensor_module._forward_hook is None       # left as it was, after an exception


# Reverse over forward through writes in place: the tangent, then the gradients of
# (t * t).sum() + (c * t).sum() with respect to both inputs, as PyTorch.
WRITES = {
    "mul_": lambda m, c, b: c.mul_(b),
    "setitem": lambda m, c, b: c.__setitem__(0, b[1] * 3.0),
    "sin_": lambda m, c, b: c.sin_(),
    "div_": lambda m, c, b: c.div_(b + 3.0),
    "view_mul_": lambda m, c, b: c[1:].mul_(b[:2]),
    "view_then_base": lambda m, c, b: (c[1:].mul_(b[:2]), c.exp_()),
    "transposed": lambda m, c, b: c.view(3, 1).t().add_(b.view(1, 3)),
    "chain": lambda m, c, b: (c.sin_(), c[:2].mul_(b[1:]), c.div_(b + 3.0),
                              c.__setitem__(2, b[0])),
}


def _reverse_over_writes(m, ad, write):
    rng = np.random.default_rng(2)
    a, b = (m.tensor(rng.standard_normal(3), requires_grad=True) for _ in range(2))
    ta, tb = (m.tensor(rng.standard_normal(3)) for _ in range(2))
    with ad.dual_level():
        c = ad.make_dual(a, ta) * 1.0
        WRITES[write](m, c, ad.make_dual(b, tb))
        t = ad.unpack_dual(c).tangent
    grads = m.autograd.grad((t * t).sum() + (c * t).sum(), (a, b), allow_unused=True)
    return [t.detach().numpy()] + [np.zeros(3) if g is None else g.numpy() for g in grads]


@pytest.mark.parametrize("write", WRITES)
def test_reverse_over_forward_through_writes_in_place_matches_pytorch(write):
    got, want = _reverse_over_writes(srcgrad, fw, write), _reverse_over_writes(torch, fwt, write)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)


# ---------------------------------------------------------------------------------------------
# Custom Functions: ``jvp`` and ``ctx.save_for_forward``, PyTorch's checks and messages.

def _function(m, forward, jvp, dirty=False, non_differentiable=False, materialize=True):
    class Op(m.autograd.Function):
        @staticmethod
        def forward(ctx, x, *rest):
            ctx.set_materialize_grads(materialize)
            out = forward(x, *rest)
            if dirty:
                ctx.mark_dirty(x)
            if non_differentiable:
                ctx.mark_non_differentiable(out)
            return out

        @staticmethod
        def jvp(ctx, xt, *rest):
            Op.seen.append([None if r is None else r.tolist() for r in rest])
            return jvp(xt)
    Op.seen = []
    return Op


FUNCTION_JVPS = {   # forward, jvp: each a success or one of PyTorch's refusals
    "two_outputs": (lambda x: (x * 2, x > 0, 3), lambda t: (t * 2, None, None)),
    "too_few": (lambda x: (x * 2, x * 3), lambda t: t * 2),
    "too_many": (lambda x: x * 2, lambda t: (t, t)),
    "one_tuple": (lambda x: x * 2, lambda t: (t * 2,)),
    "wrong_size": (lambda x: x * 2, lambda t: t[:1]),
    "not_a_tensor": (lambda x: x * 2, lambda t: 5.0),
    "integer_output": (lambda x: (x * 2, x > 0), lambda t: (t, t)),
    "input_as_is": (lambda x: x, lambda t: t),
    "input_as_is_view": (lambda x: x, lambda t: t.view_as(t)),
    "view": (lambda x: x[:1], lambda t: t[:1]),
    "view_wrong_size": (lambda x: x[:1], lambda t: t.view_as(t)),
    "view_of_another": (lambda x: x[:1], lambda t: (t * 2)[:1]),
    "view_not_a_view": (lambda x: x[:1], lambda t: t[:1] * 3),
    "tangent_passed_on": (lambda x: x * 1, lambda t: t),
}


def _outcome(fn):
    try:
        return fn()
    except Exception as e:  # noqa: BLE001 - the refusal is the outcome compared
        return type(e).__name__, str(e).replace("srcgrad", "torch")


def _custom_functions(m, ad):
    D = m.float64
    out = {}
    grad_modes = []
    x, t, y = (m.tensor(v, dtype=D) for v in ([1.0, 2.0], [1.0, 0.5], [3.0, 4.0]))
    tangents = lambda o: [ad.unpack_dual(v).tangent.tolist()  # noqa: E731
                          if isinstance(v, m.Tensor) and ad.unpack_dual(v).tangent is not None
                          else None for v in (o if isinstance(o, tuple) else (o,))]
    fresh = lambda: ad.make_dual(x.clone(), t.clone())  # noqa: E731

    class Mul(m.autograd.Function):
        @staticmethod
        def forward(ctx, a, b, k):
            ctx.save_for_forward(a, b)
            ctx.save_for_backward(b)
            ctx.k = k
            ctx.forward_sees = ad.unpack_dual(a).tangent
            return a * b * k

        @staticmethod
        def jvp(ctx, at, bt, kt):
            a, b = ctx.saved_tensors
            assert kt is None and ad.unpack_dual(a).tangent is None and ctx.forward_sees is None
            grad_modes.append(m.is_grad_enabled())
            return ctx.k * (b * at + a * bt)

        @staticmethod
        def backward(ctx, g):
            (b,) = ctx.saved_tensors
            return g * b * ctx.k, None, None

    class NoJvp(m.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    with ad.dual_level():
        out["x_dual"] = tangents(Mul.apply(ad.make_dual(x, t), y, 2))
        out["y_dual"] = tangents(Mul.apply(x, ad.make_dual(y, t), 2))
        with m.no_grad():
            out["no_grad"] = tangents(Mul.apply(ad.make_dual(x, t), y, 2))
        leaf = x.clone().requires_grad_()
        o = Mul.apply(ad.make_dual(leaf, t), y, 3)
        out["recorded"] = tangents(o) + [m.autograd.grad(o.sum(), leaf)[0].tolist()]
        out["no_jvp"] = _outcome(lambda: NoJvp.apply(ad.make_dual(x, t)))
        out["no_jvp_no_dual"] = NoJvp.apply(x).tolist()
        for name, (forward, jvp) in FUNCTION_JVPS.items():
            a = fresh()
            o = _outcome(lambda: _function(m, forward, jvp).apply(a))  # noqa: B023
            out[name] = o if isinstance(o, tuple) and isinstance(o[0], str) else (
                tangents(o), ad.unpack_dual(a).tangent.tolist(), o is a)
        out["non_differentiable"] = _outcome(lambda: _function(
            m, lambda a: a * 2, lambda t: t, non_differentiable=True).apply(fresh()))
        a = fresh()
        view = a[:1]
        o = _function(m, lambda a: a.mul_(2), lambda t: t.mul_(2), dirty=True).apply(a)
        out["dirty"] = (o is a, tangents(o), tangents(view), a.tolist())
        out["dirty_not_in_place"] = _outcome(lambda: _function(
            m, lambda a: a.mul_(2), lambda t: t * 2, dirty=True).apply(fresh()))
        base = m.zeros(3, dtype=D)
        o = _function(m, lambda a, b: a.add_(b), lambda t: t.add_(1.0),
                      dirty=True).apply(base[1:], fresh())
        out["dirty_view"] = (tangents(base), tangents(o))
        for materialize in (True, False):
            op = _function(m, lambda a, b: a * b, lambda t: t * 2, materialize=materialize)
            out[f"materialize_{materialize}"] = (tangents(op.apply(fresh(), y)), op.seen)
        op = _function(m, lambda a, i: a * i, lambda t: t * 2)
        out["integer_input"] = (tangents(op.apply(fresh(), m.tensor([1, 2]))), op.seen)
    out["grad_mode_in_jvp"] = grad_modes

    class SaveInt(m.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_forward(a, 3)
            return a

    with ad.dual_level():
        out["save_a_number"] = _outcome(lambda: SaveInt.apply(ad.make_dual(x, t)))
    return out


def test_custom_function_jvp_matches_pytorch():
    got, want = _custom_functions(srcgrad, fw), _custom_functions(torch, fwt)
    assert got.keys() == want.keys()
    for key in want:
        assert str(got[key]) == str(want[key]), key


def test_custom_function_jvp_none_is_a_zero_tangent():
    # PyTorch 2.13 fails an internal assert here; its documentation says None is allowed
    op = _function(srcgrad, lambda a: a * 2, lambda t: None)
    with fw.dual_level():
        out = op.apply(fw.make_dual(srcgrad.ones(2, dtype=srcgrad.float64),
                                    srcgrad.ones(2, dtype=srcgrad.float64)))
        assert fw.unpack_dual(out).tangent is None


# ---------------------------------------------------------------------------------------------
# Arrays (the eager fallback's NumPy-semantics Tensors): their writes in place, their views.

def _array(values):
    a = Array._make(np.array(values, dtype=np.float64))
    a.__class__ = Array
    return a


def _numpy_writes(x, y, steps):
    z = x * 2.0
    if "iadd" in steps:
        z += y * x
    if "imul" in steps:
        z *= y
    if "setitem" in steps:
        z[0] = y[1] * 3.0
    if "view" in steps:
        w = z[1:]
        w *= y[:2]
    if "mul" in steps:
        z = z * x
    return np.sin(z) + z


@pytest.mark.parametrize("steps", [(), ("iadd",), ("imul",), ("setitem",), ("view",), ("mul",),
                                   ("iadd", "imul", "setitem", "view", "mul")])
@pytest.mark.parametrize("dual_array", [True, False])
def test_arrays_written_in_place_carry_their_tangents(steps, dual_array):
    x, t, y = np.array([1.0, 2.0, 3.0]), np.array([1.0, 0.0, 0.5]), np.array([0.5, 0.25, 2.0])
    with fw.dual_level():
        primal = _array(x) if dual_array else srcgrad.tensor(x)   # a Tensor's tangent flows
        dual = fw.make_dual(primal, _array(t) if dual_array else srcgrad.tensor(t))
        assert type(dual) is type(primal)
        start = dual * 1.0 if dual_array else _array(np.zeros(3)) + dual
        assert type(start) is Array
        value, tangent = fw.unpack_dual(_numpy_writes(start, _array(y), steps))
        assert type(tangent) is Tensor          # tangents are plain Tensors, never Arrays
    eps = 1e-6
    numeric = (_numpy_writes(x + eps * t, y.copy(), steps)
               - _numpy_writes(x - eps * t, y.copy(), steps)) / (2 * eps)
    np.testing.assert_allclose(value.detach()._data, _numpy_writes(x, y.copy(), steps),
                               rtol=1e-12)
    np.testing.assert_allclose(tangent.numpy(), numeric, rtol=1e-6, atol=1e-8)


# ---------------------------------------------------------------------------------------------
# Levels and misuse: PyTorch's messages.

def _error(fn):
    with pytest.raises(Exception) as info:
        fn()
    return type(info.value), str(info.value)


def _misuse(m, ad):
    p, t = m.ones(3, dtype=m.float64), m.ones(3, dtype=m.float64)
    out = {"outside": _error(lambda: ad.make_dual(p, t)),
           "exit_outside": _error(ad.exit_dual_level)}
    unpacked = ad.unpack_dual(p)
    out["unpack_outside"] = (unpacked.primal is p, unpacked.tangent)
    with ad.dual_level() as level:
        out["level"] = level
        out["nested"] = _error(ad.enter_dual_level)
        out["shape"] = _error(lambda: ad.make_dual(p, m.ones(2, dtype=m.float64)))
        out["int_primal"] = _error(lambda: ad.make_dual(m.zeros(3, dtype=m.int64), t))
        out["int_tangent"] = _error(lambda: ad.make_dual(p, m.zeros(3, dtype=m.int64)))
        out["other_level"] = _error(lambda: ad.make_dual(p, t, level=1))
        x = ad.make_dual(p, t)
        out["twice"] = _error(lambda: ad.make_dual(x, t))
        out["exit_other"] = _error(lambda: ad.exit_dual_level(level=1))
        out["tangent_is_given"] = ad.unpack_dual(x).tangent is t
        out["plain"] = ad.unpack_dual(p).tangent
        out["fields"] = ad.unpack_dual(x)._fields
    out["after_exit"] = ad.unpack_dual(x).tangent
    with ad.dual_level():
        out["reentered"] = ad.unpack_dual(x).tangent
    return out


def test_levels_and_misuse_match_pytorch():
    got, want = _misuse(srcgrad, fw), _misuse(torch, fwt)
    for key in want:
        assert str(got[key]).replace("srcgrad", "torch") == str(want[key]), key


# ---------------------------------------------------------------------------------------------
# Differentiating tangents: reverse over forward, forward over reverse.

def _reverse_over_forward(m, ad, x, t):
    xs, ts = m.tensor(x, requires_grad=True), m.tensor(t, requires_grad=True)
    with ad.dual_level():
        y = (ad.make_dual(xs, ts).sin() * xs.exp()).sum()
        tangent = ad.unpack_dual(y).tangent
    gx, gt = m.autograd.grad(tangent, (xs, ts))
    return tangent.item(), gx.numpy(), gt.numpy()


def _forward_over_reverse(m, ad, x, t):
    with ad.dual_level():
        xs = ad.make_dual(m.tensor(x, requires_grad=True), m.tensor(t))
        y = (xs.sin() * xs * xs.sum()).sum()
        (g,) = m.autograd.grad(y, xs, create_graph=True)
        return g.detach().numpy(), ad.unpack_dual(g).tangent.detach().numpy()


@pytest.mark.parametrize("mode", [_reverse_over_forward, _forward_over_reverse])
def test_second_order_matches_pytorch(mode):
    x, t = RNG.standard_normal(4), RNG.standard_normal(4)
    for got, want in zip(mode(srcgrad, fw, x, t), mode(torch, fwt, x, t)):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)


def test_a_primitive_without_a_forward_rule_is_refused():
    def squash(a):
        return a / (1.0 + np.abs(a))

    prim = srcgrad.defvjp(squash, lambda g, ans, a: g / (1.0 + np.abs(a)) ** 2)
    x = srcgrad.tensor([0.5, -1.0])
    with fw.dual_level(), pytest.raises(NotImplementedError, match="no forward-mode"):
        prim(fw.make_dual(x, srcgrad.ones(2, dtype=srcgrad.float64)))
    assert tensor_module._forward_hook is None


# ---------------------------------------------------------------------------------------------
# functional.jvp.

def _writes_in_place(m):
    def f(a, b):
        c = a * 1.0
        c.mul_(b)
        c[0] = b[1] * 3.0
        return c.sin_()
    return f


JVP_CASES = {
    "one": (lambda m: lambda x: (x ** 2 * x.sum()).sin(), [(3,)]),
    "tuple_in": (lambda m: lambda a, b: (a @ b).tanh(), [(2, 3), (3, 4)]),
    "tuple_out": (lambda m: lambda a, b: (a * b.exp(), a.sum() + b), [(3,), (3,)]),
    "softmax": (lambda m: lambda x: x.softmax(1) * x, [(2, 5)]),
    "in_place": (_writes_in_place, [(3,), (3,)]),
    "independent_output": (lambda m: lambda a, b: (a.exp(), m.ones(2, dtype=m.float64)),
                           [(2,), (2,)]),
}


def _jvp(m, case, create_graph):
    make, shapes = JVP_CASES[case]
    rng = np.random.default_rng(1)
    xs = tuple(m.tensor(rng.standard_normal(s), requires_grad=create_graph) for s in shapes)
    vs = tuple(m.tensor(rng.standard_normal(s)) for s in shapes)
    single = len(xs) == 1
    out, tangent = m.autograd.functional.jvp(make(m), xs[0] if single else xs,
                                             vs[0] if single else vs,
                                             create_graph=create_graph)
    outs, tangents = (out, tangent) if isinstance(out, tuple) else ((out,), (tangent,))
    result = [o.detach().numpy() for o in outs] + [t.detach().numpy() for t in tangents]
    if create_graph:
        total = sum((t * t).sum() for t in tangents if t.requires_grad)
        grads = m.autograd.grad(total, xs, allow_unused=True)
        result += [np.zeros(x.shape) if g is None else g.numpy() for g, x in zip(grads, xs)]
    else:
        assert all(not o.requires_grad for o in (*outs, *tangents))
    return result


@pytest.mark.parametrize("case", JVP_CASES)
@pytest.mark.parametrize("create_graph", [False, True])
def test_functional_jvp_matches_pytorch(case, create_graph):
    got, want = _jvp(srcgrad, case, create_graph), _jvp(torch, case, create_graph)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-10)


def test_functional_jvp_does_not_write_the_callers_tensors():
    x, v = srcgrad.tensor([1.0, 2.0]), srcgrad.tensor([0.5, 0.5])
    seen = []

    def f(a):
        seen.append(fw.unpack_dual(a).tangent.numpy().copy())    # forward mode: a is dual
        b = a * 1.0
        b.mul_(3)
        return b

    _, tangent = srcgrad.autograd.functional.jvp(f, x, v)
    np.testing.assert_allclose(seen[0], [0.5, 0.5])
    np.testing.assert_allclose(tangent.numpy(), [1.5, 1.5])
    np.testing.assert_allclose(v.numpy(), [0.5, 0.5])
    assert tensor_module._forward_hook is None


def _jvp_misuse(m):
    jvp = m.autograd.functional.jvp
    x = m.ones(3, dtype=m.float64)
    return {"v_none": _error(lambda: jvp(lambda a: a.sin(), x)),
            "v_size": _error(lambda: jvp(lambda a: a.sin(), x, m.ones(2, dtype=m.float64))),
            "v_length": _error(lambda: jvp(lambda a, b: a * b, (x, x), (x,))),
            "not_tensor": _error(lambda: jvp(lambda a: 3, x, x)),
            "strict": _error(lambda: jvp(lambda a: x * 2, x, x, strict=True)),
            "input": _error(lambda: jvp(lambda a: a, 3.0, x)),
            "input_in_tuple": _error(lambda: jvp(lambda a, b: a, (x, 2), (x, x))),
            "v_none_one_element": jvp(lambda a: a.exp(), m.zeros(1, dtype=m.float64))[1].tolist()}


def test_functional_jvp_misuse_matches_pytorch():
    got, want = _jvp_misuse(srcgrad), _jvp_misuse(torch)
    for key in want:
        assert str(got[key]).replace("srcgrad", "torch") == str(want[key]), key


def _compiled_body(x, w):
    return np.sum(np.tanh(x * w)) + np.sum(x * x)


def test_a_compiled_function_passes_tangents_on_as_the_eager_run_does():
    compiled = srcgrad.compile(_compiled_body)
    x = srcgrad.tensor([0.1, 0.2, 0.3], dtype=srcgrad.float64)
    w = srcgrad.tensor([1.0, -2.0, 0.5], dtype=srcgrad.float64)
    v = srcgrad.tensor([1.0, 0.5, -1.0], dtype=srcgrad.float64)
    with fw.dual_level():
        got = fw.unpack_dual(compiled(fw.make_dual(x, v), w)).tangent
        want = fw.unpack_dual(_compiled_body(fw.make_dual(x, v), w)).tangent
    assert got is not None
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)
