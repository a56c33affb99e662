"""One build pipeline for every transform kind: a list of stages, run in order on a
:class:`~srcgrad.build.job.Job`.

The stages every kind shares are here: :func:`lower` (parse and lower the user's function),
:func:`graph` (its def-use graph, which also refuses a derivative flowing into a shape),
:func:`emitting` (an emitter's refusal reported at the function), and :func:`finish` (the
module's text rendered, loaded, and the comments that locate its lines).  A kind adds its own
(the module it collects functions into, its emitter, its title), and lists them::

    REVERSE = Pipeline("reverse", (lower, graph, *EMIT_REVERSE))

Every stage reads and writes the job; the pipeline's :meth:`Pipeline.build` runs them as one
build (:func:`~srcgrad.build.parts.guarded`: one at a time, any error but a CompileError an
internal error at the construct being compiled).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from srcgrad.analysis.graph import build_graph
from srcgrad.build.job import Built, Job
from srcgrad.build.lowering import lower_function
from srcgrad.build.parts import guarded
from srcgrad.codegen import SymbolicError
from srcgrad.errors import CompileError, Location

__all__ = ["Pipeline", "Stage", "lower", "graph", "emitting", "finish"]

Stage = Callable[[Job], None]


class Pipeline:
    """A transform kind's build: its ``stages``, run in order on one job."""

    def __init__(self, name: str, stages: Sequence[Stage]) -> None:
        self.name, self.stages = name, tuple(stages)

    def __repr__(self) -> str:
        return f"<pipeline {self.name}: {', '.join(s.__name__ for s in self.stages)}>"

    def extended(self, name: str, stage: Stage, after: Stage | None = None) -> Pipeline:
        """These stages, named ``name``, with ``stage`` run right after ``after`` (first
        without it): a caller's variant of a kind (one that keeps a copy of the IR, say)."""
        at = 0 if after is None else self.stages.index(after) + 1
        return Pipeline(name, (*self.stages[:at], stage, *self.stages[at:]))

    def run(self, job: Job) -> Built:
        """The stages on ``job``, within a build its caller guards."""
        for stage in self.stages:
            stage(job)
        return job.built

    def build(self, job: Job) -> Built:
        """The stages on ``job`` as one guarded build of ``job.fun``."""
        return guarded(job.fun, lambda: self.run(job))


def lower(job: Job) -> None:
    """Parse and lower the user's function."""
    job.ir = lower_function(job.fun, job.trees, job.wrt)


def graph(job: Job) -> None:
    """The IR's def-use graph for the differentiated parameters."""
    job.graph = build_graph(job.ir, job.wrt_names, reaches=job.reaches)


def emitting(emit: Callable[[Job], str]) -> Stage:
    """The stage that runs a kind's emitter (``emit``: the main function's name), a refusal
    of its rules on symbols reported as a CompileError at the function."""
    def emitted(job: Job) -> None:
        try:
            job.main = emit(job)
        except SymbolicError as exc:
            ir = job.ir
            raise CompileError(str(exc), Location(ir.filename, ir.firstline, 0, 0, "",
                                                  ir.name)) from None
    emitted.__name__ = emit.__name__
    return emitted


def finish(job: Job) -> None:
    """The module's text and its loaded functions."""
    text, functions = job.module.finish(job.ir, job.title, job.label, job.backend, job.main,
                                        job.facts)
    job.built = Built(text, job.graph, functions, job.main, job.ir, job.module.free)
