"""A long random-program campaign: thousands of generated NumPy programs, each checked for
the soundness property of ``tests/support/program_generator.py`` (the compiled gradient
equals finite differences or is refused with a CompileError, the eager fallback likewise, and the
caller's arguments are never changed).

Prints the counts: compiled-correct, refused (by reason class), inconclusive (a kink next to
the point), wrong gradient, internal error, mutated argument and the fallback's failures; each
failing program is written to ``--out`` (``<outcome>/seed_<n>.py``, with the arguments and
the detail in a comment) for reproduction.

``--transform jvp`` checks the compiled jvp along random tangents instead, and ``--transform
hvp`` the Hessian-vector products ``jvp(grad(f, wrt=i))`` and ``hessian(f, wrt=i)``
(``tests/support/program_forward.py``), counted the same way; ``jvp-tuple`` is the jvp of the
programs returning their terms unsummed (a tuple of arrays).

``--jumps`` and ``--objects`` draw the other families of programs (dead branches and early
exits; objects, random generators, callbacks and settings as arguments).

Run: ``python benchmarks/random_campaign.py --count 3000 [--start 0] [--out folder]
[--transform grad|jvp|jvp-tuple|hvp] [--jumps] [--objects]``; ``--count 300 --no-shrink
--known`` prints the seeds that ``tests/sweeps/test_random_soundness.py`` (or
``test_random_forward.py``) should mark as known failures (its ``KNOWN``).
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import functools
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "support"))

import program_forward  # noqa: E402
import program_generator  # noqa: E402
from program_generator import generate, shrink  # noqa: E402

TRANSFORMS = {   # name: (the check, its failing outcomes, its dead ends, the test that lists them)
    "grad": (program_generator.check, program_generator.FAILURES, program_generator.DEAD_ENDS,
             "test_random_soundness.py"),
    "jvp": (program_forward.check_jvp, program_forward.FAILURES, program_forward.DEAD_ENDS,
            "test_random_forward.py"),
    "jvp-tuple": (lambda program, folder: program_forward.check_jvp(
        program_forward.vector(program), folder), program_forward.FAILURES,
        program_forward.DEAD_ENDS, "test_random_forward.py"),
    "hvp": (program_forward.check_hvp, program_forward.FAILURES, program_forward.DEAD_ENDS,
            "test_random_forward.py"),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=2000)
    parser.add_argument("--start", type=int, default=0, help="first seed")
    parser.add_argument("--out", help="folder for the failing programs (default: "
                        "random_campaign_failures, with _<transform> after it but for grad)")
    parser.add_argument("--top", type=int, default=25, help="reason classes to print")
    parser.add_argument("--no-shrink", action="store_true",
                        help="save failing programs as drawn (default: shrink them first)")
    parser.add_argument("--known", action="store_true",
                        help="also print the failing seeds as test_random_soundness.KNOWN")
    parser.add_argument("--transform", choices=sorted(TRANSFORMS), default="grad",
                        help="what is checked (default: the compiled gradient)")
    parser.add_argument("--jumps", action="store_true",
                        help="programs with dead branches and loops left early")
    parser.add_argument("--objects", action="store_true",
                        help="programs taking objects, random generators, callbacks and "
                        "settings (the gradient only)")
    options = parser.parse_args(argv)
    if options.objects and options.transform != "grad":
        parser.error("--objects programs are checked for the gradient only")
    check, FAILURES, DEAD_ENDS, listed_in = TRANSFORMS[options.transform]
    out = Path(options.out or "random_campaign_failures" + (
        "" if options.transform == "grad" else "_" + options.transform))
    counts: collections.Counter = collections.Counter()
    reasons: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    failed: dict[int, tuple[str, str]] = {}
    started = time.perf_counter()
    np.seterr(all="ignore")
    with tempfile.TemporaryDirectory() as folder:
        for seed in range(options.start, options.start + options.count):
            program = generate(seed, jumps=options.jumps, objects=options.objects)
            try:
                outcome, detail = check(program, Path(folder))
            except Exception as e:                      # the harness itself: say so, go on
                outcome, detail = "harness error", f"{type(e).__name__}: {e}"
            counts[outcome] += 1
            reasons[outcome][detail] += 1
            if outcome in FAILURES:
                failed[seed] = (outcome, detail)
            if outcome in FAILURES + DEAD_ENDS:
                if not options.no_shrink:
                    program = shrink(program, lambda p, o=outcome: _outcome(check, p, folder) == o)
                save(out, outcome, program, detail)
            elif outcome == "harness error":
                save(out, outcome, program, detail)
    elapsed = time.perf_counter() - started
    total = sum(counts.values())
    print(f"{options.transform}: {total} programs (seeds {options.start}.."
          f"{options.start + total - 1}) in {elapsed:.0f} s")
    order = ["correct", "refused", "inconclusive", *FAILURES, *DEAD_ENDS, "harness error"]
    for outcome in order:
        if counts[outcome]:
            print(f"  {outcome:18} {counts[outcome]:6}  ({100 * counts[outcome] / total:.1f}%)")
    for outcome in ["refused", *FAILURES, *DEAD_ENDS, "harness error", "correct"]:
        if reasons[outcome]:
            print(f"\n{outcome}, by class:")
            for detail, n in reasons[outcome].most_common(options.top):
                if detail or outcome != "correct":
                    print(f"  {n:5}  {detail}")
    if options.known:
        print("\nKNOWN = {")
        for seed, (outcome, detail) in sorted(failed.items()):
            print(f"    {seed}: {(listed_in + ': ' + outcome + ': ' + detail)[:95]!r},")
        print("}")
    failing = sum(counts[o] for o in FAILURES)
    if failing:
        print(f"\n{failing} failing programs written to {out}/")
    return 1 if failing else 0


def _outcome(check, program, folder: str) -> str:
    try:
        return check(program, Path(folder))[0]
    except Exception:
        return "harness error"


def save(out: Path, outcome: str, program, detail: str) -> None:
    folder = out / outcome.replace(" ", "_")
    folder.mkdir(parents=True, exist_ok=True)
    args = ", ".join(_literal(a, program.seed) for a in program.args)
    text = (f"# outcome: {outcome}: {detail}\n# features: {', '.join(program.features)}\n"
            f"{program.source}\n\nARGS = [{args}]\nWRT = {program.wrt!r}\n")
    (folder / f"seed_{program.seed}.py").write_text(text)


def _literal(value, seed: int = 0) -> str:
    np.set_printoptions(precision=17, floatmode="unique")
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {_literal(v, seed)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_literal(v, seed) for v in value) + "]"
    if isinstance(value, np.random.RandomState):        # as program_objects draws them
        return f"np.random.RandomState({seed % 10007})"
    if isinstance(value, np.random.Generator):
        return f"np.random.default_rng({seed % 10007})"
    if dataclasses.is_dataclass(value) or hasattr(value, "_fields"):
        fields = [f.name for f in dataclasses.fields(value)] if dataclasses.is_dataclass(
            value) else value._fields
        return f"{type(value).__name__}(" + ", ".join(
            f"{k}={_literal(getattr(value, k), seed)}" for k in fields) + ")"
    if isinstance(value, np.ufunc):
        return f"np.{value.__name__}"
    if isinstance(value, functools.partial):
        return f"functools.partial({_literal(value.func, seed)}" + "".join(
            f", {k}={_literal(v, seed)}" for k, v in value.keywords.items()) + ")"
    if callable(value) and hasattr(value, "__name__"):     # a function of program_objects
        return value.__name__
    if hasattr(value, "__dict__") and not callable(value):     # a plain object (Affine)
        return f"{type(value).__name__}(" + ", ".join(
            f"{_literal(v, seed)}" for v in vars(value).values()) + ")"
    if isinstance(value, np.ndarray):
        return f"np.array({value.tolist()!r})"
    if isinstance(value, np.floating):
        return f"np.float64({float(value)!r})"
    return repr(value)


if __name__ == "__main__":
    raise SystemExit(main())
