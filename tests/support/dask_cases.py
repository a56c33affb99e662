"""Gradients over Dask arrays against the NumPy backend's: how a case of
tests/support/parity_cases.py (or one of the Dask-specific cases below) is run with
``backend="dask"``, and how its results are compared with the NumPy backend's.

Each case runs in up to two variants of its arguments:

- ``"dask"``: every NumPy array (inside dicts, lists and tuples too) becomes a Dask array
  chunked along axis 0 (at least two chunks where the axis has two or more entries; the other
  axes whole; a 0-d array a 0-d Dask array). Python floats and ints stay as they are.
- ``"mixed"``: the first argument stays NumPy (the parameters a user differentiates) and the
  others become Dask (the data), for cases with two or more arguments.

:func:`run_dask` calls the transform twice on fresh arguments, keeps the results as they came
(to check that they are lazy: Dask arrays, not NumPy's) and computes them in one
``dask.compute``; :func:`compare_dask` compares them with the NumPy backend's outcome.
"""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import dask
import dask.array as da
import numpy as np
from compiled_helpers import define
from parity_cases import Case, Outcome, leaf_mismatch

import srcgrad

VARIANTS = ("dask", "mixed")


def chunked(a: np.ndarray) -> da.Array:
    """``a`` as a Dask array with at least two chunks along axis 0 when it has two rows or
    more (uneven where the rows are odd), the other axes whole."""
    a = np.array(a, copy=True)
    if a.ndim == 0:
        return da.from_array(a, chunks=())
    rows = math.ceil(a.shape[0] / 2) if a.shape[0] >= 2 else max(a.shape[0], 1)
    return da.from_array(a, chunks=(rows, *a.shape[1:]))


def to_dask(value: Any) -> Any:
    """``value`` with each NumPy array, at any depth of dicts, lists and tuples, chunked."""
    if isinstance(value, np.ndarray):
        return chunked(value)
    if isinstance(value, dict):
        return {k: to_dask(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(to_dask(v) for v in value)
    return value


def _copied(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, dict):
        return {k: _copied(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_copied(v) for v in value)
    return value


def has_array(value: Any) -> bool:
    return any(isinstance(leaf, (np.ndarray, da.Array)) for _, leaf in leaves(value))


def applies(case: Case, variant: str) -> bool:
    """Whether ``variant`` is a distinct test of ``case``: some argument is Dask, and for
    ``"mixed"`` the first argument holds an array and another argument does too."""
    if variant == "dask":
        return has_array(case.args)
    return len(case.args) >= 2 and has_array(case.args[0]) and has_array(case.args[1:])


def arguments(case: Case, variant: str) -> list:
    """Fresh arguments of ``case`` for ``variant``."""
    if variant == "dask":
        return [to_dask(a) for a in case.args]
    return [_copied(case.args[0]), *(to_dask(a) for a in case.args[1:])]


def leaves(tree: Any, where: str = "result") -> Iterator[tuple[str, Any]]:
    """The leaves of dicts, lists and tuples, with where they are."""
    if isinstance(tree, dict):
        for k, v in tree.items():
            yield from leaves(v, f"{where}[{k!r}]")
    elif isinstance(tree, (list, tuple)):
        for k, v in enumerate(tree):
            yield from leaves(v, f"{where}[{k}]")
    else:
        yield where, tree


@dataclass
class DaskOutcome:
    """What ``backend="dask"`` gave: the two results computed (``results``), or the error
    and the stage that raised it (``build``, ``call`` or ``compute``; ``refused``: a
    CompileError that is not an internal error); which leaves of the second result were
    Dask arrays before computing (``lazy``) and which were NumPy arrays (``eager``)."""

    results: list | None = None
    error: BaseException | None = None
    stage: str = ""
    refused: bool = False
    lazy: list[str] = field(default_factory=list)
    eager: list[str] = field(default_factory=list)
    source: str = ""
    computes: int = 0
    plain: BaseException | None = None


class Counting:
    """Dask's synchronous scheduler, counting the graphs it is given."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, dsk: Any, keys: Any, **kwargs: Any) -> Any:
        self.calls += 1
        return dask.get(dsk, keys, **kwargs)


def _refusal(exc: BaseException) -> bool:
    return isinstance(exc, srcgrad.CompileError) and not str(exc).startswith("internal error")


def run_dask(case: Case, variant: str) -> DaskOutcome:
    """The Dask gradient of ``case`` on ``variant``'s arguments: called twice on fresh
    arguments, then computed with Dask's synchronous scheduler."""
    out = DaskOutcome()
    counting = Counting()
    with warnings.catch_warnings(), dask.config.set(scheduler=counting):
        warnings.simplefilter("ignore")
        out.stage = "build"
        try:
            g = srcgrad.grad(case.fn, wrt=case.wrt, strict=True, backend="dask")
            out.stage = "call"
            raw = [g(*arguments(case, variant)), g(*arguments(case, variant))]
            out.computes = counting.calls
            out.source = list(g.sources.values())[-1] if g.sources else (g.source or "")
            for where, leaf in leaves(raw[1]):
                if isinstance(leaf, da.Array):
                    out.lazy.append(where)
                elif isinstance(leaf, np.ndarray):
                    out.eager.append(where)
            out.stage = "compute"
            out.results = list(dask.compute(*raw))
        except Exception as exc:          # reported by the test, with the case
            out.error, out.refused = exc, _refusal(exc)
            out.results = None
            if not out.refused:               # the function itself fails on these arrays?
                try:
                    case.fn(*arguments(case, variant))
                except Exception as plain:  # noqa: BLE001 - compared with the error above
                    out.plain = plain
    return out


def dask_mismatch(got: Any, want: Any, where: str = "result") -> str | None:
    """How computed ``got`` differs from the NumPy backend's ``want`` (None: the same dicts,
    lists and tuples; None where None; leaves of the same shape and dtype, values within
    RTOL/ATOL). A leaf may be a NumPy array where NumPy gives a number and the reverse: a
    computed 0-d Dask array is either."""
    if isinstance(want, (dict, list, tuple)) or isinstance(got, (dict, list, tuple)):
        if type(got) is not type(want):
            return f"{where}: {type(got).__name__} != {type(want).__name__}"
        if isinstance(want, dict):
            if list(got) != list(want):
                return f"{where}: keys {list(got)} != {list(want)}"
            pairs = [(got[k], want[k], f"{where}[{k!r}]") for k in want]
        else:
            if len(got) != len(want):
                return f"{where}: length {len(got)} != {len(want)}"
            pairs = [(a, b, f"{where}[{k}]") for k, (a, b) in enumerate(zip(got, want))]
        return next((m for a, b, w in pairs if (m := dask_mismatch(a, b, w))), None)
    if want is None or got is None:
        return None if got is want else f"{where}: {got!r} != {want!r}"
    if not isinstance(got, (np.ndarray, np.generic, float, int)):
        return f"{where}: computed to a {type(got).__name__}"
    return leaf_mismatch(got, want, where)


def compare_dask(got: DaskOutcome, want: Outcome, variant: str, computes: bool = False
                 ) -> str | None:
    """Why the Dask outcome is not allowed (None: it is). Allowed: both calls equal to the
    NumPy backend's first result, and, in the all-Dask variant, every leaf that NumPy gives
    as an array a Dask array before computing; or a refusal (a CompileError other than an
    internal error); or the error the function itself raises on these Dask arrays (Dask's
    linear algebra wants square chunks, say).  ``computes``: the case is known to compute
    while its gradient is built (then its results may be NumPy's)."""
    if got.refused:
        return None
    if got.error is not None and type(got.plain) is type(got.error):
        return None                       # what the function raises on these Dask arrays
    if got.error is not None:
        return f"{got.stage}: raised {type(got.error).__name__}: {str(got.error)[:600]}"
    if want.error is not None:
        return f"the NumPy backend raised {want.error!r}; the Dask backend did not refuse"
    reference = want.results[0]
    for label, value in (("first call", got.results[0]), ("second call", got.results[1])):
        problem = dask_mismatch(value, reference)
        if problem is not None:
            return f"{label}: {problem}"
    arrays = {w for w, leaf in leaves(reference) if isinstance(leaf, np.ndarray)}
    if variant == "dask" and arrays & set(got.eager) and not computes:
        return f"eager: NumPy arrays, not Dask arrays, at {sorted(arrays & set(got.eager))}"
    return None


def case_problems(outcomes: dict[str, tuple[DaskOutcome, Outcome]], computes: bool = False
                  ) -> list[str]:
    """The problems of one case's variants (``outcomes``: by variant, the Dask outcome and
    the NumPy backend's). NumPy parameters with Dask data is the use the backend is for: a
    case that runs with every argument Dask may not be refused with NumPy parameters."""
    problems = [f"({variant}) {problem}\n{got.source}"
                for variant, (got, want) in outcomes.items()
                if (problem := compare_dask(got, want, variant, computes)) is not None]
    if "mixed" in outcomes and outcomes["mixed"][0].refused and "dask" in outcomes:
        got, want = outcomes["dask"]
        if not got.refused and compare_dask(got, want, "dask") is None:
            problems.append(f"(mixed) refused with the first argument NumPy, though it runs "
                            f"with every argument Dask: {outcomes['mixed'][0].error}")
    return problems


def category(problem: str) -> str:
    """A short class of a problem, to group failures: the stage and exception type, or the
    kind of mismatch."""
    head = problem.split("\n", 1)[0]
    if ": raised " in head:
        stage, rest = head.split(": raised ", 1)
        kind, _, message = rest.partition(": ")
        inner = re.match(r"internal error: the compiled code of \w+ raised (\w+): (.*)", message)
        if inner:                               # what the generated code raised
            kind, message = f"{kind} of {inner[1]}", inner[2]
        return f"{stage}: {kind}: {message[:60]}"
    for kind in ("values differ", "eager", "NumPy backend raised", "computed to",
                 "refused with the first argument NumPy"):
        if kind in head:
            return kind
    return "structure, shape or dtype"


# --- cases of this issue: pytrees of parameters, control flow on reduced Dask values ----------

def _mlp(params, X, y):
    h = np.tanh(X @ params["w1"] + params["b1"])
    return np.mean((h @ params["w2"] - y) ** 2)


def _logistic(params, X, y):
    w, b = params
    z = X @ w + b
    return np.mean(np.log1p(np.exp(-z)) + (1.0 - y) * z)


def _layers(params, X, y):
    h = X
    for w, b in params["layers"]:
        h = np.tanh(h @ w + b)
    return np.sum((h[:, 0] - y) ** 2) + 0.1 * np.sum(params["scale"][0] * h ** 2)


def _pytree_case(fn: Callable, params: Any, wrt: tuple[int, ...] = (0,)) -> Case:
    rng = np.random.default_rng(5)
    X, y = rng.normal(size=(21, 4)), (rng.random(21) > 0.5) * 1.0
    return Case(fn, [params, X, y], wrt)


def _pytrees() -> dict[str, Callable[[Path], Case]]:
    rng = np.random.default_rng(4)
    mlp = {"w1": rng.normal(size=(4, 6)), "b1": rng.normal(size=6), "w2": rng.normal(size=6)}
    logistic = [rng.normal(size=4), rng.normal(size=())]
    layers = {"layers": [(rng.normal(size=(4, 3)), rng.normal(size=3)),
                         (rng.normal(size=(3, 2)), rng.normal(size=2))],
              "scale": (rng.normal(size=2),)}
    return {"pytree:mlp dict": lambda folder: _pytree_case(_mlp, mlp),
            "pytree:mlp dict, and X": lambda folder: _pytree_case(_mlp, mlp, (0, 1)),
            "pytree:logistic list": lambda folder: _pytree_case(_logistic, logistic),
            "pytree:nested dict of list of tuples": lambda folder: _pytree_case(_layers, layers)}


CONTROL = {
    "branch on a reduced value": ("""
        def f(w, x):
            if np.sum(x * w) > 0:
                y = np.tanh(x) * w
            else:
                y = x * x * w
            return np.sum(y)
        """, [[1.0, 2.0, -0.5], [-1.0, -2.0, 0.5]]),
    "while on a reduced value": ("""
        def f(w, x):
            y = x * w
            while np.max(np.abs(y)) > 1:
                y = y / 2
            return np.sum(y ** 2)
        """, [[3.0, -7.0, 0.5], [0.1, 0.2, 0.3]]),
    "early return and a conditional expression": ("""
        def f(w, x):
            s = np.sum(np.sin(x) * w) if np.mean(x * w) > 0 else np.sum(x * w)
            if np.max(x * w) > 2.0:
                return s * 2.0
            return s + np.sum(np.cos(x * w))
        """, [[1.0, 2.0, 3.0], [0.1, 0.2, 0.3], [-1.0, 2.0, -3.0]]),
    "loop whose trip count is a reduced value": ("""
        def f(w, x):
            h = x
            for _ in range(int(np.sum(x * w > 0.5))):
                h = np.tanh(h * w) + x
            return np.sum(h)
        """, [[1.0, 2.0, 3.0], [-1.0, 0.1, 3.0]]),
}
"""Programs whose control flow reads a reduced Dask value (source, values of ``w``, one per
case: both sides of each branch), with ``x`` a (5, 3) data matrix."""


def _control_case(source: str, w: list[float]) -> Case:
    x = np.linspace(-0.8, 1.6, 15).reshape(5, 3)
    return Case(define(source, {"np": np}), [np.array(w), x], (0, 1))


DASK_CASES: dict[str, Callable[[Path], Case]] = {
    **_pytrees(),
    **{f"dask-control:{name}:{k}": (lambda folder, s=source, w=w: _control_case(s, w))
       for name, (source, ws) in CONTROL.items() for k, w in enumerate(ws)},
}
"""The cases of this issue, by id, built as parity_cases.CATALOGUE's are."""


def describe_dask(case_id: str) -> str:
    family, _, name = case_id.partition(":")
    if family == "dask-control":
        source, ws = CONTROL[name.rsplit(":", 1)[0]]
        return f"{source}\nw = {ws[int(name.rsplit(':', 1)[1])]}"
    return f"tests/support/dask_cases.py: {case_id}"
