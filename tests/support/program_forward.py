"""The random programs of ``program_generator`` through forward mode and second order.

``check_jvp(program, folder)``: ``srcgrad.jvp(f, args, tangents, strict=True)``, with a random
tangent for every float leaf of every argument (jvp differentiates each of them), must give
``f(*args)`` and the central finite difference of ``f`` along the tangents, or be refused with
a ``CompileError``; the eager engine's jvp likewise; and neither may change the arguments or
the tangents.  ``check_hvp(program, folder)``: for each argument ``i``, the jvp of the
compiled ``grad(f, wrt=i)`` (a Hessian-vector product) must equal the central finite
difference of that gradient along the tangents, and ``hessian(f, wrt=i)`` (arguments of at
most 12 elements) the finite-difference Jacobian of that gradient.  Both give
``(outcome, detail)`` in the classes of ``program_generator.check``.
"""

from __future__ import annotations

import copy
import re
import warnings
from pathlib import Path

import numpy as np
from program_generator import (
    Program,
    _error,
    _get,
    _paths,
    _run,
    _same,
    _set,
    load,
    reason_class,
)

FAILURES = ("wrong derivative", "wrong value", "internal error", "mutated argument",
            "fallback wrong")
"""Outcomes that break the property (the tests fail on them)."""
DEAD_ENDS = ("fallback error",)
"""Refused, and then the eager jvp raises: counted and reported, not a test failure."""

HESSIAN_LIMIT = 12
"""``check_hvp`` computes ``hessian`` with respect to arguments of at most this many elements."""


# --- tangents, and finite differences along them --------------------------------------------

def _floating(leaf) -> bool:
    return isinstance(leaf, float) or (
        isinstance(leaf, (np.ndarray, np.floating)) and leaf.dtype.kind == "f")


def _map(fn, tree, *others):
    """``tree`` with each leaf replaced by ``fn(leaf, *the same leaf of others)``."""
    if isinstance(tree, dict):
        return {k: _map(fn, v, *(o[k] for o in others)) for k, v in tree.items()}
    if isinstance(tree, (list, tuple)):
        return type(tree)(_map(fn, *parts) for parts in zip(tree, *others))
    return fn(tree, *others)


def _kind_of(leaf, values):
    """``values`` (float64) in the kind of ``leaf``: a float, a NumPy scalar or an array."""
    if isinstance(leaf, np.floating):                # (np.float64 is a float too)
        return leaf.dtype.type(values)
    if isinstance(leaf, float):
        return float(values)
    return np.array(values, dtype=leaf.dtype)


def tangents_for(args: list, seed: int) -> list:
    """A random tangent (standard normal) for every float leaf of every argument, in the
    leaf's kind; other leaves are passed as they are (their tangent is ignored)."""
    rng = np.random.default_rng([seed, 10])
    return [_map(lambda leaf: _kind_of(leaf, rng.normal(size=np.shape(leaf)))
                 if _floating(leaf) else leaf, a) for a in args]


def _unit(args: list, i: int, path: tuple, j: int) -> list:
    """The tangent that is 1 at element ``j`` of leaf ``path`` of argument ``i``, else 0."""
    zero = [_map(lambda leaf: _kind_of(leaf, np.zeros(np.shape(leaf))) if _floating(leaf)
                 else leaf, a) for a in args]
    leaf = _get(args[i], path)
    e = np.zeros(np.shape(leaf))
    e.reshape(-1)[j] = 1.0
    zero[i] = _set(zero[i], path, _kind_of(leaf, e))
    return zero


def _moved(args: list, tangents: list, step: float) -> list:
    """Fresh copies of ``args`` moved by ``step`` along ``tangents``."""
    def move(leaf, t):
        if not _floating(leaf):
            return copy.deepcopy(leaf)
        x = np.array(leaf, dtype=np.float64)
        x += step * np.asarray(t, dtype=np.float64)          # in place: a 0-d array stays one
        return _kind_of(leaf, x)
    return [_map(move, a, t) for a, t in zip(args, tangents)]


def _flat(value) -> list:
    """The leaves of a result (a scalar, an array or a pytree) as float64 arrays."""
    return [np.asarray(_get(value, path), dtype=np.float64) for path in _paths(value)]


def directional(fn, args: list, tangents: list, eps: float) -> list:
    """Central difference of ``fn`` along ``tangents``: one array per leaf of its result."""
    plus = _flat(fn(*_moved(args, tangents, eps)))
    minus = _flat(fn(*_moved(args, tangents, -eps)))
    return [(a - b) / (2 * eps) for a, b in zip(plus, minus)]


def _agree(got: list, want: list, rtol: float, atol: float) -> bool:
    return len(got) == len(want) and all(
        g.shape == w.shape and np.allclose(g, w, rtol=rtol, atol=atol) for g, w in zip(got, want))


def _scale(value) -> float:
    """The largest magnitude in a result: central differences carry its rounding."""
    return max((float(np.max(np.abs(leaf))) for leaf in _flat(value) if leaf.size), default=0.0)


def _attempt(call):
    """``(result, None)``, or ``(None, (outcome, detail))`` when ``call`` raises: a
    ``CompileError`` is a refusal (an internal error when it wraps one); anything else is an
    internal error (NumPy ran the same program without one)."""
    import srcgrad
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return call(), None
        except srcgrad.CompileError as e:
            reason = reason_class(e)
            if reason.startswith("internal error"):
                return None, ("internal error", "wrapped in a CompileError: " + reason)
            return None, ("refused", reason)
        except Exception as e:
            return None, ("internal error", _error(e))


def _compare(result, want_value, fd: list, atol: float, what: str) -> tuple[str, str]:
    """A jvp's ``(value, tangent)`` against the plain value and the finite differences."""
    value, tangent = result
    if _paths(value) != _paths(want_value) or not _agree(
            _flat(value), _flat(want_value), rtol=1e-9, atol=1e-12):
        return "wrong value", f"{what} value != the function's"
    if _paths(tangent) != _paths(want_value):
        return "wrong derivative", f"{what} tangent has another structure than the value"
    if not _agree(_flat(tangent), fd, rtol=1e-4, atol=atol):
        return "wrong derivative", f"{what} tangent != finite differences"
    return "correct", ""


# --- jvp --------------------------------------------------------------------------------------

def check_jvp(program: Program, folder: Path) -> tuple[str, str]:
    """(outcome, detail) of the compiled jvp of the program (``strict=True``) and of the eager
    engine's, as ``program_generator.check`` classifies the gradient: ``correct``,
    ``refused``, ``inconclusive`` or one of ``FAILURES``/``DEAD_ENDS``."""
    import srcgrad
    from srcgrad.transforms.fallback import eager_jvp

    fn = load(program, folder)
    saved = program.args
    args = copy.deepcopy(saved)
    tangents = tangents_for(args, program.seed)
    kept = copy.deepcopy(tangents)
    fd = directional(fn, args, tangents, 1e-6)
    if not _agree(fd, directional(fn, args, tangents, 1e-5), rtol=1e-3, atol=1e-4):
        return "inconclusive", "a kink within 1e-5 of the point"
    value = fn(*copy.deepcopy(args))
    atol = 1e-5 + 1e-9 * _scale(value)

    result, compiled = _attempt(lambda: srcgrad.jvp(fn, args, tangents, strict=True))
    if not (_same(args, saved) and _same(tangents, kept)):
        return "mutated argument", "by the compiled jvp"
    if compiled is None:
        compiled = _compare(result, value, fd, atol, "compiled jvp")
    wrt = tuple(i for i, a in enumerate(args) if any(map(_floating, _leaves(a))))
    result, fallback = _attempt(lambda: eager_jvp(fn, tuple(args), tuple(tangents), wrt))
    if not (_same(args, saved) and _same(tangents, kept)):
        return "mutated argument", "by the eager jvp"
    if fallback is None:
        fallback = _compare(result, value, fd, atol, "eager jvp")
    if fallback[0] in ("wrong value", "wrong derivative"):
        return "fallback wrong", fallback[1] + (" (compiled right)"
                                                if compiled[0] == "correct" else "")
    if compiled[0] == "refused" and fallback[0] == "internal error":
        return "fallback error", fallback[1]
    if compiled[0] == "correct" and fallback[0] != "correct":
        return "correct", "eager alone: " + fallback[1]
    return compiled


def _leaves(tree) -> list:
    return [_get(tree, path) for path in _paths(tree)]


# --- Hessian-vector products and Hessians ------------------------------------------------------

def check_hvp(program: Program, folder: Path, positions: tuple | None = None
              ) -> tuple[str, str]:
    """(outcome, detail) of the Hessian-vector product ``jvp(grad(f, wrt=i))`` and of
    ``hessian(f, wrt=i)`` (``strict=True``), for each ``i`` in ``positions`` (default
    ``program.wrt``), against finite differences of the compiled gradient.  A failure
    anywhere is the outcome; else ``correct`` when any part is (its detail names a refused
    part), else ``inconclusive`` or ``refused``."""
    fn = load(program, folder)
    saved = program.args
    args = copy.deepcopy(saved)
    tangents = tangents_for(args, program.seed)
    parts: list[tuple[str, str]] = []
    for i in program.wrt if positions is None else positions:
        for outcome, detail in _second_order(fn, args, saved, tangents, i):
            if outcome in FAILURES:
                return outcome, detail
            parts.append((outcome, detail))
    for outcome in ("correct", "inconclusive", "refused"):
        if any(o == outcome for o, _ in parts):
            refused = [d for o, d in parts if o == "refused"]
            if outcome == "correct" and refused:
                return "correct", "partly refused: " + refused[0]
            return next((o, d) for o, d in parts if o == outcome)
    return "refused", "no argument to differentiate"


def _second_order(fn, args: list, saved: list, tangents: list, i: int):
    """The outcomes of the hvp and then of the Hessian with respect to argument ``i``."""
    import srcgrad

    grad, failed = _attempt(lambda: srcgrad.grad(fn, wrt=i, strict=True))
    if failed is None:                            # one compiled call: refusals surface here
        gradient, failed = _attempt(lambda: grad(*copy.deepcopy(args)))
    if failed is not None:
        yield failed[0], f"grad of argument {i}: {failed[1]}"
        return
    kept = copy.deepcopy(tangents)
    fd, failed = _attempt(lambda: (directional(grad, args, tangents, 1e-6),
                                   directional(grad, args, tangents, 1e-5)))
    if failed is not None:
        yield failed[0], f"grad of argument {i} near the point: {failed[1]}"
        return
    if not _agree(*fd, rtol=1e-3, atol=1e-4):
        yield "inconclusive", "a kink within 1e-5 of the point"
        return
    atol = 1e-5 + 1e-9 * _scale(gradient)
    result, failed = _attempt(lambda: srcgrad.jvp(grad, args, tangents, strict=True))
    if not (_same(args, saved) and _same(tangents, kept)):
        yield "mutated argument", f"by the hvp of argument {i}"
        return
    yield failed or _compare(result, gradient, fd[0], atol, f"hvp of argument {i}")
    if sum(np.size(leaf) for leaf in _leaves(args[i]) if _floating(leaf)) <= HESSIAN_LIMIT:
        yield _check_hessian(fn, grad, args, saved, i, atol)


def _check_hessian(fn, grad, args: list, saved: list, i: int, atol: float) -> tuple[str, str]:
    import srcgrad

    what = f"hessian of argument {i}"
    want, want2 = (_jacobian_fd(grad, args, i, eps) for eps in (1e-6, 1e-5))
    if any(not np.allclose(want[k], want2[k], rtol=1e-3, atol=1e-4) for k in want):
        return "inconclusive", "a kink within 1e-5 of the point"
    got, failed = _attempt(lambda: srcgrad.hessian(fn, wrt=i, strict=True)(*args))
    if not _same(args, saved):
        return "mutated argument", f"by the {what}"
    if failed is not None:
        return failed[0], f"{what}: {failed[1]}"
    for (out_path, in_path), block in want.items():
        try:
            value = np.asarray(_get(_get(got, out_path), in_path), dtype=np.float64)
        except (KeyError, IndexError, TypeError):
            return "wrong derivative", f"{what} has another structure than the argument's"
        if value.shape != block.shape:
            return "wrong derivative", f"{what} block of shape {value.shape}, not {block.shape}"
        if not np.allclose(value, block, rtol=1e-4, atol=atol):
            return "wrong derivative", f"{what} != finite differences of the gradient"
    return "correct", ""


def _jacobian_fd(grad, args: list, i: int, eps: float) -> dict:
    """The Jacobian of the gradient with respect to argument ``i`` by central differences:
    ``{(gradient leaf path, argument leaf path): block of shape out + in}``."""
    out_paths = _paths(args[i])                   # the gradient has the argument's structure
    blocks = {}
    for in_path in out_paths:
        leaf = _get(args[i], in_path)
        if not _floating(leaf):
            continue
        columns = [directional(grad, args, _unit(args, i, in_path, j), eps)
                   for j in range(np.size(leaf))]
        for k, out_path in enumerate(out_paths):
            shape = np.shape(_get(args[i], out_path)) + np.shape(leaf)
            blocks[out_path, in_path] = np.stack([c[k] for c in columns], axis=-1).reshape(shape)
    return blocks


# --- programs whose results are arrays --------------------------------------------------------

class VectorProgram(Program):
    """A program that returns its terms as a tuple of arrays instead of their sum (each term
    without its ``np.sum``): jvp then has a tangent of every element to get right."""

    @property
    def source(self) -> str:
        text = Program.source.fget(self)
        head = text[:text.rindex("\n    return ")]
        return f"{head}\n    return ({', '.join(self.terms)},)\n" if self.terms else \
            f"{head}\n    return ()\n"

    def runs(self) -> bool:
        lines = [line for _, block in self.statements for line in block]
        return _run([*lines, f"__out = ({', '.join(self.terms)},)" if self.terms else
                     "__out = ()"], self.names, self.args) is not None


def vector(program: Program) -> VectorProgram:
    """``program`` returning the tuple of its unsummed terms (``np.sum(e)`` becomes ``e``)."""
    terms = [re.sub(r"^np\.sum\((.*)\)$", r"\1", t) for t in program.terms]
    return VectorProgram(program.seed, program.names, program.args, program.statements,
                         terms, program.wrt)
