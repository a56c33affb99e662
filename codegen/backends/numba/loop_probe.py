"""What a shape specialisation's first call learns of the loops it will make kernels of.

The driver runs the generic module once as a probe.  :class:`LoopProbe` (``NUMBA.loop_probe``,
asked through the :class:`~srcgrad.codegen.backends.base.Backend` hooks ``probe_loops`` and
``loop_facts``) makes each loop body's vjp function of that module report its locals in every
iteration (:func:`~srcgrad.codegen.backends.numba.loop_sites.instrument`), and turns the
reports into the facts the loop kernels are written from
(:class:`~srcgrad.codegen.backends.numba.loop_sites.ShapeFacts`).
"""

from __future__ import annotations

import ast
import contextvars
from typing import Any

from srcgrad.codegen.backends.numba.loop_sites import (
    RECORD,
    ShapeFacts,
    fact_of,
    instrument,
    merge,
    python_scalars,
)

__all__ = ["LoopProbe", "PROBE"]


class LoopProbe:
    """The loop bodies of a probing module, reporting into a list of the caller's."""

    def instrument(self, tree: ast.Module, main: str, namespace: dict[str, Any],
                   sink: contextvars.ContextVar) -> None:
        """Make the loop bodies of ``tree`` (whose main function is ``main``, to be run in
        ``namespace``) report their locals into the list ``sink`` holds when they run (none
        reported where it holds none)."""
        instrument(tree, main)

        def record(body: str, part: str, values: dict[str, Any]) -> None:
            records = sink.get(None)
            if records is not None:
                records.append((body, part, {name: fact_of(v) for name, v in values.items()},
                                python_scalars(values)))
        namespace[RECORD] = record

    def facts(self, facts: dict[str, tuple], records: list) -> ShapeFacts:
        """The main function's ``facts`` with what every iteration of each loop agreed on."""
        return ShapeFacts(facts, merge(records))


PROBE = LoopProbe()
