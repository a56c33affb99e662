"""``srcgrad.linalg``: PyTorch's ``torch.linalg`` names (see :mod:`srcgrad.runtime.linalg`)."""

from srcgrad.runtime.linalg import *  # noqa: F403
from srcgrad.runtime.linalg import __all__


def __getattr__(name: str) -> None:
    """A ``torch.linalg`` function srcgrad does not offer is an AttributeError that says so."""
    raise AttributeError(f"module 'srcgrad.linalg' has no attribute '{name}' (srcgrad offers "
                         f"{', '.join(n for n in __all__ if n != 'LinAlgError')})")
