"""Forward mode and second order of dead branches, loops left early and conversions.

Each function below is checked against HIPS autograd (the same source run on
``autograd.numpy``): ``jvp`` and ``hessian`` under ``strict=True`` and ``strict=False`` (which
must compile too: no FallbackWarning), and the Hessian-vector product ``jvp(grad(f))``, at
points where the branches and exits go each way.

The classes: a branch whose assignments are all dead, or a ``pass`` (its jvp returns no
outputs); a loop left early by ``return`` or ``break`` (its exit flag, and the counters and
flags the tangent code carries, are integers whose gradient is None); ``astype`` of a float
result and the ``.sum()`` of an accumulator no input reaches (second order refused both).
"""

from __future__ import annotations

import ast
import importlib.util
import sys
import warnings

import autograd
import numpy as np
import pytest

import srcgrad
from srcgrad.errors import FallbackWarning

SOURCE = '''
def helper(k, x):
    return np.sin(x) + k


def dead_then_pass_else(x):
    y = np.sin(x)
    if np.sum(x) > 0.5:
        z = np.cos(x)
    else:
        pass
    return np.sum(y * x)


def pass_then_dead_else(x):
    y = np.tanh(x)
    if np.sum(x) > 0.5:
        pass
    else:
        z = np.cos(x) * 2.0
        w = z + x
    return np.sum(y * y * x)


def both_arms_dead(x):
    if np.sum(x) > 0.5:
        z = np.exp(x)
    else:
        w = x * 3.0
    return np.sum(np.sin(x) * x)


def only_pass(x):
    if np.sum(x) > 0.5:
        pass
    return np.sum(np.cos(x) * x)


def dead_branch_in_a_loop(x):
    for i in range(3):
        x = np.sin(x) * 1.2
        if np.sum(x) > 0.5:
            z = np.cos(x)
        else:
            pass
    return np.sum(x * x)


def dead_branch_in_a_branch(x):
    if np.sum(x) > 1.5:
        y = x * 2.0
        if np.sum(y) > 100.0:
            z = y * y
    else:
        y = np.sin(x)
    return np.sum(y * x)


def return_in_for(x):
    for i in range(4):
        x = np.sin(x) * 1.5
        if np.sum(x) > 2.0:
            return np.sum(x * x)
    return np.sum(x)


def break_in_while(x):
    k = 0
    while k < 5:
        x = x * 1.2 + np.sin(x)
        if np.sum(x) > 3.0:
            break
        k = k + 1
    return np.sum(x * x)


def return_in_while(x):
    k = 0
    while k < 5:
        x = np.cos(x) + x
        if np.sum(x) > 3.0:
            return np.sum(x ** 3)
        k = k + 1
    return np.sum(x)


def break_in_for(x):
    for i in range(4):
        if np.sum(x) > 2.5:
            break
        x = x * 1.3 + np.sin(x) * 0.5
    return np.sum(np.sin(x) * x)


def return_and_break(x):
    for i in range(4):
        if np.sum(x) > 4.0:
            return np.sum(x * x * x)
        x = np.tanh(x) + x
        if np.sum(x) < -5.0:
            break
    return np.sum(x * x)


def int_counter_scaled(x):
    k = 1
    for i in range(3):
        x = np.sin(x) * k
        if np.sum(x) > 0:
            k = k + 1
        k = k * 2
    return np.sum(x)


def int_total_read_by_a_loop(x):
    k = 1
    for j in range(2):
        x = np.sin(x)
        if np.sum(x) > 0:
            k = k + 1
    for i in range(3):
        x = np.sin(x) * k
    return np.sum(x * x)


def flag_through_a_helper(x):
    done = False
    for i in range(3):
        x = helper(done, x)
        if np.sum(x) > 1.0:
            done = True
        x = helper(done, x)
    return np.sum(x * x)


def astype_float(x):
    return np.sum(np.sin(x).astype(np.float64) * x)


def sum_of_a_constant_scalar(x):
    acc = np.float64(0.0)
    for i in range(3):
        acc = acc + 1.0
    return np.sum(np.sin(x)) * acc.sum()


def sum_of_constants_written(x):
    acc = np.zeros(3)
    for i in range(3):
        acc[i] = i * 2.0
    return np.sum(np.sin(x)) * acc.sum()


def sum_of_a_constant_array(x):
    acc = np.zeros(3)
    for i in range(3):
        acc = acc + 1.5
    return np.sum(np.sin(x) * acc.sum())
'''

NAMES = [line[4:line.index("(")] for line in SOURCE.splitlines()
         if line.startswith("def ") and not line.startswith("def helper")]
POINTS = [np.array([0.3, 0.5, -0.1]), np.array([1.1, 0.9, 0.75]), np.array([-1.5, -1.2, -0.9])]
"""The loops leave late at the first point, at once at the second, never (or by the other
exit) at the third; the dead branches' tests hold at the first two only."""
TANGENT = np.array([0.7, -1.3, 0.4])


def _module(folder, numpy: str, tag: str):
    path = folder / f"second_order_{tag}.py"
    path.write_text(f"import {numpy} as np\n{SOURCE}")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def modules(tmp_path_factory):
    folder = tmp_path_factory.mktemp("second_order")
    return _module(folder, "numpy", "np"), _module(folder, "autograd.numpy", "ag")


LENIENT = ("dead_then_pass_else", "only_pass", "return_in_for", "break_in_while",
           "flag_through_a_helper", "astype_float", "sum_of_a_constant_array")
"""One of each class is checked with strict=False too (the same code: it must not fall back)."""


@pytest.mark.parametrize("name, strict", [(n, True) for n in NAMES] +
                         [(n, False) for n in LENIENT])
def test_jvp_hessian_and_hvp_match_autograd(name, strict, modules):
    f, reference = getattr(modules[0], name), getattr(modules[1], name)
    jvp = srcgrad.jvp(f, strict=strict)
    hessian = srcgrad.hessian(f, strict=strict)
    hvp = srcgrad.jvp(srcgrad.grad(f, strict=True), strict=True) if strict else None
    with warnings.catch_warnings():
        warnings.simplefilter("error", FallbackWarning)     # compiled, not the eager engine
        for x in POINTS:
            want_h = autograd.hessian(reference)(x)
            want_g = autograd.grad(reference)(x)
            value, tangent = jvp((x.copy(),), (TANGENT,))
            np.testing.assert_allclose(value, f(x.copy()), rtol=1e-12)
            np.testing.assert_allclose(tangent, want_g @ TANGENT, rtol=1e-9, atol=1e-12)
            np.testing.assert_allclose(hessian(x.copy()), want_h, rtol=1e-9, atol=1e-12)
            if hvp is not None:                      # (the same code as with strict=False)
                gradient, along = hvp((x.copy(),), (TANGENT,))
                np.testing.assert_allclose(gradient, want_g, rtol=1e-9, atol=1e-12)
                np.testing.assert_allclose(along, want_h @ TANGENT, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("strict", [True, False])
@pytest.mark.parametrize("name", ["return_in_for", "return_in_while", "dead_then_pass_else",
                                  "sum_of_a_constant_array"])
def test_grad_of_grad_matches_autograd(name, strict, modules):
    f, reference = getattr(modules[0], name), getattr(modules[1], name)
    weights = np.array([1.0, -2.0, 0.5])
    inner = srcgrad.grad(f, strict=strict)
    outer = srcgrad.grad(lambda x: np.sum(inner(x) * weights), strict=strict)
    with warnings.catch_warnings():
        warnings.simplefilter("error", FallbackWarning)
        for x in POINTS:
            np.testing.assert_allclose(outer(x.copy()), autograd.hessian(reference)(x) @ weights,
                                       rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", ["int_counter_scaled", "int_total_read_by_a_loop",
                                  "flag_through_a_helper", "return_in_for"])
def test_first_order_of_integers_carried_by_loops(name, modules):
    """The root of the second-order failures, in first order: an int counter or a bool
    flag that an active loop carries (its gradient None, added to or scaled)."""
    f, reference = getattr(modules[0], name), getattr(modules[1], name)
    for x in POINTS:
        np.testing.assert_allclose(srcgrad.grad(f, strict=True)(x.copy()),
                                   autograd.grad(reference)(x), rtol=1e-10, atol=1e-12)


def test_the_jvp_of_a_dead_branch_runs_its_block_alone(modules):
    """Its blocks return no outputs: each arm calls its block's jvp as a statement of its
    own (nothing unpacked from it)."""
    tree = ast.parse(srcgrad.jvp(modules[0].dead_then_pass_else).source)
    main = next(node for node in tree.body if isinstance(node, ast.FunctionDef)
                and node.name == "dead_then_pass_else_jvp")
    branch = next(node for node in ast.walk(main) if isinstance(node, ast.If))
    for arm in (branch.body, branch.orelse):
        assert len(arm) == 1 and isinstance(arm[0], ast.Expr) and isinstance(arm[0].value,
                                                                             ast.Call)


def test_a_hessian_that_cannot_compile_falls_back_to_the_eager_engine(modules, monkeypatch):
    """strict=False: a refused (or failing) compiled Hessian gives the eager engine's Hessian
    of the function itself, with a FallbackWarning; strict=True raises the CompileError."""
    from srcgrad.transforms import jacobians

    def refused(*args, **kwargs):
        raise srcgrad.CompileError("refused for the test")
    monkeypatch.setattr(jacobians.Jacobian, "_compiled_hessian", refused)
    f, reference = modules[0].dead_then_pass_else, modules[1].dead_then_pass_else
    x = POINTS[0]
    with pytest.warns(FallbackWarning, match="refused for the test"):
        got = srcgrad.hessian(f)(x.copy())
    np.testing.assert_allclose(got, autograd.hessian(reference)(x), rtol=1e-9, atol=1e-12)
    with pytest.raises(srcgrad.CompileError, match="refused for the test"):
        srcgrad.hessian(f, strict=True)(x.copy())


def _astype_int(x):
    return np.sum(np.sin(x) * (x * 4.0).astype(np.int64) + x * x)


@pytest.mark.parametrize("strict", [True, False])
def test_an_integer_cast_has_a_zero_tangent(strict):
    """``astype(int)``: no tangent through the cast (autograd, which differentiates through
    it, is no reference here): the gradient is cos(x) int(4x) + 2x, the Hessian diagonal."""
    for x in POINTS:
        ints = (x * 4.0).astype(np.int64)
        _, tangent = srcgrad.jvp(_astype_int, (x.copy(),), (TANGENT,), strict=strict)
        np.testing.assert_allclose(tangent, (np.cos(x) * ints + 2 * x) @ TANGENT, rtol=1e-12)
        np.testing.assert_allclose(srcgrad.hessian(_astype_int, strict=strict)(x.copy()),
                                   np.diag(-np.sin(x) * ints + 2.0), rtol=1e-12, atol=1e-14)
