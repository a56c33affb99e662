"""srcgrad's code generator: reverse and forward emitters, backends and passes.

This package's own namespace is what the drivers (``srcgrad.build``, ``srcgrad.transforms``,
``srcgrad.tools``) use of it; they import nothing from its submodules.  Each name is imported
from its submodule when first read, so ``import srcgrad`` loads only what it uses (and never a
backend's library: numba, Dask or CuPy).

Emitting: ``ReverseEmitter`` and ``ForwardEmitter`` write a lowered function's derivative as
Python AST; ``accumulators``, ``finish_lists``, ``eliminate_dead_code`` finish a function they
wrote.  Modules: ``render`` assembles the functions into one module's text, ``load`` runs it,
``unparse`` prints a tree.  Backends: ``backend(name)`` and the rest of the registry
(``DEFAULT_BACKEND``, ``NAMES``, ``LIBRARIES`` ...), and the :class:`Backend` objects' hooks.
"""

from __future__ import annotations

import importlib
from typing import Any

_FROM: dict[str, tuple[str, str]] = {
    # the emitters and what finishes the functions they write
    "ReverseEmitter": ("emit.reverse", "Emitter"),
    "ForwardEmitter": ("emit.forward", "Forward"),
    "accumulators": ("emit.control", "accumulators"),
    "finish_lists": ("emit.lists", "finish"),
    "eliminate_dead_code": ("passes.cleanup", "eliminate_dead_code"),
    "SymbolicError": ("emit.symbolic", "SymbolicError"),
    "assign": ("emit.symbolic", "assign"),
    "name_expr": ("emit.symbolic", "name_expr"),
    "FLOAT": ("emit.value_kinds", "FLOAT"),
    "block_params": ("emit.value_kinds", "block_params"),
    "function_kinds": ("emit.value_kinds", "function_kinds"),
    "located": ("emit.primal", "located"),
    "short_filename": ("emit.primal", "short_filename"),
    "recording_namespace": ("emit.recording", "recording_namespace"),
    "comment": ("common.markers", "comment"),
    "own_lists": ("common.support", "own_lists"),
    # a module's text, and running it
    "render": ("module", "render"),
    "load": ("module", "load"),
    "unparse": ("printer", "unparse"),
    # the backends
    "Backend": ("backends.base", "Backend"),
    "NotInBackend": ("backends.base", "NotInBackend"),
    "FILTERS_LOCK": ("backends.base", "FILTERS_LOCK"),
    "MATH": ("backends.base", "MATH"),
    "as_backend": ("backends.base", "as_backend"),
    "DEFAULT_BACKEND": ("backends.registry", "DEFAULT_BACKEND"),
    "NAMES": ("backends.registry", "NAMES"),
    "KNOWN": ("backends.registry", "KNOWN"),
    "LIBRARIES": ("backends.registry", "LIBRARIES"),
    "BOUND_NAMES": ("backends.registry", "BOUND_NAMES"),
    "backend": ("backends.registry", "backend"),
    "array_backend": ("backends.registry", "array_backend"),
    "for_arrays": ("backends.registry", "for_arrays"),
    "reserved_names": ("backends.registry", "reserved_names"),
}
"""Each public name: ``(submodule, attribute)``."""

__all__ = sorted(_FROM)


def __getattr__(name: str) -> Any:
    try:
        where, attribute = _FROM[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    module = importlib.import_module(f"{__name__}.{where}")
    value = getattr(module, attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_FROM))
