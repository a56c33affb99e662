"""``srcgrad.cuda``: whether CUDA Tensors can be made here (CuPy and a device present)."""

from __future__ import annotations

from srcgrad.runtime.device import _cupy, cuda_available

__all__ = ["is_available", "device_count", "manual_seed", "manual_seed_all", "empty_cache"]


def is_available() -> bool:
    """True only where CuPy imports and sees at least one CUDA device."""
    return cuda_available()


def device_count() -> int:
    """The number of CUDA devices CuPy sees (0 without CuPy or a device)."""
    cp = _cupy()
    if cp is None:
        return 0
    try:
        return int(cp.cuda.runtime.getDeviceCount())
    except Exception:             # CuPy without a driver raises its own runtime errors
        return 0


def manual_seed(seed: int) -> None:
    """Accepted for PyTorch code; srcgrad draws CUDA Tensors from its one generator
    (``srcgrad.manual_seed``), so there is nothing more to seed."""


manual_seed_all = manual_seed


def empty_cache() -> None:
    """Give CuPy's cached device memory back (nothing to do without CuPy)."""
    cp = _cupy()
    if cp is not None and cuda_available():
        cp.get_default_memory_pool().free_all_blocks()


def __getattr__(name: str) -> None:
    raise AttributeError(f"module 'srcgrad.cuda' has no attribute '{name}' (srcgrad offers "
                         f"{', '.join(__all__)})")
