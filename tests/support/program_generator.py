"""Random NumPy programs that probe soundness, and the property every one of them must hold.

``generate(seed)`` writes one function ``f`` (plus helper functions) as source text.  It draws
statements from a grammar that covers what makes NumPy gradients hard to get right: aliasing
(``b = a``), views (slices, ``.T``, ``reshape``, ``np.asarray``), in-place operators on arrays
and floats, subscript writes (basic, fancy with duplicate indices, masks), ``out=`` arguments,
``np.add.at``/``np.copyto``, builtins (``float``, ``sum``, ``max``, ``abs``, ``len``, ``list``,
``tuple``), helpers returning tuples or writing into their argument, floats versus 0-d arrays
as arguments, pytree arguments (a dict holding an array and a list; writes into its leaves),
control flow, constructors carrying values (``np.full``, ``np.linspace``,
``np.array([s, 2.0])``), local dicts (literals, comprehensions, ``'w' + str(k)`` keys), nested
defs and lambdas, methods of a global object, method chains, ``np.clip`` with array or keyword
bounds, ``math`` of a ``float()``, and NumPy's in-place ``sort`` and ``view``.  Each
statement is run on the sample arguments as it is drawn and kept only when NumPy runs it and
the values stay finite and small, so every program runs in NumPy.  ``generate(seed,
jumps=True)`` draws other programs, which also hold branches whose assignments are all dead
(or ``pass``) and loops left early (``return`` inside ``for``/``while``, ``break`` inside
either, on a test of the data); the code past a ``return`` must run too.
``generate(seed, objects=True)`` draws a third family: arguments that hold parameters in
objects (a dataclass, a namedtuple, a list of layers, a plain object, also read as a module
global), a ``RandomState`` or ``Generator`` drawn from, callbacks and a settings dict
(``program_objects``), and the statements of ``program_rich`` that use them, guards and
iteration idioms among them.  The grammar lives in
``program_grammar``, running drawn statements in ``program_run``, argument trees and finite
differences in ``program_tree``.

``check(program, folder)`` writes the program into a real module file, imports it and returns
the outcome class: the compiled gradient (``strict=True``) must equal central finite
differences of the plain NumPy function or be refused with a ``CompileError``; the eager
fallback must equal them too (or raise a ``CompileError``/what NumPy raises); and neither may
change the caller's arguments; each run gets copies of them (a generator, the same draws).
"""

from __future__ import annotations

import copy
import importlib.util
import itertools
import re
import sys
import traceback
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from program_grammar import _arguments, _Draw, _statement
from program_objects import NAMES, draw_objects
from program_rich import rich_statement
from program_run import HELPERS, _floats, _run
from program_tree import (
    _flat_gradient,
    _get,
    _paths,
    _same,
    _set,
    draw_states,
    finite_differences,
)

__all__ = ["DEAD_ENDS", "FAILURES", "Program", "check", "finite_differences", "generate", "load",
           "reason_class", "shrink", "_error", "_get", "_paths", "_run", "_same", "_set"]


@dataclass
class Program:
    seed: int
    names: list          # the parameters of ``f``
    args: list           # the arguments (``check`` never lets them change)
    statements: list     # (kind, lines) of the body, in order
    terms: list          # what ``f`` returns: the sum of these
    wrt: tuple
    jumps: bool = False  # drawn with dead branches and loops left early (``return`` inside)
    objects: bool = False  # drawn with objects, generators, callbacks, settings (module imports)

    @property
    def features(self) -> tuple:
        return tuple(kind for kind, _ in self.statements)

    @property
    def source(self) -> str:
        """The module text: numpy, the helpers and ``def f``."""
        body = "\n".join("    " + line for _, lines in self.statements for line in lines)
        imports = ("import functools\nimport itertools\nimport logging\nimport math\n\n"
                   f"import numpy as np\nfrom program_objects import {', '.join(NAMES)}\n"
                   if self.objects else "import math\n\nimport numpy as np\n")
        return (f"{imports}\n\n{HELPERS}\n\n"
                f"def f({', '.join(self.names)}):\n{body or '    pass'}\n"
                f"    return {' + '.join(self.terms) or '0.0'}\n")

    def runs(self) -> bool:
        """Whether NumPy runs it (finite, small values), return expression included."""
        lines = [line for _, block in self.statements for line in block]
        return _run([*lines, f"__out = {' + '.join(self.terms) or '0.0'}"], self.names,
                    self.args, self.jumps) is not None


def generate(seed: int, length: int | None = None, jumps: bool = False,
             objects: bool = False) -> Program:
    """A program of ``length`` statements (4 to 10) drawn from ``seed``; ``jumps``: the
    grammar also draws dead branches and loops left early; ``objects``: arguments holding
    objects, random generators, callbacks and settings, and the statements of
    ``program_rich`` that use them (other programs, each family its own)."""
    d = _Draw([seed, 3] if objects else seed, jumps)
    names, args = _arguments(d.rng)
    wrt = list(range(len(names)))
    if objects:
        more, values, differentiated = draw_objects(d.rng, seed)
        wrt += [len(names) + i for i, yes in enumerate(differentiated) if yes]
        names, args = names + more, args + values
    pool = set(names)
    env = _run([], names, args)
    want = length or int(d.rng.integers(4, 11))
    tries = 0
    while len(d.features) < want and tries < 200:
        tries += 1
        kind, lines, new = (rich_statement(d, env, pool) if objects and d.chance(0.5)
                            else _statement(d, env, pool))
        trial = _run(d.lines + lines, names, args, jumps)
        if trial is None:
            continue
        d.lines += lines
        d.features.append(kind)
        d.blocks.append(lines)
        pool |= {n for n in new if n in trial}
        env = trial
    floats = _floats(env, pool)
    last = [n for n in floats if n not in names][-3:]
    used = list(dict.fromkeys(last + [n for n in names if n in floats]))
    terms = [f"np.sum(np.sin({n}) * {d.const()})" for n in used]
    if "p" in names:
        terms += ['np.sum(p["a"] ** 2)', 'np.sum(p["b"][0] * p["b"][1])']
    terms += [term for name, term in _OBJECT_TERMS if name in names]
    return Program(seed, names, args, list(zip(d.features, d.blocks)), terms, tuple(wrt),
                   jumps, objects)


_OBJECT_TERMS = [("prm", "np.sum(prm.w ** 2) * prm.b"), ("nt", "np.sum(np.cos(nt.u)) * nt.v"),
                 ("layers", "sum(np.sum(np.sin(lay.w)) + np.sum(lay.b ** 2) for lay in layers)")]
"""What ``f`` returns of its differentiated objects (their other uses are drawn)."""


def shrink(program: Program, fails) -> Program:
    """A smaller program that still ``fails`` (a predicate): statements and returned terms
    are dropped one at a time while the failure stays (greedy, to a fixed point)."""
    current = program
    changed = True
    while changed:
        changed = False
        for field_name in ("statements", "terms"):
            items = getattr(current, field_name)
            for k in range(len(items) - 1, -1, -1):
                items = getattr(current, field_name)
                if k >= len(items):
                    continue
                trial = copy.copy(current)
                setattr(trial, field_name, items[:k] + items[k + 1:])
                if trial.runs() and fails(trial):
                    current, changed = trial, True
    return current


# --- the property ---------------------------------------------------------------------------

_modules = itertools.count()


def load(program: Program, folder: Path):
    """Write the program into a module file in ``folder`` and import it; its ``f``."""
    name = f"srcgrad_random_{program.seed}_{next(_modules)}"
    path = Path(folder) / f"{name}.py"
    path.write_text(program.source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module.f



def reason_class(error: BaseException) -> str:
    """A refusal's message with names and numbers taken out, to count refusals by kind."""
    text = str(getattr(error, "message", None) or error).split("\n")[0]
    text = re.sub(r"\b(v|lo|hi|d_v|d_x|d_y|d_s)\d*(_\w+)?\b", "NAME", text)
    text = re.sub(r"'(x|y|s|p|NAME)'", "NAME", text)
    text = re.sub(r"\d+", "N", text)
    return text[:110]


def _where(error: BaseException) -> str:
    frames = traceback.extract_tb(error.__traceback__)
    inside = [f for f in frames if "srcgrad" in f.filename or "/runtime/" in f.filename
              or "/codegen/" in f.filename or f.filename.startswith("<srcgrad")]
    f = (inside or frames)[-1]
    if "srcgrad_random_" in f.filename:
        return "a line of f"
    if f.filename.startswith("<srcgrad"):
        return "generated code"
    return f"{Path(f.filename).name}:{f.lineno}"


def _error(e: BaseException) -> str:
    first = str(e).splitlines()[0][:100] if str(e) else ""
    return f"{type(e).__name__} at {_where(e)}: {first}"


def check(program: Program, folder: Path) -> tuple[str, str]:
    """(outcome, detail).  Outcomes: ``correct``, ``refused`` (a CompileError, the eager
    fallback right), ``inconclusive`` (a kink next to the point), and the failures in
    ``FAILURES``: ``wrong gradient``/``internal error`` (compiled, strict), ``mutated
    argument`` (compiled or fallback), ``wrong draws`` (a generator argument left elsewhere
    than NumPy's run leaves it), ``fallback wrong`` (eager != finite differences),
    ``fallback error`` (refused, and the eager fallback raises what NumPy does not).
    ``correct`` carries a detail when the eager engine alone fails (compiled was right)."""
    import srcgrad
    from srcgrad.transforms.fallback import eager_transform

    fn = load(program, folder)
    saved = program.args               # stays as drawn: the caller's copies are compared to it
    args = copy.deepcopy(saved)        # each run its own copy: a generator draws the same
    fd = finite_differences(fn, args, 1e-6, program.wrt)
    fd2 = finite_differences(fn, args, 1e-5, program.wrt)
    if any(not np.allclose(a, b, rtol=1e-3, atol=1e-4) for a, b in zip(fd, fd2)):
        return "inconclusive", "a kink within 1e-5 of the point"

    # central differences of a large value carry its rounding: |f| * 1e-16 / 1e-6, and more
    plain = copy.deepcopy(args)
    atol = 1e-5 + 1e-9 * abs(float(fn(*plain)))
    drawn = draw_states(plain)           # a generator argument: where NumPy's run leaves it

    def agrees(grads) -> bool:
        got = _flat_gradient(grads, [args[i] for i in program.wrt])
        return len(got) == len(fd) and all(
            g.shape == w.shape and np.allclose(g, w, rtol=1e-4, atol=atol)
            for g, w in zip(got, fd))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            grads = srcgrad.grad(fn, wrt=program.wrt, strict=True)(*args)
            compiled = ("correct", "") if agrees(grads) else (
                "wrong gradient", "compiled != finite differences")
        except srcgrad.CompileError as e:
            compiled = ("refused", reason_class(e))
            if compiled[1].startswith("internal error"):     # a bug, even if wrapped
                compiled = ("internal error", "wrapped in a CompileError: " + compiled[1])
        except Exception as e:                   # NumPy ran this very call without error
            compiled = ("internal error", _error(e))
        if not _same(args, saved):
            return "mutated argument", "by the compiled gradient"
        if compiled[0] in ("correct", "wrong gradient") and draw_states(args) != drawn:
            return "wrong draws", "the compiled run drew other numbers than NumPy's"
        args = copy.deepcopy(saved)
        try:
            eager = eager_transform(fn, "grad", list(args), program.wrt, False)
            fallback = ("ok", "") if agrees(eager) else ("wrong", "eager != finite differences")
        except srcgrad.CompileError as e:
            fallback = ("refused", reason_class(e))
        except Exception as e:
            fallback = ("error", _error(e))
        if not _same(args, saved):
            return "mutated argument", "by the eager fallback"
        if fallback[0] in ("ok", "wrong") and draw_states(args) != drawn:
            return "wrong draws", "the eager run drew other numbers than NumPy's"
    if fallback[0] == "wrong":
        return "fallback wrong", fallback[1] + (" (compiled right)"
                                                if compiled[0] == "correct" else "")
    if compiled[0] == "refused" and fallback[0] == "error":
        return "fallback error", fallback[1]
    if compiled[0] == "correct" and fallback[0] == "error":
        return "correct", "eager alone: " + fallback[1]
    return compiled


FAILURES = ("wrong gradient", "internal error", "mutated argument", "fallback wrong",
            "wrong draws")
"""Outcomes that break the property (CI fails on them)."""
DEAD_ENDS = ("fallback error",)
"""Refused, and then the fallback raises: counted and reported, not a CI failure."""
