"""Every differentiable primitive of the rule table, checked three ways (float64):
the eager engine's gradient against central finite differences and against PyTorch, and the
second derivative (the rules run on Tensors under ``create_graph``) against differences of
the first.  The list family (one input: a list of arrays) is compiler-only: its rules are
checked on arrays against differences and PyTorch here, and compiled in test_compiler_rules.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import needs_torch, numerical_grad
from rule_samples import NO_SECOND_ORDER, SAMPLES, torch_equivalents

import srcgrad
from srcgrad.runtime.rules.lists import PRINTED_AS
from srcgrad.runtime.rules.primitives import PRIMITIVES

LISTS = sorted(p.name for p in PRINTED_AS)
DIFFERENTIABLE = sorted(name for name, p in PRIMITIVES.items() if p.differentiable
                        and name not in LISTS)
TORCH = torch_equivalents()


def test_every_differentiable_primitive_has_a_sample():
    missing = [name for name in DIFFERENTIABLE + LISTS if name not in SAMPLES]
    assert not missing, f"add a sample to tests/support/rule_samples.py for {missing}"


def test_the_table_is_large():
    assert len(DIFFERENTIABLE) >= 80


def _diff_positions(inputs):
    return [k for k, a in enumerate(inputs) if isinstance(a, np.ndarray) and a.dtype == np.float64]


def _cotangent(prim, inputs, params):
    out = np.asarray(prim.fn(*inputs, **params))
    return np.random.default_rng(7).standard_normal(out.shape)


def _eager_grads(prim, inputs, params, v):
    tensors = [srcgrad.tensor(a, dtype=srcgrad.float64, requires_grad=True)
               if k in _diff_positions(inputs) else a for k, a in enumerate(inputs)]
    out = prim(*tensors, **params)
    (out * srcgrad.tensor(v, dtype=srcgrad.float64)).sum().backward()
    return [tensors[k].grad.numpy() for k in _diff_positions(inputs)]


@pytest.mark.parametrize("name", DIFFERENTIABLE)
def test_gradient_matches_finite_differences(name):
    prim = PRIMITIVES[name]
    inputs, params = SAMPLES[name]
    inputs = [np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in inputs]
    v = _cotangent(prim, inputs, params)
    grads = _eager_grads(prim, inputs, params, v)

    def f(*xs):
        return float(np.sum(np.asarray(prim.fn(*xs, **params)) * v))
    for g, k in zip(grads, _diff_positions(inputs)):
        expected = numerical_grad(f, inputs, k)
        assert g.shape == inputs[k].shape and g.dtype == np.float64
        np.testing.assert_allclose(g, expected, rtol=1e-5, atol=1e-7,
                                   err_msg=f"{name}: input {k}")


@pytest.mark.parametrize("name", DIFFERENTIABLE)
def test_second_derivative_through_the_rules(name):
    if name in NO_SECOND_ORDER:
        pytest.skip(NO_SECOND_ORDER[name])
    prim = PRIMITIVES[name]
    inputs, params = SAMPLES[name]
    inputs = [np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in inputs]
    diff = _diff_positions(inputs)
    v = _cotangent(prim, inputs, params)
    ws = [np.random.default_rng(11 + k).standard_normal(inputs[k].shape) for k in diff]

    def first(*xs):  # <first derivative, w>, computed by the plain (array) backward
        grads = _eager_grads(prim, list(xs), params, v)
        return float(sum(np.sum(g * w) for g, w in zip(grads, ws)))

    tensors = [srcgrad.tensor(a, dtype=srcgrad.float64, requires_grad=True) if k in diff else a
               for k, a in enumerate(inputs)]
    out = (prim(*tensors, **params) * srcgrad.tensor(v)).sum()
    grads = srcgrad.autograd.grad(out, [tensors[k] for k in diff], create_graph=True)
    total = sum((g * srcgrad.tensor(w)).sum() for g, w in zip(grads, ws))
    if not total.requires_grad:      # a linear primitive: the second derivative is zero
        second = [np.zeros_like(inputs[k]) for k in diff]
    else:
        second = srcgrad.autograd.grad(total, [tensors[k] for k in diff], allow_unused=True,
                                       materialize_grads=True)
        second = [s.numpy() for s in second]
    for s, k in zip(second, diff):
        np.testing.assert_allclose(s, numerical_grad(first, inputs, k, eps=1e-5), rtol=1e-4,
                                   atol=1e-6, err_msg=f"{name}: input {k}")


@needs_torch
@pytest.mark.parametrize("name", sorted(set(DIFFERENTIABLE) & set(TORCH)))
def test_value_and_gradient_match_pytorch(name):
    import torch
    prim = PRIMITIVES[name]
    inputs, params = SAMPLES[name]
    diff = _diff_positions(inputs)
    v = _cotangent(prim, inputs, params)
    grads = _eager_grads(prim, inputs, params, v)
    targs = [torch.tensor(a, requires_grad=k in diff) if isinstance(a, np.ndarray) else a
             for k, a in enumerate(inputs)]
    tout = TORCH[name](*targs, **params)
    np.testing.assert_allclose(tout.detach().numpy(), prim.fn(*inputs, **params), rtol=1e-10,
                               atol=1e-12)
    (tout * torch.tensor(v)).sum().backward()
    for g, k in zip(grads, diff):
        np.testing.assert_allclose(g, targs[k].grad.numpy(), rtol=1e-9, atol=1e-12,
                                   err_msg=f"{name}: input {k}")


def _list_case(name):
    prim = PRIMITIVES[name]
    (items,), params = SAMPLES[name]
    items = [np.array(a, copy=True) for a in items]
    v = np.random.default_rng(5).standard_normal(np.shape(prim.fn(items, **params)))
    grads = prim.vjp(0)(v, prim.fn(items, **params), items, **params)
    return prim, items, params, v, grads


@pytest.mark.parametrize("name", LISTS)
def test_list_rule_matches_finite_differences(name):
    prim, items, params, v, grads = _list_case(name)
    assert isinstance(grads, list) and len(grads) == len(items)
    for k, g in enumerate(grads):
        def f(x, k=k):
            return float(np.sum(prim.fn(items[:k] + [x] + items[k + 1:], **params) * v))
        np.testing.assert_allclose(g, numerical_grad(f, [items[k]], 0), rtol=1e-6,
                                   atol=1e-8, err_msg=f"{name}: element {k}")


@needs_torch
@pytest.mark.parametrize("name", LISTS)
def test_list_rule_matches_pytorch(name):
    import torch
    prim, items, params, v, grads = _list_case(name)
    leaves = [torch.tensor(a, requires_grad=True) for a in items]
    out = TORCH[name](leaves, **params)
    np.testing.assert_allclose(out.detach().numpy(), prim.fn(items, **params), rtol=1e-12)
    (out * torch.tensor(v)).sum().backward()
    for g, leaf in zip(grads, leaves):
        np.testing.assert_allclose(g, leaf.grad.numpy(), rtol=1e-10, atol=1e-12)
