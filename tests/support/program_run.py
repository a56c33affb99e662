"""Running drawn statements: the helper functions every program may call, and a run of
statements at module level on copies of the arguments (kept only when NumPy runs them and
the values stay finite and small)."""

from __future__ import annotations

import copy
import functools
import itertools
import logging
import math
import re
import warnings

import numpy as np
import program_objects

HELPERS = '''\
def pair(a, b):
    return a * b, a + b


def stats(a):
    m = np.mean(a)
    return a - m, m


def scale(a):
    a *= 2.0
    return a


def head(a):
    return a[0], np.sum(a)


def rows(a):
    out = []
    for r in a:
        out.append(r * 2.0)
    return out


def norm2(a, eps=1e-3):
    return np.sqrt(np.sum(a * a) + eps)


def first_row(a):
    return a[0]


def add_into(a, b, scale=1.0):
    return a + scale * b


def twice(g, a):
    return g(g(a))


class Scaler:
    def __init__(self):
        self.act = np.tanh

    def apply(self, a):
        return self.act(a) * 1.5


SCALER = Scaler()
'''


class _Numpy:
    """NumPy for drawing statements, whose ``std`` refuses (near) constant data: the standard
    deviation has a kink at 0, where rounding (a std of 1e-16) makes finite differences and
    the rule disagree without either being wrong."""

    def __getattr__(self, name: str):
        return getattr(np, name)

    @staticmethod
    def std(a, *args, **kwargs):
        out = np.std(a, *args, **kwargs)
        if np.any(np.abs(out) < 1e-6):
            raise FloatingPointError("std at its kink")
        return out


class _Returned(Exception):
    """A ``return`` of the program, run at module level by :func:`_run`."""


def _returning(lines: list[str], taken: bool) -> list[str]:
    """``return e`` as ``__out = e`` for module level, then (``taken``) a :class:`_Returned`
    raised, else nothing: the run goes on past it, as it does where the test is not met."""
    out = []
    for line in lines:
        found = re.match(r"^(\s*)return (.*)$", line)
        if found:
            indent, value = found.groups()
            out += [f"{indent}__out = {value}"] + ([f"{indent}raise _Returned()"] if taken
                                                    else [])
        else:
            out.append(line)
    return out


def _run(lines: list[str], names: list[str], args: list, jumps: bool = False) -> dict | None:
    """Run the statements at module level on copies of the arguments; None when NumPy raises,
    or a value leaves [-1e3, 1e3], is not finite or is exactly zero.  ``jumps``: a
    ``return`` ends the run there, and the code past it must run too (what the variables
    hold then is returned), as a nearby point may not return (without ``jumps``, a
    ``return`` is a syntax error: never drawn)."""
    if not jumps:
        return _exec(lines, names, args)
    if _exec(_returning(lines, True), names, args) is None:
        return None
    return _exec(_returning(lines, False), names, args)


def _exec(lines: list[str], names: list[str], args: list) -> dict | None:
    env: dict = {"np": _Numpy(), "math": math, "_Returned": _Returned, "functools": functools,
                 "itertools": itertools, "logging": logging}
    env.update((name, getattr(program_objects, name)) for name in program_objects.NAMES)
    exec(HELPERS, env)
    env.update(zip(names, copy.deepcopy(args)))
    try:
        with warnings.catch_warnings(), np.errstate(all="raise"):
            warnings.simplefilter("error")
            try:
                exec("\n".join(lines), env)
            except _Returned:
                pass
    except Exception:
        return None
    for value in env.values():
        for leaf in _leaves(value):
            if isinstance(leaf, (float, np.ndarray, np.floating)) and \
                    np.asarray(leaf).dtype.kind == "f":
                a = np.asarray(leaf)
                if not np.all(np.isfinite(a)) or np.any(np.abs(a) > 1e3) or np.any(a == 0.0):
                    return None       # (exact zeros sit on the kinks of abs, hypot, std)
    return env


def _leaves(value) -> list:
    if isinstance(value, dict):
        return [leaf for k in value for leaf in _leaves(value[k])]
    if isinstance(value, (list, tuple)):
        return [leaf for v in value for leaf in _leaves(v)]
    return [value]


def _floats(env: dict, names: set) -> dict[str, object]:
    """The float variables (arrays, scalars) among ``names``."""
    out = {}
    for n in sorted(names):             # a set: sorted, so a seed means one program
        v = env.get(n)
        if isinstance(v, (np.ndarray, np.floating)) and v.dtype.kind == "f":
            out[n] = v
        elif isinstance(v, float):
            out[n] = v
    return out

