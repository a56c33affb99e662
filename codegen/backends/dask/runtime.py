"""What ``backend="dask"`` does when its code runs (the ``runtime`` of its Backend).

Dask arrays are graphs computed later: an array whose chunk sizes are unknown cannot be
differentiated lazily (the gradient divides and scatters by sizes), the eager engine takes
them computed, and a failure may be Dask refusing what the code asks of it lazily.  Dask
itself is imported only where an array is computed.
"""

from __future__ import annotations

from typing import Any

__all__ = ["RUNTIME", "DaskRuntime"]


class DaskRuntime:
    """The hooks :class:`~srcgrad.codegen.backends.base.Backend` hands its Dask arrays to."""

    @staticmethod
    def refusal(leaves: list, name: str) -> str | None:
        """Arrays of unknown chunk sizes are refused: why, naming the first."""
        from srcgrad.codegen.backends.base import DASK
        unknown = next((a for a in leaves if DASK.owns(a) and any(n != n for n in a.shape)),
                       None)
        if unknown is None:
            return None
        return (f"a Dask array of unknown chunk sizes (shape {unknown.shape}) was passed "
                f"to {name}; call .compute_chunk_sizes() on it first")

    @staticmethod
    def eager_arguments(values: list) -> list:
        """The arguments computed (the eager engine is NumPy's)."""
        import dask
        return list(dask.compute(*values))

    @staticmethod
    def own_refusal(exc: BaseException, name: str, where: str) -> str | None:
        """What Dask cannot do lazily (a function it lacks, which it would compute), or its
        linear algebra cannot do on these chunks: the message; else None."""
        if isinstance(exc, (NotImplementedError, FutureWarning)) or _raised_in(
                exc, "dask.array.linalg"):
            return (f"Dask cannot compute the derivative of {name} "
                    f"lazily{where}: {str(exc).strip()}")
        return None


def _raised_in(exc: BaseException, package: str) -> bool:
    """Whether ``exc`` was raised inside ``package`` (its innermost frame): Dask's linear
    algebra refuses what its blocks cannot do (chunks that are not square, stacks)."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    module = tb.tb_frame.f_globals.get("__name__", "") if tb is not None else ""
    return module == package or module.startswith(package + ".")


RUNTIME: Any = DaskRuntime()
"""The object ``DASK.runtime`` stands for."""
