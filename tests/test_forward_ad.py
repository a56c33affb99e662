"""Forward-mode AD in the eager engine (``srcgrad.autograd.forward_ad``) and the eager
``autograd.functional.jvp`` built on it, against PyTorch's ``torch.autograd.forward_ad``."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import needs_torch

import srcgrad
import srcgrad.autograd.forward_ad as fw
from srcgrad.runtime import tensor as tensor_module
from srcgrad.runtime.tensor import Tensor

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


def test_in_place_methods_are_wrapped_only_inside_a_level():
    add_, setitem = Tensor.add_, Tensor.__setitem__
    assert tensor_module._forward_hook is None
    with fw.dual_level():
        assert Tensor.add_ is not add_ and tensor_module._forward_hook is not None
    assert Tensor.add_ is add_ and Tensor.__setitem__ is setitem
    assert tensor_module._forward_hook is None
    with pytest.raises(ZeroDivisionError), fw.dual_level():
        raise ZeroDivisionError
    assert Tensor.add_ is add_ and tensor_module._forward_hook is None


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
