"""One build's request and its results so far, handed from stage to stage of a
:class:`~srcgrad.build.pipeline.Pipeline`; and what a build returns (:class:`Built`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import networkx as nx

from srcgrad.codegen import Backend
from srcgrad.ir import Function

__all__ = ["Built", "Job"]


@dataclass
class Built:
    """A transform's module: its text, the graph it was emitted from, its loaded functions
    (``name``: the main one), the IR (None for a module made from generated source, a
    Hessian's loop) and the free names its code reads."""

    source: str
    graph: nx.DiGraph
    functions: dict[str, Any]
    name: str
    ir: Function | None
    free: dict[str, Any]
    resolved: list = field(default_factory=list)   # attributes bound when building


@dataclass
class Job:
    """What to build (``fun``, differentiated at ``wrt``, for ``backend``; the rest as the
    transform kind reads it) and what the stages have made of it so far."""

    fun: Any
    wrt: tuple[int, ...]
    backend: Backend
    kind: str = "jvp"                       # grad, value_and_grad, vjp; jvp in forward mode
    single: bool = False                    # one gradient, not a tuple of them
    trees: dict[int, Any] | None = None     # the structures of pytree arguments
    scalar: bool = False                    # specialised for Python floats
    facts: dict[str, tuple] | None = None   # specialised for these shapes and dtypes
    guard: tuple | None = None              # (argument facts, what other arguments go to)
    tangent_only: bool = False              # forward mode's tangent alone (a Hessian's half)
    ir: Function | None = None
    graph: nx.DiGraph | None = None
    reaches: dict = field(default_factory=dict)     # the analysis' cache, for one build
    module: Any = None                      # the kind's ModuleParts
    main: str = ""                          # the main function's name
    title: str = ""
    label: str = ""
    built: Built | None = None
    kept: Any = None                        # what a caller's own stage keeps of the build

    @property
    def wrt_names(self) -> list[str]:
        """The parameters differentiated, by name."""
        return [self.ir.params[i] for i in self.wrt]
