"""Gradients over Dask arrays equal the NumPy backend's: the whole rule table, the
control-flow and list programs and random programs of tests/support/parity_cases.py, pytrees of
parameters with Dask data, and control flow that reads a reduced Dask value
(tests/support/dask_cases.py).

Each case runs with every array a Dask array chunked by rows, and again with the first
argument NumPy and the others Dask; the transform is called twice on fresh arguments and its
results computed with Dask's synchronous scheduler (in-process: fast and deterministic). A
case passes when both results equal the NumPy backend's (structure, shapes, dtypes, values to
rounding) or when the Dask backend refuses it with a CompileError that is not an internal
error (Dask lacks the function, or cannot do it lazily).

So that refusing everything, or computing everything eagerly, cannot pass: a floor of the rule
table must run on Dask, a floor of each family's results must be Dask arrays before
computing, and with every argument Dask no array of a result may be a NumPy array.

Tolerances are parity_cases' (rtol 1e-10, atol 1e-12): Dask sums chunk by chunk, in another
order than NumPy, which on these small float64 arrays moves values by a few ulps (at most 4e-14
relative, 1e-4 of the tolerance, over the passing cases when this was written; most leaves
are equal bit for bit).
"""

from __future__ import annotations

import pytest
from dask_cases import (
    DASK_CASES,
    VARIANTS,
    DaskOutcome,
    applies,
    case_problems,
    compare_dask,
    describe_dask,
    run_dask,
)
from parity_cases import CATALOGUE, Case, Outcome, describe, run

RANDOM_SEEDS = range(0, 120, 12)
"""A tenth of parity_cases' 120 random programs: they are the slowest family on Dask, and
test_backend_parity.py runs all 120 on numba and CuPy."""

NAMES = [name for name in {**CATALOGUE, **DASK_CASES}
         if not name.startswith("random:") or int(name[7:]) in RANDOM_SEEDS]

RAN_FLOOR = 150
"""How many rule-table primitives must give NumPy's gradient on Dask arrays rather than be
refused. The primitives' own functions run lazily on Dask arrays for 189 of the 280 (the rest
compute, like ``math.sin`` of a 0-d array, or Dask lacks them or their keyword arguments) when
this was written."""

LAZY_FLOORS = {"rule": 150, "control": 20, "list": 12, "pytree": 4, "dask-control": 6}
"""How many cases of a family must have given Dask arrays, not computed values."""

COMPUTES_WHILE_BUILDING = {f"rule:{name}" for name in (
    # Python's math functions and conversions to Python numbers read the value
    [f"math_{f}" for f in "acos acosh asin asinh atan atan2 atanh cos cosh erf erfc exp expm1 "
     "fabs gamma hypot lgamma log log10 log1p log2 pow sin sinh sqrt tan tanh".split()]
    + "to_float to_scalar to_device".split()
    # SciPy functions that are not ufuncs, NumPy's vectorize, helpers that read values
    + "cho_factor_c continuous digamma dirichlet gelu logsumexp_b multigammaln normal_cdf "
      "poisson polygamma signal_convolve solve_triangular".split()
    + "logsumexp_signed scipy_block_diag scipy_cholesky scipy_expm scipy_inv "
      "scipy_lstsq_residues scipy_lstsq_s scipy_lu_factor_lu scipy_lu_solve scipy_norm "
      "scipy_pinv scipy_solve scipy_svd_s signal_correlation".split())}
"""The rule-table cases whose gradient computes Dask values while it is built (each a pass
over the data; docs/dask.md lists why). Every other rule-table case builds its gradient
without computing anything."""


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """Where random programs are written as modules."""
    return tmp_path_factory.mktemp("dask_parity")


@pytest.fixture(scope="module")
def built(folder):
    cases: dict[str, Case] = {}

    def case(name: str) -> Case:
        if name not in cases:
            cases[name] = {**CATALOGUE, **DASK_CASES}[name](folder)
        return cases[name]
    return case


@pytest.fixture(scope="module")
def sweep(built) -> dict[tuple[str, str], tuple[DaskOutcome, Outcome]]:
    """Every case and variant that applies: the Dask outcome and the NumPy backend's."""
    outcomes = {}
    for name in NAMES:
        case = built(name)
        want = run(case, "numpy")
        for variant in VARIANTS:
            if applies(case, variant):
                outcomes[name, variant] = run_dask(case, variant), want
    return outcomes


@pytest.mark.parametrize("name", NAMES)
def test_dask_gradient_equals_numpys(name, sweep):
    assert (name, "dask") in sweep, "the case has no array to make a Dask array"
    problems = case_problems({variant: sweep[name, variant] for variant in VARIANTS
                              if (name, variant) in sweep}, name in COMPUTES_WHILE_BUILDING)
    text = describe(name) if name in CATALOGUE else describe_dask(name)
    assert not problems, f"{name}\n{text}\n" + "\n".join(problems)


def test_enough_of_the_rule_table_ran_on_dask(sweep):
    ran = {name for (name, variant), (got, want) in sweep.items()
           if variant == "dask" and name.startswith("rule:") and not got.refused
           and compare_dask(got, want, variant) is None}
    refused = sorted(name for (name, variant), (got, _) in sweep.items()
                     if variant == "dask" and name.startswith("rule:") and got.refused)
    assert len(ran) >= RAN_FLOOR, (len(ran), "refused:", refused)


def test_results_were_dask_arrays_before_computing(sweep):
    for family, floor in LAZY_FLOORS.items():
        lazy = {name for (name, _), (got, _) in sweep.items()
                if name.startswith(f"{family}:") and got.lazy}
        assert len(lazy) >= floor, (family, len(lazy))


def test_building_a_rule_tables_gradient_computes_nothing(sweep):
    """A scheduler that counts its calls runs while the gradient is built: nothing computes
    but the known cases (and those may not grow unnoticed: each still computes)."""
    computed = {name for (name, variant), (got, _) in sweep.items()
                if variant == "dask" and name.startswith("rule:") and got.computes}
    assert computed == COMPUTES_WHILE_BUILDING, (sorted(computed - COMPUTES_WHILE_BUILDING),
                                                 sorted(COMPUTES_WHILE_BUILDING - computed))
