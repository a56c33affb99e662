"""Every primitive of the rule table, compiled: compiled gradient == eager gradient ==
central finite differences (float64).  The compiled adjoint calls the very rules the eager
engine calls, on symbolic values, so this checks the printing of every rule too.
"""

from __future__ import annotations

import numpy as np
import pytest
from compiled_helpers import define
from conftest import numerical_grad
from rule_samples import SAMPLES

import srcgrad
from srcgrad.runtime.rules.primitives import PRIMITIVES

DIFFERENTIABLE = sorted(name for name, p in PRIMITIVES.items() if p.differentiable)


def _compiled_function(name):
    prim = PRIMITIVES[name]
    inputs, params = SAMPLES[name]
    diff = [k for k, a in enumerate(inputs) if isinstance(a, np.ndarray)
            and a.dtype == np.float64]
    out = np.asarray(prim.fn(*inputs, **params))    # for the list family, of one list
    cot = np.random.default_rng(3).standard_normal(out.shape)
    namespace = {"np": np, "PRIM": prim, "COT": cot}
    call_args = []
    for k, a in enumerate(inputs):
        if k in diff:
            call_args.append(f"x{k}")
        else:
            namespace[f"C{k}"] = a
            call_args.append(f"C{k}")
    for key, value in params.items():
        namespace[f"P_{key}"] = value
        call_args.append(f"{key}=P_{key}")
    if isinstance(inputs[0], list):          # the list family: a list built in a loop
        inputs = inputs[0]
        diff = list(range(len(inputs)))
        names = ", ".join(f"x{k}" for k in diff)
        keywords = "".join(f", {key}=P_{key}" for key in params)
        fn = define(f"""
            def f({names}):
                items = []
                for x in ({names},):
                    items.append(x * 1.0)
                return np.sum(PRIM(items{keywords}) * COT)
            """, namespace)
        return fn, diff, inputs
    params_list = ", ".join(f"x{k}" for k in diff)
    fn = define(f"""
        def f({params_list}):
            return np.sum(PRIM({", ".join(call_args)}) * COT)
        """, namespace)
    return fn, diff, inputs


@pytest.mark.parametrize("name", DIFFERENTIABLE)
def test_compiled_gradient_matches_eager_and_finite_differences(name):
    if PRIMITIVES[name].eager_only:      # refused by the compiler: test_program_rules.py
        pytest.skip(PRIMITIVES[name].eager_only)
    fn, diff, inputs = _compiled_function(name)
    args = [np.array(inputs[k], copy=True) for k in diff]
    compiled = srcgrad.grad(fn, wrt=tuple(range(len(diff))), strict=True)
    got = compiled(*args)
    from srcgrad.transforms.fallback import eager_transform
    eager = eager_transform(fn, "grad", args, tuple(range(len(diff))), False)
    for k, (g, e) in enumerate(zip(got, eager)):
        assert g.shape == args[k].shape and g.dtype == args[k].dtype
        np.testing.assert_allclose(g, e, rtol=1e-9, atol=1e-12, err_msg=f"{name}: eager")
        fd = numerical_grad(lambda *xs: float(fn(*xs)), args, k)
        np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-7, err_msg=f"{name}: fd")
    assert compiled.fallback_reason is None
