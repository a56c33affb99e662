"""``srcgrad.linalg``: PyTorch's ``torch.linalg`` names (:mod:`srcgrad.runtime.eager.linalg`)."""

from srcgrad.runtime.eager.linalg import *  # noqa: F403
from srcgrad.runtime.eager.linalg import __all__


def __getattr__(name: str) -> None:
    """A ``torch.linalg`` function srcgrad does not offer is an AttributeError that says so."""
    raise AttributeError(f"module 'srcgrad.linalg' has no attribute '{name}' (srcgrad offers "
                         f"{', '.join(n for n in __all__ if n != 'LinAlgError')})")
