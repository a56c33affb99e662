"""The eager fallback reaches the user's other modules: a helper in ``layers.py`` that
preallocates with ``np.zeros`` and fills it, or calls SciPy, runs on the engine as the
differentiated function's own module does.  The modules are real files (the user's code);
after the run every module's names are NumPy's and SciPy's own again."""

from __future__ import annotations

import importlib
import sys
import textwrap
import warnings

import numpy as np
import pytest
import scipy.special
from conftest import numerical_grad

import srcgrad

LAYERS = """
    import numpy as np
    from scipy.special import logsumexp

    class Dense:
        def __init__(self, W):
            self.W = W

        def __call__(self, x):
            out = np.empty((x.shape[0], self.W.shape[1]))
            for i in range(x.shape[0]):
                out[i] = np.tanh(x[i] @ self.W)
            return out

    def affine(x, W):
        out = np.zeros((x.shape[0], W.shape[1]))
        for i in range(x.shape[0]):
            out[i] = x[i] @ W
        return out

    def lse(z):
        return logsumexp(z)
    """

MODEL = """
    import numpy as np
    import {layers}
    from {layers} import affine

    def loss(W, x):
        seen = {{}}
        seen[id(W)] = 0.0                 # a key computed at run time: the compiler refuses
        h = affine(x, W)
        d = {layers}.Dense(W)(x)
        return np.sum(h ** 2) + {layers}.lse(h.ravel()) + np.sum(d)
    """


@pytest.fixture
def modules(tmp_path, request):
    stem = f"srcgrad_user_modules_{request.node.name.replace('[', '_').replace(']', '')}"
    (tmp_path / f"{stem}_layers.py").write_text(textwrap.dedent(LAYERS))
    (tmp_path / f"{stem}_model.py").write_text(
        textwrap.dedent(MODEL.format(layers=f"{stem}_layers")))
    sys.path.insert(0, str(tmp_path))
    try:
        model = importlib.import_module(f"{stem}_model")
        yield model, sys.modules[f"{stem}_layers"]
    finally:
        sys.path.remove(str(tmp_path))
        for name in (f"{stem}_model", f"{stem}_layers"):
            sys.modules.pop(name, None)


def test_helpers_in_another_user_module_run_on_the_engine(modules):
    model, layers = modules
    rs = np.random.RandomState(0)
    W, x = rs.randn(2, 2), rs.randn(3, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", srcgrad.FallbackWarning)
        got = srcgrad.grad(model.loss)(W, x)
    np.testing.assert_allclose(got, numerical_grad(model.loss, [W.copy(), x], 0),
                               rtol=1e-6, atol=1e-8)
    assert layers.np is np and model.np is np and layers.logsumexp is scipy.special.logsumexp
    assert scipy.special.logsumexp.__module__.startswith("scipy")
