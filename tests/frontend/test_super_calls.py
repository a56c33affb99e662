"""``super()`` in methods lowered in place: a subclass's ``__init__`` calling
``super().__init__(...)`` and a ``forward`` that extends its base's through ``super()``,
resolved when compiling along the MRO of the object's class (made in the function, or an
argument object).  Compiled (strict) == HIPS autograd; ``super(C, self)`` with arguments is
refused naming the line (generated code has no ``__class__`` cell: it used to fail there).
And refusals met while reading a helper (``**kwargs`` it reads, a generator under
``enumerate``) name the user's file and line."""

from __future__ import annotations

import autograd
import autograd.numpy as anp
import numpy as np
import pytest
from compiled_helpers import define

import srcgrad
from srcgrad.errors import CompileError

SOURCE = """
    class Base:
        def __init__(self, name):
            self.name = name
            self.cache = []

        def forward(self, x):
            return x @ self.W

    class Scaled(Base):
        def __init__(self, W, s):
            super().__init__("scaled")
            self.W = W
            self.s = s

        def forward(self, x):
            return np.tanh(super().forward(x)) * self.s

    class Shifted(Scaled):
        def __init__(self, W, s, b):
            super().__init__(W, s)
            self.b = b

        def forward(self, x):
            return super().forward(x) + self.b

    class Plain:
        def __init__(self, W):
            super().__init__()
            self.W = W

    def made_here(W, x):
        return np.sum(Shifted(W, 2.0, 0.5).forward(x) ** 2) + np.sum(Plain(W).W)

    def argument(W, x, layer):
        return np.sum(layer.forward(x @ W) ** 2)

    class Explicit(Base):
        def __init__(self, W):
            super(Explicit, self).__init__("explicit")
            self.W = W

    def explicit(W, x):
        return np.sum(Explicit(W).forward(x))
    """

W = np.array([[0.3, -0.2], [0.5, 0.1]])
X = np.array([[1.0, 2.0], [-0.5, 0.3], [0.2, 0.2]])


def _ns(np_module):
    namespace = {"np": np_module, "__name__": "srcgrad_test_super_calls"}
    define(SOURCE, namespace, name="made_here")
    return namespace


def test_super_calls_along_the_mro_of_an_object_made_in_the_function():
    got = srcgrad.grad(_ns(np)["made_here"], strict=True)(W, X)
    np.testing.assert_allclose(got, autograd.grad(_ns(anp)["made_here"])(W, X), rtol=1e-12)


def test_super_calls_of_an_argument_object():
    mine, theirs = _ns(np), _ns(anp)
    got = srcgrad.grad(mine["argument"], strict=True)(W, X, mine["Shifted"](W, 1.5, 0.2))
    want = autograd.grad(theirs["argument"])(W, X, theirs["Shifted"](W, 1.5, 0.2))
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_super_with_arguments_is_refused_at_its_line():
    with pytest.raises(CompileError, match="super") as info:
        srcgrad.grad(_ns(np)["explicit"], strict=True)(W, X)
    assert info.value.lineno == 40


KWARGS = """
    class Module:
        def __call__(self, *args, **kwargs):
            return self.forward(*args, **kwargs)

    class Linear(Module):
        def __init__(self, W):
            self.W = W

        def forward(self, x):
            return x @ self.W

    def batches(x):
        for i in range(x.shape[0]):
            yield x[i]

    def through_call(W, x):
        return np.sum(Linear(W)(x))

    def through_enumerate(W, x):
        total = 0.0
        for k, b in enumerate(batches(x), start=1):
            total = total + np.sum(b @ W) * k
        return total
    """


@pytest.mark.parametrize("name, line", [("through_call", 4), ("through_enumerate", 22)])
def test_refusals_inside_helpers_name_a_line(name, line):
    """A refusal the compiler meets while reading a helper (``**kwargs`` it reads, a generator
    it cannot expand here) names the user's file and a line, as every refusal does."""
    namespace = {"np": np, "__name__": "srcgrad_test_super_kwargs"}
    f = define(KWARGS, namespace, name=name)
    with pytest.raises(CompileError) as info:
        srcgrad.grad(f, strict=True)(W, X)
    assert info.value.lineno == line and info.value.filename.startswith("<test-source")
