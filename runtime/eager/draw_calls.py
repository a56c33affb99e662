"""Discrete random draws of parameters that carry a gradient, in the eager run.

REINFORCE code draws an action from probabilities it differentiates (``rng.choice(n, p=p)``,
``rs.multinomial(1, p)``, ``self.rng.binomial(n, q)``).  Such a draw's result is a count or
an index: piecewise constant in its parameters, so its derivative is 0, and NumPy may be
handed the parameters' plain values (the same stream, the same numbers).

The stand-ins of :mod:`srcgrad.transforms.eager_draws` strip the parameters of the draws
they see (``np.random``'s functions, the generators among the module's globals).  A draw
from a generator they do not see (an argument, ``self.rng``, one made in the function)
converts each array parameter with ``np.asarray(p, dtype)`` inside NumPy, which asks the
Array for its data: :func:`converting_for_draw` then reads the call the user's frame is
making (the span of its call instruction, parsed again) and lets the conversion through
when the callee is a discrete draw of a RandomState or Generator.  A conversion without a
dtype (``choice``'s ``a``, whose elements the result holds) never goes through.
"""

from __future__ import annotations

import ast
import linecache
import sys
import types
from typing import Any

import numpy as np

__all__ = ["DISCRETE", "GENERATORS", "converting_for_draw", "discrete_draw"]

GENERATORS = (np.random.RandomState, np.random.Generator)

DISCRETE = frozenset("""
    binomial negative_binomial poisson geometric hypergeometric logseries multinomial
    multivariate_hypergeometric zipf randint random_integers integers choice""".split())
"""The draws whose results are integers (``choice``: the indices it picks, or the elements
of an ``a`` that carries no gradient)."""


def discrete_draw(callee: Any) -> bool:
    """Whether ``callee`` is a discrete draw bound to a RandomState or Generator (the
    functions of ``np.random`` are its global RandomState's)."""
    owner = getattr(callee, "__self__", None)
    return isinstance(owner, GENERATORS) and getattr(callee, "__name__", None) in DISCRETE


def converting_for_draw(dtype: Any) -> bool:
    """Whether the Array conversion under way (to ``dtype``) is NumPy reading a parameter
    of a discrete draw the caller's frame is calling (see the module docstring)."""
    if dtype is None:
        return False
    frame = sys._getframe(2)                   # the frame that called NumPy's draw
    try:
        return discrete_draw(_callee(frame))
    except Exception:  # noqa: BLE001 - anything unreadable: not shown to be a draw
        return False


def _callee(frame: Any) -> Any:
    """The function the call under way in ``frame`` calls, when the call names it by a
    chain of names and attributes (None otherwise)."""
    positions = list(frame.f_code.co_positions())[frame.f_lasti // 2]
    line, end, start_col, end_col = positions
    if None in positions:
        return None
    lines = linecache.getlines(frame.f_code.co_filename)[line - 1:end]
    if not lines:
        return None
    raw = [s.encode() for s in lines]          # the columns count bytes
    raw[-1] = raw[-1][:end_col]
    raw[0] = raw[0][start_col:]
    tree = ast.parse(b"(" + b"".join(raw) + b")", mode="eval").body
    if not isinstance(tree, ast.Call):
        return None
    return _resolve(tree.func, frame)


_MISSING = object()


def _resolve(node: ast.expr, frame: Any) -> Any:
    """The value of a chain ``a.b.c`` in ``frame``, reading only variables, modules'
    attributes and the attributes objects hold in their ``__dict__`` (no property runs)."""
    if isinstance(node, ast.Name):
        for names in (frame.f_locals, frame.f_globals, frame.f_builtins):
            if node.id in names:
                return names[node.id]
        return None
    if not isinstance(node, ast.Attribute):
        return None
    owner = _resolve(node.value, frame)
    if owner is None:
        return None
    if isinstance(owner, (types.ModuleType, *GENERATORS)):
        return getattr(owner, node.attr, None)
    held = getattr(owner, "__dict__", {})
    value = held.get(node.attr, _MISSING) if isinstance(held, dict) else _MISSING
    return None if value is _MISSING else value
