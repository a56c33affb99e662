"""Forward-mode (JVP) rules of every primitive of the rule table (float64 samples of
rule_samples.py): ``prim.jvp`` against the primitive's own vjp rules (the dot-product test
``<jvp(t), g> == <t, vjp(g)>``) and against central differences of the primitive along ``t``,
with one tangent at a time (the others None) and with all at once; a few rules of each kind
are also run on the compiler's symbolic values, which print them as source.
"""

from __future__ import annotations

import ast
import itertools

import numpy as np
import pytest
from rule_samples import SAMPLES

import srcgrad
from srcgrad.codegen.emit.symbolic import Sym, SymbolicError, Tracer, helper_sources
from srcgrad.runtime.rules.forward_rules import forward_kind
from srcgrad.runtime.rules.primitives import PRIMITIVES, Primitive, unbroadcast

ALL = sorted(PRIMITIVES)
DIFFERENTIABLE = [name for name in ALL if PRIMITIVES[name].differentiable]
NOT_DIFFERENTIABLE = [name for name in ALL if not PRIMITIVES[name].differentiable]

"""rule_samples.py's samples, and one for a primitive added since (forward-mode code's)."""

NO_FORWARD_RULE: dict[str, str] = {}
"""Primitives with vjp rules but refused in forward mode (→ why).  None so far: a primitive
added here must also fail clearly when its ``jvp`` is called."""


def _is_list(a):
    return isinstance(a, list)


def _differentiable(prim, inputs):
    """Positions of the inputs a tangent is given for: float64 arrays (or a list of them)
    with a vjp rule."""
    out = []
    for k, a in enumerate(inputs):
        floats = (all(isinstance(e, np.ndarray) and e.dtype == np.float64 for e in a)
                  if _is_list(a) else isinstance(a, np.ndarray) and a.dtype == np.float64)
        if floats and prim.vjp(k) is not None:
            out.append(k)
    return out


def _random_like(a, rng):
    if _is_list(a):
        return [rng.standard_normal(np.shape(e)) for e in a]
    return rng.standard_normal(np.shape(a))


def _inner(u, v):
    """``<u, v>`` of arrays (broadcast) or of lists of them."""
    if _is_list(u):
        return sum(_inner(a, b) for a, b in zip(u, v))
    return float(np.sum(np.asarray(u, dtype=np.float64) * v))


def _case(name, seed=0):
    prim = PRIMITIVES[name]
    inputs, params = SAMPLES[name]
    inputs = [[e.copy() for e in a] if _is_list(a) else
              a.copy() if isinstance(a, np.ndarray) else a for a in inputs]
    ans = prim.fn(*inputs, **params)
    rng = np.random.default_rng(seed)
    tangents = {k: _random_like(inputs[k], rng) for k in _differentiable(prim, inputs)}
    return prim, inputs, params, ans, tangents


def _jvp(prim, inputs, params, ans, given):
    """``prim.jvp`` with the tangents in ``given`` (position → tangent), None elsewhere,
    broadcast to the result's shape."""
    out = prim.jvp([given.get(k) for k in range(len(inputs))], ans, *inputs, **params)
    assert out is not None, f"{prim.name}: a zero tangent for a nonzero input tangent"
    return np.broadcast_to(out, np.shape(ans))


def _vjp(prim, inputs, params, ans, k, g):
    """The vjp for input ``k``, with broadcasting undone as the engine does it centrally."""
    grad = prim.vjp(k)(g, ans, *inputs, **params)
    if _is_list(inputs[k]):
        return [unbroadcast(np.asarray(d, dtype=np.float64), np.shape(x))
                for d, x in zip(grad, inputs[k])]
    return unbroadcast(np.asarray(grad, dtype=np.float64), np.shape(inputs[k]))


def _subsets(tangents):
    """One tangent at a time, then all of them at once."""
    singles = [{k: t} for k, t in tangents.items()]
    return singles + ([dict(tangents)] if len(tangents) > 1 else [])


@pytest.mark.parametrize("name", ALL)
def test_every_primitive_has_a_forward_rule(name):
    prim = PRIMITIVES[name]
    if not prim.differentiable or name in NO_FORWARD_RULE:
        return
    assert forward_kind(prim) is not None, f"{name}: vjp rules but no forward rule"


@pytest.mark.parametrize("name", NOT_DIFFERENTIABLE)
def test_no_vjp_means_no_tangent(name):
    prim = PRIMITIVES[name]
    n = prim.nin or 2
    xs = [np.linspace(0.1, 0.9, 4)] * n
    assert prim.jvp([np.ones(4)] * n, None, *xs) is None


@pytest.mark.parametrize("name", DIFFERENTIABLE)
def test_jvp_is_the_transpose_of_the_vjp(name):
    if name in NO_FORWARD_RULE:
        pytest.skip(NO_FORWARD_RULE[name])
    prim, inputs, params, ans, tangents = _case(name)
    assert tangents, f"{name}: the sample has no differentiable input"
    g = np.random.default_rng(1).standard_normal(np.shape(ans))
    for given in _subsets(tangents):
        forward = _inner(_jvp(prim, inputs, params, ans, given), g)
        backward = sum(_inner(t, _vjp(prim, inputs, params, ans, k, g))
                       for k, t in given.items())
        assert forward == pytest.approx(backward, rel=1e-8, abs=1e-10), \
            f"{name}: tangents of inputs {sorted(given)}"


def _moved(inputs, given, eps):
    out = list(inputs)
    for k, t in given.items():
        if _is_list(t):
            out[k] = [x + eps * d for x, d in zip(inputs[k], t)]
        else:
            out[k] = np.where(np.isfinite(inputs[k]), inputs[k] + eps * t, inputs[k])
    return out


@pytest.mark.parametrize("name", DIFFERENTIABLE)
def test_jvp_matches_finite_differences(name):
    if name in NO_FORWARD_RULE:
        pytest.skip(NO_FORWARD_RULE[name])
    prim, inputs, params, ans, tangents = _case(name, seed=2)
    eps = 1e-6
    kind = np.result_type(np.asarray(ans), np.float64)            # complex: np.fft's
    for given in _subsets(tangents):
        plus = np.asarray(prim.fn(*_moved(inputs, given, eps), **params), dtype=kind)
        minus = np.asarray(prim.fn(*_moved(inputs, given, -eps), **params), dtype=kind)
        expected = (plus - minus) / (2 * eps)
        np.testing.assert_allclose(_jvp(prim, inputs, params, ans, given), expected,
                                   rtol=1e-5, atol=1e-7,
                                   err_msg=f"{name}: tangents of inputs {sorted(given)}")


def test_a_primitive_without_a_forward_rule_is_refused_by_name():
    prim = Primitive("my_function", lambda x: x ** 3)
    prim.vjps = (lambda g, ans, x: 3 * g * x * x,)
    with pytest.raises(NotImplementedError, match="my_function"):
        prim.jvp([np.ones(2)], None, np.ones(2))
    assert prim.jvp([None], None, np.ones(2)) is None          # a zero tangent needs none


def test_a_refused_input_is_refused_in_forward_mode_too():
    """The order of a Bessel function has no derivative: its tangent is refused, as its
    cotangent is, never silently zero."""
    prim = PRIMITIVES["jv"]
    v, x = np.array([0.5, 1.5]), np.array([1.0, 2.0])
    with pytest.raises(TypeError, match="order"):
        prim.jvp([np.ones(2), None], prim.fn(v, x), v, x)
    assert prim.jvp([None, np.ones(2)], prim.fn(v, x), v, x) is not None


def _tensor(a):
    if _is_list(a):
        return [_tensor(e) for e in a]
    if isinstance(a, np.ndarray) and a.dtype.kind == "f":
        return srcgrad.tensor(a)
    return a


@pytest.mark.parametrize("name", DIFFERENTIABLE)
def test_rules_run_on_tensors(name):
    """The eager forward mode calls the rules on Tensors: the same tangent as on arrays."""
    if PRIMITIVES[name].eager_only:
        pytest.skip("complex values, which Tensors do not hold (see test_program_rules.py)")
    prim, inputs, params, ans, tangents = _case(name, seed=3)
    out = prim.jvp([_tensor(tangents.get(k)) for k in range(len(inputs))],
                   _tensor(np.asarray(ans)) if isinstance(ans, np.ndarray) else ans,
                   *[_tensor(a) for a in inputs], **params)
    value = out.numpy() if isinstance(out, srcgrad.Tensor) else np.asarray(out)
    np.testing.assert_allclose(np.broadcast_to(value, np.shape(ans)),
                               _jvp(prim, inputs, params, ans, tangents), rtol=1e-10,
                               atol=1e-12)


# ---------------------------------------------------------------------------------------------
# The same rules on the compiler's symbolic values.

SYMBOLIC = ["exp", "multiply", "maximum", "clip", "where", "reshape", "getitem", "concatenate",
            "sum", "matmul", "einsum", "tensordot", "max", "softmax", "cumprod", "sort",
            "inv", "solve", "det", "cholesky", "eigh_vectors", "svd_u", "qr_r", "norm",
            "mse_loss", "stack_list"]
SYMBOLIC_PARAMS = {"getitem": {"index": (1, slice(None, 2))}}
"""Parameters the compiler would hold in a variable (an index array), given as constants."""


@pytest.mark.parametrize("name", SYMBOLIC)
def test_rules_print_as_source_on_symbolic_values(name):
    """The rule on symbolic values prints statements that, run with the helpers they call,
    give the tangent the rule gives on arrays."""
    prim = PRIMITIVES[name]
    inputs, params = SAMPLES[name]
    params = SYMBOLIC_PARAMS.get(name, params)
    diff = _differentiable(prim, inputs)
    counter = itertools.count()
    tracer = Tracer(lambda hint: f"{hint}_{next(counter)}")
    xs = [tracer.sym(f"x{k}") if isinstance(a, np.ndarray) or _is_list(a) else a
          for k, a in enumerate(inputs)]
    tangents = [tracer.sym(f"t{k}") if k in diff else None for k in range(len(inputs))]
    try:
        out = prim.jvp(tangents, tracer.sym("ans"), *xs, **params)
    except SymbolicError as exc:         # pragma: no cover - the failure message is the point
        pytest.fail(f"{name}: the forward rule does Python logic on a symbolic value: {exc}")
    assert isinstance(out, Sym)
    source = "\n".join([*helper_sources(tracer.helpers), *map(ast.unparse, tracer.stmts),
                        f"result = {ast.unparse(out.node)}"])
    ans = prim.fn(*inputs, **params)
    rng = np.random.default_rng(4)
    given = {k: _random_like(inputs[k], rng) for k in diff}
    namespace = {"np": np, "ans": ans, **{f"x{k}": a for k, a in enumerate(inputs)},
                 **{f"t{k}": t for k, t in given.items()}}
    exec(compile(source, f"<jvp of {name}>", "exec"), namespace)
    np.testing.assert_allclose(np.broadcast_to(namespace["result"], np.shape(ans)),
                               _jvp(prim, inputs, params, ans, given), rtol=1e-12, atol=1e-12,
                               err_msg=source)
