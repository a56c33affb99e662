"""The compiler's cost is linear in the length of the function (issue 10), counted without a
clock: the number of Python function calls ``grad()`` and the first call (the build for the
shapes of its arguments) make, for straight-line functions of n, 2n and 4n statements.  A cost
a + b n + c n^2 makes the step from 2n to 4n cost between 2 (c = 0) and 4 (b = 0) times the
step from n to 2n; a step ratio at or under 2.5 leaves room for n log n, not for n^2."""

from __future__ import annotations

import cProfile
import importlib.util
import pstats
import sys

import numpy as np
import pytest

import srcgrad

_OPS = ("np.sin(a{j})", "a{j} * 1.01", "a{j} + 0.5", "np.tanh(a{j})")


def _chain(n: int, folder, tag: str):
    lines = ["import numpy as np", "", "", "def f(x):", "    a0 = x * 1.0"]
    lines += [f"    a{i} = " + _OPS[i % 4].format(j=i - 1) for i in range(1, n)]
    lines.append(f"    return np.sum(a{n - 1})")
    name = f"_build_cost_{tag}_{n}"
    path = folder / f"{name}.py"
    path.write_text("\n".join(lines) + "\n")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module.f


def _calls(f, stage: str) -> int:
    """Python and builtin calls made by ``grad(f)`` (``stage='grad'``) or by its first call."""
    g = srcgrad.grad(f, strict=True) if stage == "call" else None
    profile = cProfile.Profile()
    profile.enable()
    try:
        if stage == "grad":
            srcgrad.grad(f, strict=True)
        else:
            g(np.ones(3))
    finally:
        profile.disable()
    return sum(row[1] for row in pstats.Stats(profile).stats.values())


@pytest.mark.parametrize("stage", ["grad", "call"])
def test_build_work_grows_linearly(tmp_path, stage):
    _calls(_chain(8, tmp_path, f"warm_{stage}"), stage)        # imports, tables: paid once
    sizes = (40, 80, 160)
    counts = [_calls(_chain(n, tmp_path, stage), stage) for n in sizes]
    first, second = counts[1] - counts[0], counts[2] - counts[1]
    assert first > 0
    ratio = second / first
    assert ratio <= 2.5, (f"{stage}: calls {counts} for {sizes} statements; doubling the "
                          f"function multiplies the extra work by {ratio:.2f}")


def test_the_linear_build_keeps_the_gradient(tmp_path):
    """The chain's gradient is still exact (a product of the links' derivatives)."""
    f = _chain(9, tmp_path, "exact")
    x = np.array([0.3, -0.2, 0.7])
    got = srcgrad.grad(f, strict=True)(x)
    a, d = x * 1.0, np.ones(3)
    for i in range(1, 9):
        step = i % 4
        if step == 0:
            d, a = d * np.cos(a), np.sin(a)
        elif step == 1:
            d, a = d * 1.01, a * 1.01
        elif step == 2:
            a = a + 0.5
        else:
            a = np.tanh(a)
            d = d * (1 - a ** 2)
    np.testing.assert_allclose(got, d, rtol=1e-12)
