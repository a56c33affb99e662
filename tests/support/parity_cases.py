"""The gradient tests every backend must pass, as one catalogue of cases: the whole
rule table (built as tests/sweeps/test_compiler_rules.py builds it), the control-flow and list
programs of tests/frontend/test_control_flow.py and tests/frontend/test_lists.py, and random
programs of tests/support/program_generator.py.

:func:`run` calls a backend's transform twice on fresh copies of the arguments (the first
call runs the generic module and learns the shapes; the second runs the module specialised
for them, with its fused kernels) and :func:`mismatch` compares each result with the NumPy
backend's: the same structure, types, shapes and dtypes, and the same numbers to rounding.
"""

from __future__ import annotations

import ast
import copy
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import test_control_flow
import test_lists
from compiled_helpers import arguments, define
from program_generator import generate, load
from test_compiler_rules import DIFFERENTIABLE, _compiled_function

import srcgrad

RANDOM_SEEDS = range(120)
RTOL, ATOL = 1e-10, 1e-12


@dataclass
class Case:
    """A function, its arguments and the positions differentiated."""

    fn: Callable
    args: list
    wrt: tuple[int, ...]


def rule_case(name: str) -> Case:
    fn, diff, inputs = _compiled_function(name)
    return Case(fn, [np.array(inputs[k], copy=True) for k in diff], tuple(range(len(diff))))


def program_cases(module: Any, family: str) -> dict[str, Callable[[Path], Case]]:
    """The cases of a test module's ``CASES`` (source, argument spec, other specs): one per
    spec, with the same arguments that module draws."""
    out = {}
    for name, (source, spec, others) in module.CASES.items():
        for k in range(1 + len(others)):
            out[f"{family}:{name}:{k}"] = lambda folder, s=source, specs=[spec, *others], k=k: \
                _spec_case(s, specs, k)
    return out


def _spec_case(source: str, specs: list, k: int) -> Case:
    rng = np.random.default_rng(0)                    # as compiled_helpers.check_case draws
    args = [arguments(s, rng) for s in specs][k]
    wrt = tuple(i for i, a in enumerate(args) if isinstance(a, np.ndarray))
    return Case(define(source, {"np": np}), args, wrt)


def describe(case_id: str) -> str:
    """The program of a case, to print with a failure."""
    family, _, name = case_id.partition(":")
    if family == "random":
        source = generate(int(name)).source
        return source[source.index("def f("):]          # after the shared helpers
    if family == "rule":
        return f"the rule-table primitive {name} (tests/sweeps/test_compiler_rules.py)"
    module = test_control_flow if family == "control" else test_lists
    source, spec, others = module.CASES[name.rsplit(":", 1)[0]]
    return f"{source}\narguments: {[spec, *others][int(name.rsplit(':', 1)[1])]}"


def random_case(seed: int, folder: Path) -> Case:
    program = generate(seed)
    return Case(load(program, folder), program.args, program.wrt)


CATALOGUE: dict[str, Callable[[Path], Case]] = {
    **{f"rule:{name}": (lambda folder, n=name: rule_case(n)) for name in DIFFERENTIABLE},
    **program_cases(test_control_flow, "control"),
    **program_cases(test_lists, "list"),
    **{f"random:{seed}": (lambda folder, s=seed: random_case(s, folder))
       for seed in RANDOM_SEEDS},
}
"""Every case, by id (``family:name``), built on demand (``folder``: where random programs
are written as modules)."""


@dataclass
class Outcome:
    """What a backend's transform gave for a case: its two results, or the error it raised
    (``refused``: a CompileError other than an internal error); the specialised source; and
    how many kernel calls the second call made (where the caller counts them)."""

    results: list | None = None
    error: BaseException | None = None
    refused: bool = False
    source: str = ""
    kernels: int = 0


def run(case: Case, backend: str, counter: Callable[[], int] = lambda: 0) -> Outcome:
    """The backend's gradient of ``case``, called twice on fresh copies of the arguments;
    ``counter()``: kernel calls so far (the second call's are kept)."""
    out = Outcome()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            g = srcgrad.grad(case.fn, wrt=case.wrt, strict=True, backend=backend)
        except srcgrad.CompileError as exc:
            out.error, out.refused = exc, True
            return out
        try:
            first = g(*copy.deepcopy(case.args))
            before = counter()
            second = g(*copy.deepcopy(case.args))
            out.kernels = counter() - before
        except Exception as exc:               # reported by the test, with the case
            out.error = exc
            out.refused = isinstance(exc, srcgrad.CompileError) and not str(exc).startswith(
                "internal error")                # a pytree argument's code, say
            return out
    out.results = [first, second]
    out.source = list(g.sources.values())[-1] if g.sources else ""
    return out


def mismatch(got: Any, want: Any, where: str = "result") -> str | None:
    """How ``got`` differs from ``want`` (None: the same structure, types, shapes, dtypes,
    and values within RTOL/ATOL, NaN where NaN)."""
    if type(got) is not type(want):
        return f"{where}: {type(got).__name__} != {type(want).__name__}"
    if isinstance(want, dict):
        if list(got) != list(want):
            return f"{where}: keys {list(got)} != {list(want)}"
        return next((m for k in want if (m := mismatch(got[k], want[k], f"{where}[{k!r}]"))),
                    None)
    if isinstance(want, (list, tuple)):
        if len(got) != len(want):
            return f"{where}: length {len(got)} != {len(want)}"
        return next((m for k, (a, b) in enumerate(zip(got, want))
                     if (m := mismatch(a, b, f"{where}[{k}]"))), None)
    if want is None:
        return None
    return leaf_mismatch(got, want, where)


def leaf_mismatch(got: Any, want: Any, where: str = "result") -> str | None:
    """How the array (or number) ``got`` differs from ``want``: shape, dtype, or values
    beyond RTOL/ATOL (NaN where NaN)."""
    a, b = np.asarray(got), np.asarray(want)
    if a.shape != b.shape or a.dtype != b.dtype:
        return f"{where}: {a.dtype}{a.shape} != {b.dtype}{b.shape}"
    if not np.allclose(a, b, rtol=RTOL, atol=ATOL, equal_nan=True):
        with np.errstate(all="ignore"):
            worst = np.nanmax(np.abs(a - b)) if a.size else 0.0
        return f"{where}: values differ (max |got - want| = {worst:.3g})\n" \
               f"got  {np.array2string(a, precision=17)}\nwant {np.array2string(b, precision=17)}"
    return None


def compare(got: Outcome, want: Outcome) -> str | None:
    """Why the backend's outcome is not the NumPy backend's (None: it is)."""
    if want.refused or got.refused:
        if want.refused and got.refused:
            return None
        return f"refused by one backend only: {got.error or want.error!r}"
    if want.error is not None:
        return f"the NumPy backend raised {want.error!r}"
    if got.error is not None:
        return f"raised {type(got.error).__name__}: {str(got.error)[:600]}"
    reference = want.results[0]
    for label, value in (("numpy, second call", want.results[1]),
                         ("first call", got.results[0]), ("second call", got.results[1])):
        problem = mismatch(value, reference)
        if problem is not None:
            return f"{label}: {problem}"
    return None


def kernels(source: str) -> list[ast.FunctionDef]:
    """The fused kernels of a module's source: the ``@njit`` functions that its plain
    functions call (not the ``@njit`` helpers that only kernels call)."""
    tree = ast.parse(source)
    functions = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    jitted = {f.name: f for f in functions
              if any("njit" in ast.unparse(d) for d in f.decorator_list)}
    called = {node.func.id for f in functions if f.name not in jitted
              for node in ast.walk(f) if isinstance(node, ast.Call)
              and isinstance(node.func, ast.Name)}
    return [f for name, f in jitted.items() if name in called]
