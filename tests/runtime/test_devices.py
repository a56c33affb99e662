"""CUDA Tensors without a GPU: CuPy's role is played by a NumPy-backed stand-in.

The stand-in's arrays carry ``__cuda_array_interface__`` and ``.get()`` as CuPy's do, so the
device logic (what is moved, what is recorded, where gradients land) runs for real.
"""

from __future__ import annotations

import types

import numpy as np
import pytest

import srcgrad
from srcgrad.runtime import device as device_module


class FakeDeviceArray(np.ndarray):
    """A host array that says it lives on device 0."""

    @property
    def __cuda_array_interface__(self):
        return {"shape": self.shape, "typestr": self.dtype.str, "version": 3,
                "data": (self.ctypes.data, False)}

    @property
    def device(self):
        return types.SimpleNamespace(id=0)

    def get(self):
        return np.array(self.view(np.ndarray), copy=True)


class _Device:
    def __init__(self, index):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


fake_cupy = types.SimpleNamespace(
    asarray=lambda a: np.array(a, copy=True).view(FakeDeviceArray),
    is_available=lambda: True,
    cuda=types.SimpleNamespace(Device=_Device),
)


@pytest.fixture
def fake_gpu(monkeypatch):
    monkeypatch.setattr(device_module, "_cupy", lambda: fake_cupy)


def test_cuda_without_a_device_says_so():
    if device_module.cuda_available():
        pytest.skip("a real GPU is present")
    with pytest.raises(RuntimeError, match="Found no NVIDIA driver"):
        srcgrad.ones(2).cuda()


def test_seed_cuda_copy_is_recorded(fake_gpu):
    x = srcgrad.rand(3, requires_grad=True).cuda()
    assert (x.is_leaf, x.requires_grad, x.grad_fn.name()) == (False, True, "ToCopyBackward0")
    assert str(x.device) == "cuda:0" and x.is_cuda
    y = srcgrad.rand(3).cuda()
    assert (y.is_leaf, y.requires_grad, y.grad_fn) == (True, False, None)


def test_leaf_created_on_the_device_and_gradients_come_home(fake_gpu):
    w = srcgrad.tensor([1.0, 2.0, 3.0], requires_grad=True, device="cuda")
    assert w.is_leaf and w.device == srcgrad.device("cuda:0")
    assert repr(w) == "tensor([1., 2., 3.], device='cuda:0', requires_grad=True)"
    (w * w).sum().backward()
    assert w.grad.device.type == "cuda"
    np.testing.assert_array_equal(w.grad.cpu().numpy(), [2.0, 4.0, 6.0])
    h = srcgrad.tensor([1.0, -1.0], requires_grad=True)
    z = h.cuda() * 3
    z.sum().backward()
    assert h.grad.device.type == "cpu" and type(h.grad._data) is np.ndarray
    np.testing.assert_array_equal(h.grad.numpy(), [3.0, 3.0])
