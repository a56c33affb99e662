"""Devices: ``cpu`` Tensors hold NumPy arrays, ``cuda`` Tensors hold CuPy arrays."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["device", "device_of", "to_numpy", "cuda_available", "move"]


class device:
    """A device (``srcgrad.device("cuda:0")``), compared and printed as PyTorch's."""

    __slots__ = ("type", "index")

    def __init__(self, spec: Any, index: int | None = None) -> None:
        if isinstance(spec, device):
            spec, index = spec.type, spec.index
        kind, _, num = str(spec).partition(":")
        if kind not in ("cpu", "cuda"):
            raise RuntimeError(f"Expected one of cpu, cuda device type at start of device "
                               f"string: {spec}")
        self.type = kind
        self.index = int(num) if num else index

    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            other = device(other)
        return (isinstance(other, device) and self.type == other.type
                and (self.index or 0) == (other.index or 0))

    def __hash__(self) -> int:
        return hash((self.type, self.index or 0))

    def __repr__(self) -> str:
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"


_CPU = device("cpu")


def _cupy() -> Any:
    try:
        import cupy
    except ImportError:
        return None
    return cupy


def cuda_available() -> bool:
    cp = _cupy()
    if cp is None:
        return False
    try:
        return bool(cp.is_available())
    except Exception:
        return False


def device_of(data: Any) -> device:
    if not hasattr(data, "__cuda_array_interface__"):
        return _CPU
    return device("cuda", getattr(getattr(data, "device", None), "id", 0))


def to_numpy(data: Any) -> np.ndarray:
    """A NumPy array for host or device data (a device array is copied to the host)."""
    return data.get() if hasattr(data, "__cuda_array_interface__") else np.asarray(data)


def move(data: Any, target: device) -> Any:
    """``data`` on ``target``, copied across devices when needed."""
    if target.type == "cpu":
        return to_numpy(data)
    if hasattr(data, "__cuda_array_interface__"):
        return data
    if not cuda_available():
        raise RuntimeError("Found no NVIDIA driver on your system. Please check that you have "
                           "an NVIDIA GPU and installed a driver from "
                           "http://www.nvidia.com/Download/index.aspx")
    cp = _cupy()
    with cp.cuda.Device(target.index or 0):
        return cp.asarray(data)
