"""NumPy's public surface, classified: a derivative rule, no gradient, or refused.

Every public callable of ``numpy``, ``numpy.linalg``, ``numpy.fft`` and ``numpy.random``, and
every public ``ndarray`` method, falls in exactly one class:

- ``rule``: the rule table (``NUMPY_BINDINGS``) or the compiler's lowering tables
  (``VALUE_CALLS``, ``SPECIAL_CALLS``, ``METHODS``) give it a derivative;
- ``nondiff``: an allow-list says its result carries no gradient (a primitive whose rules are
  all None, the compiler's ``NONDIFF_CALLS``), or the compiler runs it only when no argument
  carries a gradient (``STATIC_WHEN_CONSTANT``, classes, random draws);
- ``refused``: :data:`~srcgrad.frontend.tables.refusals.REFUSED` says why the compiler refuses it.

The first two classes are read from the tables at import time, never restated here, so they
cannot drift; :data:`REFUSED` lists only what no table covers
(``tests/structure/test_surface.py`` fails on a name in no class, and on a REFUSED entry that a
table now covers).
"""

from __future__ import annotations

import ast
import inspect
import textwrap
import types
from dataclasses import dataclass
from typing import Any

import numpy as np

from srcgrad.frontend.tables import constructs as T
from srcgrad.frontend.tables.refusals import REFUSED, REFUSED_NAMESPACES
from srcgrad.runtime.rules.elementwise import MATH_TWINS
from srcgrad.runtime.rules.primitives import NUMPY_BINDINGS, Primitive
from srcgrad.runtime.rules.special import MATH_SPECIAL

__all__ = ["CONSTRUCTS", "Entry", "REFUSED", "REFUSED_NAMESPACES", "classify", "constructs",
           "python_calls", "operators", "public_surface", "scipy_special", "stale", "surface",
           "unclassified"]

NAMESPACES = {"np": np, "np.linalg": np.linalg, "np.fft": np.fft, "np.random": np.random}
"""The modules whose public callables are classified, by the name a user writes."""

@dataclass(frozen=True)
class Entry:
    """One public name: its class (``rule``/``nondiff``/``refused``) and what backs it."""

    name: str
    kind: str
    detail: str


def _public(module: Any) -> dict[str, Any]:
    return {n: getattr(module, n) for n in dir(module)
            if not n.startswith("_") and callable(getattr(module, n, None))
            and not isinstance(getattr(module, n), types.ModuleType)}


def public_surface() -> dict[str, Any]:
    """Every classified name (``np.sum``, ``np.linalg.norm``, ``ndarray.sum``) → its object."""
    names: dict[str, Any] = {}
    for prefix, module in NAMESPACES.items():
        for n, obj in _public(module).items():
            if n != "test":                              # numpy's own test runner
                names[f"{prefix}.{n}"] = obj
    for n, obj in _public(np.ndarray).items():
        names[f"ndarray.{n}"] = obj
    return names


def nondiff_calls() -> dict[Any, str]:
    """The compiler's allow-list of calls whose results carry no gradient → why."""
    table = getattr(T, "NONDIFF_CALLS", None)
    if table is None:                                    # the tables before NONDIFF_CALLS
        table = dict.fromkeys(getattr(T, "STATIC_BUILTINS", ()), "a static value") | \
            dict.fromkeys(getattr(T, "CONSTRUCTORS", ()), "a constructor")
    if not isinstance(table, dict):
        table = dict.fromkeys(table, "no gradient")
    return {f: (r if isinstance(r, str) else "no gradient") for f, r in table.items()}


STATIC_WHEN_CONSTANT = "static when its arguments are (refused when one carries a gradient)"


def _get(table: Any, obj: Any) -> Any:
    try:
        return table.get(obj) if isinstance(table, dict) else (True if obj in table else None)
    except TypeError:                                    # unhashable
        return None


def _blanket(obj: Any) -> str | None:
    """What the compiler decides for a whole kind of callable rather than by a table: a class
    or a random draw is static when its arguments are (a draw runs once, in the forward pass).
    The compiler's own predicates decide, so this cannot drift from it."""
    from srcgrad.frontend.calls import _is_random, _static_when_constant
    if _is_random(obj):
        return f"a random draw, {STATIC_WHEN_CONSTANT}"
    if _static_when_constant(obj):
        return f"a class, {STATIC_WHEN_CONSTANT}" if isinstance(obj, type) else \
            STATIC_WHEN_CONSTANT
    return None


def _by_table(name: str, obj: Any, nondiff: dict[Any, str]) -> tuple[str, str] | None:
    """What the compiler's own tables say about ``obj``, in the order its calls look them up:
    (kind, detail), or None."""
    if name.startswith("ndarray."):
        return _method(name.split(".", 1)[1], nondiff)
    value = _get(getattr(T, "VALUE_CALLS", {}), obj)
    if value is not None:
        return "rule", f"lowered exactly by {getattr(value, '__name__', 'value')}"
    listed = _get(nondiff, obj)
    if listed is not None:
        return "nondiff", listed
    if _get(getattr(T, "STATIC_WHEN_CONSTANT", ()), obj) is not None:
        return "nondiff", STATIC_WHEN_CONSTANT
    bound = _get(NUMPY_BINDINGS, obj)
    special = _get(T.SPECIAL_CALLS, obj)
    if special is not None:                              # looked up before the binding
        name = bound[0].name if bound is not None and bound[0].differentiable else \
            getattr(obj, "__name__", "special")
        return "rule", f"{name} (lowered specially)"
    if bound is not None:
        prim: Primitive = bound[0]
        if prim.differentiable:
            return "rule", prim.name + (" (eager engine only)" if prim.eager_only else "")
        if prim.vjps:                                    # rules registered, each one None
            what = {"bool": "a boolean result", "index": "integer indices"}.get(
                prim.dtype_rule, "no gradient")
            return "nondiff", f"{what} (the primitive {prim.name} has no rule)"
    return None


def scipy_special() -> list[tuple[str, str]]:
    """(``scipy.special`` function, its primitive): bound when SciPy is imported."""
    try:
        from srcgrad.runtime.rules.special import SCIPY_NAMES
    except ImportError:
        return []
    return sorted((f"scipy.special.{n}", p.name) for n, p in SCIPY_NAMES.items())


def _method(name: str, nondiff: dict[Any, str]) -> tuple[str, str] | None:
    """An array method: what METHODS maps it to, classified as that function."""
    spec = T.METHODS.get(name)
    if spec is None:
        return None
    if spec[0] is None:
        return "rule", f"{name} (lowered specially)"
    return _by_table(f"np.{name}", spec[0], nondiff)


def classify() -> tuple[dict[str, Entry], list[str], list[str]]:
    """Classify the whole surface: (entries by name, unclassified names, stale REFUSED names).

    A name the tables cover is classified by them, whatever REFUSED says (its REFUSED entry is
    then stale); then REFUSED; then what the compiler decides for a whole kind (classes, random
    draws: so ``np.random.shuffle`` must be listed to be refused); then REFUSED_NAMESPACES.
    """
    nondiff = nondiff_calls()
    entries: dict[str, Entry] = {}
    missing: list[str] = []
    stale_names: list[str] = []
    for name, obj in public_surface().items():
        found = _by_table(name, obj, nondiff)
        if found is not None:
            if name in REFUSED:
                stale_names.append(name)
            entries[name] = Entry(name, *found)
            continue
        reason = REFUSED.get(name)
        blanket = None if reason is not None else _blanket(obj)
        if blanket is not None:
            entries[name] = Entry(name, "nondiff", blanket)
            continue
        reason = reason or REFUSED_NAMESPACES.get(name.rpartition(".")[0])
        if reason is None:
            missing.append(name)
        else:
            entries[name] = Entry(name, "refused", reason)
    return entries, missing, stale_names


def surface() -> dict[str, Entry]:
    return classify()[0]


def unclassified() -> list[str]:
    return classify()[1]


def stale() -> list[str]:
    return classify()[2]


# ---------------------------------------------------------------------------------------------
# What else the compiler reads: operators, ``math`` and builtins, and Python constructs.

CONSTRUCTS: dict[str, str] = {
    "Assign": "assignment `a = …`, tuple unpacking `a, b = …`, subscript writes `y[i] = v` "
              "(on a private copy)",
    "AnnAssign": "annotated assignment `a: float = …`",
    "AugAssign": "augmented assignment `a += …`, `y[i] += v`",
    "Expr": "expression statements: `print`, `logging.info(…)` and a global logger's calls, "
            "`xs.append(v)`, docstrings",
    "Assert": "`assert` (runs in the forward)",
    "Raise": "`raise` of a builtin exception class (and `np.linalg.LinAlgError`), run in the "
             "forward on the path taken, with the same message and cause (`from e`)",
    "Try": "`try`/`except`/`else`/`finally` around assignments of NumPy code (and prints), "
           "run once: the path its exception selects is the one differentiated; `except E as "
           "e` binds the exception for `print`, logging and `raise` to read; a bare `raise` "
           "in a handler re-raises it",
    "With": "`with np.errstate(...)` ('ignore' and 'warn' modes) and `with warnings."
            "catch_warnings():` (and the filters set first in it): the block's forward and "
            "adjoint run under it",
    "Pass": "`pass`",
    "If": "`if`/`elif`/`else` on values",
    "For": "`for` over `range`, arrays, lists, `enumerate`, `zip`, `itertools.product`, "
           "`combinations`, `permutations` and `chain` of sequences known when compiling, a "
           "call of a user's generator (expanded in place) (and `for … else`)",
    "While": "`while` with a data-dependent trip count (and `while … else`)",
    "Break": "`break`",
    "Continue": "`continue`",
    "Return": "`return`, anywhere",
    "FunctionDef": "nested `def`s (in loops too), reading the enclosing function's variables "
                   "as Python does, called, passed to helpers and returned",
    "Attribute": "attributes: `.T`, `.shape`, `.ndim`, `.dtype`, `.size`; module constants "
                 "(`np.pi`); attributes of user objects (globals, arguments: read when the "
                 "code runs, built per class; objects made in the function, writes included); "
                 "fields of dataclass and namedtuple arguments",
    "BinOp": "arithmetic operators (below)",
    "BoolOp": "`and`, `or`",
    "Call": "calls: the NumPy functions and methods above, `math`, builtins, other user "
            "functions, lambdas and closures (transformed too), functions passed as arguments "
            "(the code is built for each one passed), methods and `__call__` of user objects "
            "(lowered in place), `functools.partial` and "
            "`functools.reduce`; `f(*xs, **d)` where the length of `xs` and the keys of `d` "
            "are known when compiling",
    "Compare": "comparisons, chained too (no gradient)",
    "Constant": "literals",
    "Dict": "dict literals with keys known when compiling (`{'w': w, **d}`), read and written "
            "by key, `get`/`pop`/`update`/`keys`/`values`/`items` in insertion order",
    "DictComp": "dict comprehensions whose keys are known when compiling",
    "GeneratorExp": "generator expressions (in `sum(…)`, `np.stack(…)`, `max(…)`)",
    "JoinedStr": "f-strings made of names known when compiling (a dict key `f'W{i}'` in an "
                 "unrolled loop)",
    "IfExp": "conditional expressions `a if c else b`",
    "Lambda": "lambdas, called where they are defined or later (`(lambda u: …)(x)`), passed "
              "to helpers and returned from them",
    "List": "list literals, `[*xs, y]` where the length of `xs` is known when compiling",
    "ListComp": "list comprehensions, with `if` filters and nested `for`s",
    "Name": "names: arguments, locals, globals and closure variables",
    "Slice": "slices `a:b:c` in subscripts",
    "Subscript": "indexing and slicing, `x[i]`, `x[1:3, ::2]`, `p[\"w\"]`, `xs[i]`",
    "Tuple": "tuple literals, `(*xs, y)` where the length of `xs` is known when compiling",
    "UnaryOp": "`-x`, `+x`, `not x`",
}
"""How each construct the lowering dispatches on reads to a user."""


def _source_tree(fn: Any) -> ast.AST:
    return ast.parse(textwrap.dedent(inspect.getsource(fn)))


def dispatched_constructs() -> list[str]:
    """The AST node types the lowering handles: its ``expr_*`` methods, and the statements the
    methods of the lowerer and of the parts it holds test with ``isinstance`` (read from the
    lowering's own source)."""
    from srcgrad.frontend.lower import Lowerer
    names = {m[5:] for m in dir(Lowerer) if m.startswith("expr_")}
    for _, fn in [m for c in (Lowerer, *Lowerer.PARTS)
                  for m in inspect.getmembers(c, inspect.isfunction)]:
        for node in ast.walk(_source_tree(fn)):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "isinstance" \
                    and len(node.args) == 2:
                for n in ast.walk(node.args[1]):
                    kind = getattr(ast, getattr(n, "attr", ""), None)
                    if getattr(n, "value", None) is not None and getattr(
                            n.value, "id", None) == "ast" and isinstance(kind, type) and \
                            issubclass(kind, ast.stmt):
                        names.add(n.attr)
    return sorted(names)


def constructs() -> list[tuple[str, str]]:
    """(construct, description) for every construct the lowering handles, statements first."""
    names = dispatched_constructs()
    order = sorted(names, key=lambda n: (not issubclass(getattr(ast, n), ast.stmt),
                                         list(CONSTRUCTS).index(n) if n in CONSTRUCTS else 99))
    return [(n, CONSTRUCTS.get(n, "")) for n in order]


def _rule_of(fn: Any) -> str:
    bound = NUMPY_BINDINGS.get(fn)
    if bound is None:
        return "lowered" if fn in T.SPECIAL_CALLS else "no rule"
    return bound[0].name if bound[0].differentiable else f"{bound[0].name}, no gradient"


def operators() -> list[tuple[str, str, str]]:
    """(how it is written, the NumPy function, its rule) for every operator the tables map."""
    a, b = ast.Name("a"), ast.Name("b")
    rows = [(ast.unparse(ast.BinOp(a, op(), b)), fn, "") for op, fn in T.BINOPS.items()]
    rows += [(ast.unparse(ast.UnaryOp(op(), a)), fn, "") for op, fn in T.UNARYOPS.items()]
    rows += [(ast.unparse(ast.Compare(a, [op()], [b])), fn, "") for op, fn in T.CMPOPS.items()]
    return [(text, f"np.{fn.__name__}", _rule_of(fn)) for text, fn, _ in rows]


def python_calls() -> list[tuple[str, str]]:
    """(a ``math`` function or builtin, what the compiler makes of it)."""
    from srcgrad.frontend.calls import Calls
    from srcgrad.frontend.functional import FUNCTIONAL
    twins = {**MATH_TWINS, **{f: f"scipy.special.{p.name}" for f, p in MATH_SPECIAL.items()}}
    rows = [(f"math.{f.__name__}", f"{g.name} (Python's function, the rules of "
             + (twins[f] if isinstance(twins[f], str) else f"np.{twins[f].__name__}") + ")"
             if isinstance(g, Primitive)
             else f"np.{g.__name__} ({_rule_of(g)})") for f, g in T.MATH.items()]
    rows += [(f"{f.__name__}()", f"np.{g.__name__} ({_rule_of(g)})")
             for f, g in T.BUILTIN_MATH.items()]
    special = sorted({n.attr for n in ast.walk(_source_tree(Calls.call))
                      if isinstance(n, ast.Attribute) and getattr(n.value, "id", "") == "builtins"})
    rows += [(f"{n}()", _LOWERED_BUILTINS.get(n, "lowered")) for n in special]
    plain = [(f, "lowered exactly (it carries a value)") for f in getattr(T, "VALUE_CALLS", {})]
    plain += [(f, f"no gradient: {why}") for f, why in nondiff_calls().items()]
    plain += [(f, FUNCTIONAL.get(f, STATIC_WHEN_CONSTANT))
              for f in getattr(T, "STATIC_WHEN_CONSTANT", ())]
    plain += [(f, "runs in the forward, for its effect") for f in T.EFFECTS]
    return rows + sorted((f"{_module(f)}{f.__name__}()", what) for f, what in plain
                         if _module(f) is not None)


def _module(f: Any) -> str | None:
    """``"math."`` or ``""`` (a builtin) for the Python functions listed; None for others."""
    module = getattr(f, "__module__", None) or getattr(getattr(f, "__self__", None),
                                                       "__name__", None)
    return {"builtins": "", "math": "math."}.get(module)


_LOWERED_BUILTINS = {"sum": "a sum of values, of a list or of a generator expression",
                     "max": "np.maximum, pairwise", "min": "np.minimum, pairwise"}
