"""The eager fallback shows NumPy's own functions to code that compares them by identity.

An eager run sees NumPy through stand-ins (they stack lists of Arrays); ``act is np.tanh``
with ``act`` made before the run must still be True, as in NumPy's own run, or the run takes
another branch and returns another gradient.  Each function here falls back (its dict key is
computed at run time) and is checked against the gradient written out by hand.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pytest

import srcgrad
from srcgrad.errors import CompileError

ACTS = [np.tanh, np.sin]
X = np.array([0.1, 0.2, -0.3])


def _no_compile(x):
    d = {}
    d[id(x)] = x                       # a key computed at run time: the compiler refuses
    return sum(d.values()).sum() * 0


def from_global_list(x, k):
    act = ACTS[k]
    y = act(x)
    if act is np.tanh:
        y = y * 5
    return np.sum(y) + _no_compile(x)


def by_two_names(x, k):
    act, first = ACTS[k], np.tanh
    y = act(x)
    if act is not first:               # neither side a NumPy name: values are kept too
        y = y * 7
    return np.sum(y) + _no_compile(x)


@dataclass
class Layer:
    act: object = np.tanh

    def __call__(self, x):
        y = self.act(x)
        return y * 3 if self.act is np.tanh else y


LAYER = Layer()


def from_attribute(x):
    return np.sum(LAYER(x)) + _no_compile(x)


def reduce_default(x, reduce=np.sum):
    y = np.sin(x)
    total = reduce(y) if reduce is np.mean else reduce(y) * 2
    return total + _no_compile(x)


def _grad(f, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", srcgrad.FallbackWarning)
        return srcgrad.grad(f)(*args)


@pytest.mark.parametrize("k, expected", [
    (0, 5 * (1 - np.tanh(X) ** 2)), (1, np.cos(X) * 7)])
def test_identity_of_a_function_from_a_list(k, expected):
    assert np.allclose(_grad(from_global_list, X, k), expected if k == 0 else np.cos(X))
    assert np.allclose(_grad(by_two_names, X, k), 1 - np.tanh(X) ** 2 if k == 0 else expected)


def test_identity_of_an_attribute_and_a_default():
    assert np.allclose(_grad(from_attribute, X), 3 * (1 - np.tanh(X) ** 2))
    assert np.allclose(_grad(reduce_default, X), 2 * np.cos(X))


def test_the_functions_fall_back():
    for f, args in [(from_global_list, (X, 0)), (from_attribute, (X,))]:
        with pytest.raises(CompileError):
            srcgrad.grad(f, strict=True)(*args)


def mean_of_list(x, reduce=np.mean):
    parts = [x[:2] ** 2, x[1:] ** 2]
    if reduce is np.mean:
        return np.sum(np.mean(parts, axis=0)) + _no_compile(x)
    return np.sum(parts[0]) + _no_compile(x)


def test_a_function_kept_for_identity_refuses_a_list_of_arrays():
    """np.mean is NumPy's own in this module's runs (its code compares it by identity): a
    list of Arrays given to it is refused, never differentiated as constants."""
    with pytest.raises(CompileError, match="turned into a plain NumPy array inside"):
        _grad(mean_of_list, X)


SEEN_BY_THREAD: list = []


def _looks_up_in_a_thread(x):
    import threading
    worker = threading.Thread(target=lambda: SEEN_BY_THREAD.append(
        (np.tanh is ACTS[0], np.mean, np.linalg.norm)))
    worker.start()
    worker.join()
    return np.sum(np.tanh(x)) + _no_compile(x)


def test_another_thread_sees_numpys_own_functions_during_a_run():
    SEEN_BY_THREAD.clear()
    np.testing.assert_allclose(_grad(_looks_up_in_a_thread, X), 1 - np.tanh(X) ** 2)
    [(same, mean, norm)] = SEEN_BY_THREAD
    assert same and mean is np.mean and norm is np.linalg.norm


def fills_a_buffer(x):
    out = np.zeros(x.shape)            # a dataclass's generated __eq__ (``is``, no source)
    for i in range(x.shape[0]):        # in this module keeps no NumPy function: np.zeros
        out[i] = np.sin(x[i]) * 2.0    # is the run's, and the fill is recorded
    return np.sum(out) + _no_compile(x)


def test_a_module_with_a_dataclass_still_fills_buffers():
    np.testing.assert_allclose(_grad(fills_a_buffer, X), 2.0 * np.cos(X))
