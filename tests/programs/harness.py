"""Runs the corpus of realistic programs through srcgrad and classifies each one.

Every module ``tests/programs/<name>.py`` (other than this harness, ``report.py``, the tests
and ``conftest.py``) is one program written as its author would write it: a module docstring
whose first line names the style, ``import numpy as np`` at the top, and a module-level
``CASE = dict(f=..., args=..., wrt=...)``:

- ``f``: the function to differentiate (returns a scalar loss);
- ``args``: a function of no arguments returning a fresh tuple of positional arguments
  (seeded: every call returns equal values, a ``RandomState`` in its initial state);
- ``wrt``: what ``srcgrad.grad`` is given (an index, a name, or a tuple of them).

For each program the harness runs

1. strict mode: ``srcgrad.grad(f, wrt=wrt, strict=True)(*args())``: a gradient, a
   ``CompileError`` (its message is kept: does it name ``file.py:line``?), or any other
   exception (an internal error: the plain function runs without one);
2. default mode, with warnings recorded: a gradient (compiled, or on the eager engine after a
   ``FallbackWarning``) or an exception;
3. every gradient against central finite differences (float64) and, where it runs, an oracle:
   the same function with the module's ``np`` (and SciPy names) rebound to ``autograd.numpy``
   (``autograd.scipy``), else ``jax.numpy``;
4. the caller's arguments after each call against what the plain function leaves in them (a
   deep copy compared; a ``RandomState`` argument is allowed to advance).

Outcome per program, the worst that applies: ``internal``, ``WRONG``, ``mutated``, then
``compiled`` (strict mode gave the right gradient), ``fallback-correct`` (strict refused, the
default mode gave the right gradient) or ``refused`` (both refused: a dead end).

``python -m tests.programs.harness`` (from the repository root) prints the table and totals.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import importlib.util
import inspect
import io
import re
import sys
import time
import traceback
import types
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

import srcgrad

HERE = Path(__file__).resolve().parent
NOT_PROGRAMS = {"harness", "report", "conftest", "test_corpus", "__init__"}
PACKAGE = "srcgrad_corpus_programs"
LOCATION = re.compile(r"[\w./-]+\.py:\d+|File \"[^\"]+\.py\", line \d+")
FD_EPS = 1e-6
RTOL = 1e-4
ATOL = 1e-6          # relative to the largest finite-difference entry (at least 1)


# ----------------------------------------------------------------------------- loading

def program_names() -> list[str]:
    return sorted(p.stem for p in HERE.glob("*.py")
                  if p.stem not in NOT_PROGRAMS and not p.stem.startswith("_"))


def load(name: str) -> types.ModuleType:
    """Import ``tests/programs/<name>.py`` under a unique name (kept in ``sys.modules``:
    dataclasses and pickling look their module up there)."""
    full = f"{PACKAGE}.{name}"
    if full in sys.modules:
        return sys.modules[full]
    if PACKAGE not in sys.modules:
        package = types.ModuleType(PACKAGE)
        package.__path__ = [str(HERE)]
        sys.modules[PACKAGE] = package
    spec = importlib.util.spec_from_file_location(full, HERE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[full] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[full]
        raise
    return module


def style_of(module: types.ModuleType) -> str:
    doc = (module.__doc__ or "").strip()
    return doc.splitlines()[0].rstrip(".") if doc else "?"


# ----------------------------------------------------------------------------- pytrees

def _is_namedtuple(x) -> bool:
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def flatten(tree) -> tuple[list, Any]:
    """(leaves, rebuild): the float leaves of dicts, lists, tuples, namedtuples and
    dataclasses, and a function building the same structure from new leaves."""
    if isinstance(tree, dict):            # leaves in sorted key order, as JAX returns them
        keys = sorted(tree, key=repr)
        parts = [flatten(tree[k]) for k in keys]
        return _join(parts, lambda vals: type(tree)(
            (k, dict(zip(keys, vals))[k]) for k in tree))
    if _is_namedtuple(tree):
        parts = [flatten(v) for v in tree]
        return _join(parts, lambda vals: type(tree)(*vals))
    if isinstance(tree, (list, tuple)):
        parts = [flatten(v) for v in tree]
        return _join(parts, lambda vals: type(tree)(vals))
    if dataclasses.is_dataclass(tree) and not isinstance(tree, type):
        names = [f.name for f in dataclasses.fields(tree)]
        parts = [flatten(getattr(tree, n)) for n in names]
        return _join(parts, lambda vals: dataclasses.replace(tree, **dict(zip(names, vals))))
    return [tree], lambda vals: vals[0]


def _join(parts, build):
    leaves, sizes = [], []
    for sub, _ in parts:
        leaves.extend(sub)
        sizes.append(len(sub))

    def rebuild(vals):
        out, at = [], 0
        for (_, sub_rebuild), n in zip(parts, sizes):
            out.append(sub_rebuild(vals[at:at + n]))
            at += n
        return build(out)
    return leaves, rebuild


# ----------------------------------------------------------------------------- the case

@dataclass
class Case:
    name: str
    module: types.ModuleType
    f: Any
    make_args: Any
    wrt: Any
    positions: list[int]          # the argument index of each entry of wrt
    single: bool                  # wrt was one index/name: the gradient is not a tuple
    rtol: float = RTOL


def case_of(name: str) -> Case:
    module = load(name)
    spec = module.CASE
    f, wrt = spec["f"], spec.get("wrt", 0)
    single = not isinstance(wrt, (tuple, list))
    names = list(inspect.signature(f).parameters)
    positions = [w if isinstance(w, int) else names.index(w)
                 for w in ([wrt] if single else wrt)]
    return Case(name, module, f, spec["args"], wrt, positions, single,
                spec.get("rtol", RTOL))


def loss_value(f, args) -> float:
    return float(f(*args))


def finite_differences(case: Case) -> list[list[np.ndarray]]:
    """For each differentiated argument, the central differences of each of its leaves."""
    grads = []
    for pos in case.positions:
        leaves, _ = flatten(case.make_args()[pos])
        per_leaf = []
        for k, leaf in enumerate(leaves):
            base = np.asarray(leaf, dtype=np.float64)
            g = np.zeros(base.shape)
            for j in np.ndindex(base.shape):
                vals = []
                for step in (FD_EPS, -FD_EPS):
                    args = list(case.make_args())
                    new_leaves, rebuild = flatten(args[pos])
                    moved = np.array(base, dtype=np.float64)
                    moved[j] += step
                    new_leaves = list(new_leaves)
                    new_leaves[k] = float(moved) if np.ndim(leaf) == 0 and not isinstance(
                        leaf, np.ndarray) else moved
                    args[pos] = rebuild(new_leaves)
                    vals.append(loss_value(case.f, args))
                g[j] = (vals[0] - vals[1]) / (2 * FD_EPS)
            per_leaf.append(g)
        grads.append(per_leaf)
    return grads


def leaves_of_gradient(case: Case, got) -> list[list[np.ndarray]]:
    """The gradient srcgrad returned, as leaves per differentiated argument."""
    per_arg = [got] if case.single else list(got)
    if len(per_arg) != len(case.positions):
        raise _Mismatch(f"{len(per_arg)} gradients for {len(case.positions)} arguments")
    return [[np.asarray(leaf) for leaf in flatten(g)[0]] for g in per_arg]


class _Mismatch(Exception):
    pass


def disagreement(got: list[list[np.ndarray]], want: list[list[np.ndarray]],
                 rtol: float = RTOL) -> str | None:
    """None when ``got`` matches ``want`` leaf by leaf, else a short description."""
    if [len(g) for g in got] != [len(w) for w in want]:
        return f"structure: {[len(g) for g in got]} leaves, expected {[len(w) for w in want]}"
    for a, (gs, ws) in enumerate(zip(got, want)):
        for k, (g, w) in enumerate(zip(gs, ws)):
            if g.shape != w.shape:
                return f"argument {a} leaf {k}: shape {g.shape}, expected {w.shape}"
            if not np.issubdtype(g.dtype, np.floating):
                return f"argument {a} leaf {k}: dtype {g.dtype}"
            scale = max(1.0, float(np.max(np.abs(w), initial=0.0)))
            if not np.allclose(g, w, rtol=rtol, atol=ATOL * scale):
                err = float(np.max(np.abs(g - w)))
                return f"argument {a} leaf {k}: max error {err:.3g} (scale {scale:.3g})"
    return None


# ----------------------------------------------------------------------------- the oracle

def _oracle_bindings(module: types.ModuleType, flavour: str) -> dict[str, Any]:
    """The module's globals that name NumPy/SciPy, rebound to autograd's or JAX's."""
    import scipy.integrate
    import scipy.linalg
    import scipy.special
    import scipy.stats
    if flavour == "autograd":
        import autograd.numpy as xnp
        import autograd.scipy.integrate as autograd_integrate
        import autograd.scipy.linalg as xla
        import autograd.scipy.special as xsp
        import autograd.scipy.stats as xst
        from autograd.builtins import tuple as traced_tuple

        def odeint(func, y0, t, args=(), **kwargs):   # autograd follows args= in its own tuple
            return autograd_integrate.odeint(func, y0, t, traced_tuple(args), **kwargs)
        xint = types.SimpleNamespace(odeint=odeint)
    else:
        import jax.numpy as xnp
        import jax.scipy.linalg as xla
        import jax.scipy.special as xsp
        import jax.scipy.stats as xst
        xint = types.SimpleNamespace()
    xscipy = types.SimpleNamespace(special=xsp, linalg=xla, stats=xst, integrate=xint)
    modules = [(np, xnp), (np.linalg, xnp.linalg), (scipy.special, xsp),
               (scipy.linalg, xla), (scipy.stats, xst), (scipy.integrate, xint)]
    import scipy as scipy_top
    out = {}
    for name, value in vars(module).items():
        if name.startswith("__"):
            continue
        if value is scipy_top:
            out[name] = xscipy
            continue
        for real, fake in modules:
            if value is real:
                out[name] = fake
                break
            attr = getattr(value, "__name__", None) or getattr(value, "name", None)
            if (isinstance(attr, str) and getattr(real, attr, None) is value
                    and hasattr(fake, attr)):
                out[name] = getattr(fake, attr)
                break
    return out


@contextlib.contextmanager
def _rebound(module, bindings):
    saved = {k: module.__dict__[k] for k in bindings}
    module.__dict__.update(bindings)
    try:
        yield
    finally:
        module.__dict__.update(saved)


def oracle(case: Case, fd) -> tuple[str, str | None]:
    """('autograd'|'jax'|'n/a', disagreement with the finite differences or None): the first
    oracle that runs and agrees, else the first that runs (autograd's norm(axis, keepdims)
    gradient, for one, is wrong)."""
    first = None
    for flavour in ("autograd", "jax"):
        try:
            bindings = _oracle_bindings(case.module, flavour)
            arguments = [case.make_args() for _ in case.positions]
            with _rebound(case.module, bindings), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                got = _oracle_gradient(case, flavour, arguments)
        except Exception:
            continue
        bad = disagreement(got, fd, case.rtol)
        if bad is None:
            return flavour, None
        first = first or (flavour, bad)
    return first or ("n/a", None)


def _oracle_gradient(case: Case, flavour: str, arguments):
    out = []
    for pos, args in zip(case.positions, arguments):
        if flavour == "autograd":
            import autograd
            g = autograd.grad(case.f, pos)(*args)
        else:
            import jax
            with jax.enable_x64(True):
                g = jax.grad(case.f, argnums=pos)(*args)
                g = jax.tree_util.tree_map(np.asarray, g)
        out.append([np.asarray(leaf, dtype=np.float64) for leaf in flatten(g)[0]])
    return out


# ----------------------------------------------------------------------------- effects

def same(a, b) -> bool:
    """Deep equality of argument values (arrays to 1e-12, a RandomState always equal)."""
    if isinstance(a, (np.random.RandomState, np.random.Generator)):
        return type(a) is type(b)
    if type(a) is not type(b):
        return False
    if isinstance(a, np.ndarray):
        return (a.shape == b.shape and a.dtype == b.dtype
                and bool(np.allclose(a, b, rtol=1e-12, atol=1e-14, equal_nan=True)
                         if np.issubdtype(a.dtype, np.number) else np.array_equal(a, b)))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, (float, int, str, bool, complex, type(None), np.generic)):
        return a == b or (a != a and b != b)
    if dataclasses.is_dataclass(a) or hasattr(a, "__dict__") and not callable(a):
        return same(vars(a), vars(b))
    return a is b or a == b


# ----------------------------------------------------------------------------- one mode

@dataclass
class ModeResult:
    status: str                   # ok, refused, internal, wrong, mutated
    fallback: bool = False        # the default mode ran on the eager engine
    message: str = ""             # the CompileError / warning / exception / disagreement
    located: bool = False         # the message names file.py:line
    effects: str = ""             # a write of the plain function not made, or a gradient
    #                               structure that is not the argument's (noted, not failed)


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""


DOCUMENTED_TYPE_REFUSAL = "srcgrad differentiates real floating point values only"
"""The README's refusal of a differentiated argument that is not floats (or a pytree of them)."""


def _internal(e: Exception) -> ModeResult:
    tb = traceback.extract_tb(e.__traceback__)[-1]
    where = f"{Path(tb.filename).name}:{tb.lineno}"
    return ModeResult("internal", message=f"{type(e).__name__}: {e} (at {where})")


def run_mode(case: Case, strict: bool, fd, plain_after) -> ModeResult:
    args = case.make_args()
    before = copy.deepcopy(args)
    fallback, reason = False, ""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            g = srcgrad.grad(case.f, wrt=case.wrt, strict=strict)
            got = g(*args)
        except srcgrad.CompileError as e:
            msg = str(e)         # "internal error: ... please report it" is a bug, not a refusal
            status = "internal" if msg.startswith("internal error") else "refused"
            return ModeResult(status, message=msg, located=bool(LOCATION.search(msg)))
        except TypeError as e:
            if DOCUMENTED_TYPE_REFUSAL not in str(e):
                return _internal(e)
            return ModeResult("refused", message=str(e), located=bool(LOCATION.search(str(e))))
        except Exception as e:
            return _internal(e)
    for w in caught:
        if issubclass(w.category, srcgrad.FallbackWarning):
            fallback, reason = True, str(w.message)
    result = ModeResult("ok", fallback=fallback, message=reason,
                        located=bool(LOCATION.search(reason)))
    # the caller's arguments: as the plain function leaves them, or untouched
    if not same(args, plain_after):
        if same(args, before):
            result.effects = "the plain function's writes into its arguments are not made"
        else:
            result.status = "mutated"
            result.message = "the arguments differ from what the plain function leaves"
            return result
    try:
        bad = disagreement(leaves_of_gradient(case, got), fd, case.rtol)
    except _Mismatch as e:
        bad = str(e)
    if bad is not None:
        result.status, result.message = "wrong", bad
        return result
    wanted = [case.make_args()[pos] for pos in case.positions]
    given = [got] if case.single else list(got)
    for w, g in zip(wanted, given):
        if structure(w) != structure(g):
            result.effects = (f"the gradient's structure {structure(g)} is not the argument's "
                              f"{structure(w)}")
    return result


# ----------------------------------------------------------------------------- one program

@dataclass
class Result:
    name: str
    style: str
    outcome: str
    strict: ModeResult
    default: ModeResult
    oracle: str = "n/a"
    oracle_note: str = ""
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)

    @property
    def reason(self) -> str:
        """The message that explains the outcome (the strict refusal first)."""
        for mode in (self.strict, self.default):
            if mode.status != "ok" or mode.fallback:
                return _first_line(mode.message)
        return ""

    @property
    def where(self) -> str:
        """``file.py:line`` of the explaining message, or ''."""
        for mode in (self.strict, self.default):
            if mode.status != "ok" or mode.fallback:
                found = LOCATION.search(mode.message)
                if not found:
                    return ""
                text = found.group(0)
                m = re.match(r'File "([^"]+)", line (\d+)', text)
                return f"{Path(m.group(1)).name}:{m.group(2)}" if m else Path(text).name
        return ""

    @property
    def located(self) -> bool:
        for mode in (self.strict, self.default):
            if mode.status != "ok" or mode.fallback:
                return mode.located
        return True


def structure(tree) -> Any:
    """The containers of a pytree, without its leaves (to compare a gradient's with its
    argument's: the README promises the same structure)."""
    if isinstance(tree, dict):
        return (type(tree).__name__, {k: structure(v) for k, v in tree.items()})
    if isinstance(tree, (list, tuple)):
        return (type(tree).__name__, [structure(v) for v in tree])
    if dataclasses.is_dataclass(tree) and not isinstance(tree, type):
        return (type(tree).__name__, {f.name: structure(getattr(tree, f.name))
                                      for f in dataclasses.fields(tree)})
    return "leaf"


def run_program(name: str) -> Result:
    """Run one program (its prints are swallowed)."""
    with contextlib.redirect_stdout(io.StringIO()):
        return _run_program(name)


def _run_program(name: str) -> Result:
    start = time.perf_counter()
    case = case_of(name)
    style = style_of(case.module)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plain_args = case.make_args()
        loss_value(case.f, plain_args)          # the plain program runs
        fd = finite_differences(case)
    strict = run_mode(case, True, fd, plain_args)
    default = run_mode(case, False, fd, plain_args)
    which, note = oracle(case, fd)
    modes = (strict, default)
    if any(m.status == "internal" for m in modes):
        outcome = "internal"
    elif any(m.status == "wrong" for m in modes):
        outcome = "WRONG"
    elif any(m.status == "mutated" for m in modes):
        outcome = "mutated"
    elif strict.status == "ok":
        outcome = "compiled"
    elif default.status == "ok":
        outcome = "fallback-correct"
    else:
        outcome = "refused"
    notes = [m.effects for m in modes if m.effects]
    result = Result(name, style, outcome, strict, default, which, note or "",
                    time.perf_counter() - start, sorted(set(notes)))
    if note:
        result.notes.append(f"the oracle ({which}) disagrees with finite differences: {note}")
    return result


def run_all(names: list[str] | None = None) -> list[Result]:
    return [run_program(n) for n in (names or program_names())]


# ----------------------------------------------------------------------------- the table

def strict_label(r: Result) -> str:
    return {"ok": "compiled"}.get(r.strict.status, r.strict.status)


def default_label(r: Result) -> str:
    m = r.default
    if m.status == "ok":
        return "fallback" if m.fallback else "compiled"
    return m.status


def table(results: list[Result], width: int = 190) -> str:
    rows = [("program", "style", "strict", "default", "outcome", "oracle", "where", "reason")]
    for r in results:
        where = r.where or ("no file:line" if r.reason else "")
        rows.append((r.name, r.style[:32], strict_label(r), default_label(r), r.outcome,
                     r.oracle, where, r.reason))
    widths = [max(len(row[i]) for row in rows) for i in range(7)]
    lines = []
    for row in rows:
        head = "  ".join(c.ljust(w) for c, w in zip(row, widths))
        line = f"{head}  {row[7]}"
        lines.append(line if len(line) <= width else line[:width - 3] + "...")
    lines.insert(1, "-" * min(width, max(len(x) for x in lines)))
    return "\n".join(lines)


def totals(results: list[Result]) -> dict[str, Any]:
    n = len(results)
    count = lambda *kinds: sum(r.outcome in kinds for r in results)
    return {
        "programs": n,
        "compiled strict": count("compiled"),
        "compiled strict %": round(100 * count("compiled") / n, 1),
        "correct in default mode": count("compiled", "fallback-correct"),
        "correct in default mode %": round(100 * count("compiled", "fallback-correct") / n, 1),
        "fallback-correct": count("fallback-correct"),
        "refused": count("refused"),
        "wrong": count("WRONG"),
        "internal": count("internal"),
        "mutated": count("mutated"),
        "refusals naming file:line": sum(r.located for r in results
                                         if r.outcome in ("fallback-correct", "refused")),
    }


def report(results: list[Result], width: int = 190) -> str:
    out = [table(results, width), ""]
    for key, value in totals(results).items():
        out.append(f"{key:28s} {value}")
    details = [r for r in results if r.notes or r.outcome in ("WRONG", "internal", "mutated",
                                                              "refused")]
    if details:
        out += ["", "details:"]
        for r in details:
            for label, mode in (("strict", r.strict), ("default", r.default)):
                if mode.status != "ok" or mode.fallback:
                    out.append(f"  {r.name} [{label}] {mode.status}: {_first_line(mode.message)}")
            for note in r.notes:
                out.append(f"  {r.name} note: {note}")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    start = time.perf_counter()
    results = run_all(argv or None)
    print(report(results))
    print(f"\n{len(results)} programs in {time.perf_counter() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
