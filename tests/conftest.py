"""Shared helpers: the optional PyTorch oracle and central finite differences."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

HAS_TORCH = importlib.util.find_spec("torch") is not None
needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="PyTorch is not installed")


def numerical_grad(f, arrays, k, eps=1e-6):
    """Central differences of scalar ``f(*arrays)`` with respect to ``arrays[k]`` (float64)."""
    x = arrays[k]
    g = np.zeros_like(x, dtype=np.float64)
    flat, gflat = x.reshape(-1), g.reshape(-1)
    for j in range(flat.size):
        old = flat[j]
        flat[j] = old + eps
        plus = f(*arrays)
        flat[j] = old - eps
        minus = f(*arrays)
        flat[j] = old
        gflat[j] = (plus - minus) / (2 * eps)
    return g


@pytest.fixture(scope="module")
def vectorised_math_at_every_size():
    """Small numba kernels calling the vectorisable math functions all the same (by default
    only domains of ``VECTORISED_MIN`` elements or more do)."""
    from srcgrad.codegen.backends.numba import kernels as numba_kernels
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(numba_kernels, "VECTORISED_MIN", 0)
        yield


@pytest.fixture(autouse=True)
def _fresh_transforms():
    """Each test makes its own transforms, as it did before transforms were reused: a test
    that patches the environment (``sys.modules["cupy"]``, a rule) never meets one built by
    another test.  tests/transforms/test_transform_cache.py tests the reuse itself."""
    from srcgrad.transforms.cache import TRANSFORMS
    TRANSFORMS.clear()
    yield
