"""Every public method and attribute of ``np.ndarray`` on the eager run's ``Array``.

Each name is either called here with NumPy's own keywords, on an Array and on the same
values as a plain ndarray, and gives what NumPy gives (a write in place: the same array
after it), or is refused with a message naming it (what carries no gradient: NumPy's answer
for an Array without gradient, a refusal for one with).  A name NumPy adds that is in
neither list fails the first test.
"""

from __future__ import annotations

import numpy as np
import pytest

from srcgrad.runtime.eager import array_methods
from srcgrad.runtime.eager.ndarray import Array, as_array_constant, as_array_leaf
from srcgrad.runtime.eager.tensor import Tensor

M = np.arange(1.0, 7.0).reshape(2, 3) * np.array([1.0, -0.5, 2.0])

CALLS = {
    "T": lambda a: a.T,
    "mT": lambda a: a.mT,
    "all": lambda a: a.all(axis=0, keepdims=True),
    "any": lambda a: a.any(axis=1, keepdims=False),
    "argmax": lambda a: a.argmax(axis=1, keepdims=True),
    "argmin": lambda a: a.argmin(axis=0),
    "argpartition": lambda a: a.argpartition(1, axis=1),
    "argsort": lambda a: a.argsort(axis=1, kind="stable"),
    "astype": lambda a: a.astype(np.float32, casting="same_kind", copy=True),
    "clip": lambda a: a.clip(min=0.0, max=4.0),
    "compress": lambda a: a.compress([True, False, True], axis=1),
    "conj": lambda a: a.conj(),
    "conjugate": lambda a: a.conjugate(),
    "copy": lambda a: a.copy(order="C"),
    "cumprod": lambda a: a.cumprod(axis=1),
    "cumsum": lambda a: a.cumsum(axis=0, dtype=np.float32),
    "device": lambda a: a.device,
    "diagonal": lambda a: a.diagonal(offset=0, axis1=0, axis2=1),
    "dot": lambda a: a.dot(np.ones(3)),
    "dtype": lambda a: a.dtype,
    "fill": lambda a: a.fill(2.5),
    "flatten": lambda a: a.flatten(order="F"),
    "imag": lambda a: a.imag,
    "item": lambda a: a.item(4),
    "itemsize": lambda a: a.itemsize,
    "max": lambda a: a.max(axis=1, keepdims=True),
    "mean": lambda a: a.mean(axis=0, keepdims=True),
    "min": lambda a: a.min(axis=None),
    "nbytes": lambda a: a.nbytes,
    "ndim": lambda a: a.ndim,
    "nonzero": lambda a: a.nonzero(),
    "partition": lambda a: a.partition(1, axis=1),
    "prod": lambda a: a.prod(axis=1, keepdims=True),
    "put": lambda a: a.put([0, 4, 4, -1], [9.0, 8.0], mode="wrap"),
    "ravel": lambda a: a.ravel(order="F"),
    "real": lambda a: a.real,
    "repeat": lambda a: a.repeat(2, axis=0),
    "reshape": lambda a: a.reshape((3, 2), order="F"),
    "round": lambda a: a.round(decimals=1),
    "searchsorted": lambda a: a[0].searchsorted(2.0, side="right"),
    "shape": lambda a: a.shape,
    "size": lambda a: a.size,
    "sort": lambda a: a.sort(axis=1, kind="stable"),
    "squeeze": lambda a: a[None].squeeze(axis=0),
    "std": lambda a: a.std(axis=0, ddof=1, keepdims=True),
    "sum": lambda a: a.sum(axis=1, keepdims=True, dtype=np.float32),
    "swapaxes": lambda a: a.swapaxes(0, 1),
    "take": lambda a: a.take([0, 2], axis=1),
    "tolist": lambda a: a.tolist(),
    "trace": lambda a: a.trace(offset=1),
    "transpose": lambda a: a.transpose((1, 0)),
    "var": lambda a: a.var(axis=1, ddof=0),
    "view": lambda a: a.view(),
}
"""Each implemented name, called with NumPy's keywords."""

PUBLIC = sorted(n for n in dir(np.ndarray) if not n.startswith("_"))


def test_every_public_name_of_ndarray_is_checked_or_refused():
    handled = set(CALLS) | set(array_methods.REFUSED) | set(array_methods.PLAIN_ONLY)
    assert not set(PUBLIC) - handled, f"neither checked nor refused: {set(PUBLIC) - handled}"
    assert not set(CALLS) & (set(array_methods.REFUSED) | set(array_methods.PLAIN_ONLY))


def _plain(value):
    if isinstance(value, Tensor):
        assert type(value) is Array            # NumPy semantics stay with the result
        return value._data
    if isinstance(value, tuple):
        return tuple(_plain(v) for v in value)
    return value


@pytest.mark.parametrize("name", sorted(CALLS))
def test_each_method_takes_numpys_keywords_and_gives_numpys_answer(name):
    plain, arr = M.copy(), as_array_constant(M.copy())
    want, got = CALLS[name](plain), CALLS[name](arr)
    if want is None:                                   # a write in place
        assert got is None
        want, got = plain, arr
    got = _plain(got)
    if isinstance(want, tuple):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)
    elif isinstance(want, np.ndarray):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)
    elif isinstance(got, np.ndarray):                  # a recorded Python number (item)
        assert got.ndim == 0 and got == want and isinstance(want, float)
    else:
        assert got == want and type(got) is type(want)


@pytest.mark.parametrize("name", array_methods.REFUSED)
def test_what_the_engine_cannot_follow_is_refused_by_name(name):
    for arr in (as_array_constant(M.copy()), as_array_leaf(M.copy())):
        with pytest.raises(TypeError, match=rf"ndarray\.{name} is not offered"):
            getattr(arr, name)


@pytest.mark.parametrize("name", array_methods.PLAIN_ONLY)
def test_what_carries_no_gradient_is_numpys_own_without_gradient(name):
    value = getattr(as_array_constant(M.copy()), name)
    if name in ("tobytes", "dumps", "byteswap"):
        np.testing.assert_array_equal(np.asarray(value() == getattr(M, name)()), True)
    elif name == "strides":
        assert value == M.strides
    with pytest.raises(RuntimeError, match=rf"ndarray\.{name}"):
        getattr(as_array_leaf(M.copy()), name)


def test_refusals_of_keywords_are_messages_not_signature_errors():
    arr = as_array_constant(M.copy())
    with pytest.raises(TypeError, match="out="):
        arr.sum(axis=0, out=np.zeros(3))
    with pytest.raises(TypeError, match="inplace=True"):
        arr.byteswap(inplace=True)
    with pytest.raises(ValueError, match="ndim < 2"):
        _ = as_array_constant(np.ones(3)).mT
    with pytest.raises(TypeError, match="structured"):
        arr.sort(order="f")


def test_the_methods_record_their_gradient():
    x = as_array_leaf(M.copy())
    y = x.clip(min=0.0, max=4.0).sum(dtype=np.float64) + x.reshape((3, 2), order="F")[0, 1] \
        + x.item(4) + x.astype(np.float64, copy=False).mean(axis=0).sum()
    y.backward()
    want = ((M >= 0.0) & (M <= 4.0)).astype(float) + 1.0 / 2
    want[1, 1] += 2.0               # F order: (3, 2)[0, 1] is M[1, 1]; item(4) is M[1, 1]
    np.testing.assert_allclose(x.grad._data, want)
