"""How a SciPy function is followed, one :class:`Spec` each: its signature, which of its
arguments are arrays, and which primitives (with which static parameters) compute its result
for the static arguments given, or why those arguments are refused.

Both modes read the same spec: the eager run calls :func:`eager_call` (SciPy's signature
bound, the refusal a TypeError), the compiler lowers the call by
:mod:`srcgrad.frontend.tables.scipy_specs` (the refusal a CompileError at the call's line).
A function that returns a tuple is one primitive per element, all of the same inputs.
The specs of ``scipy.linalg``'s solves and matrix functions are here; those of its
factorizations and of ``scipy.signal`` are next to their rules.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable
from typing import Any

from srcgrad.runtime.rules.primitives import Primitive
from srcgrad.runtime.rules.scipy_linalg import (
    GENERAL,
    TRIANGLE,
    scipy_block_diag,
    scipy_cholesky,
    scipy_det,
    scipy_expm,
    scipy_inv,
    scipy_norm,
    scipy_pinv,
    scipy_solve,
)

__all__ = ["Spec", "eager_call", "no_overwrite", "LINALG_SPECS"]

Part = tuple[Primitive, dict]
"""One primitive of the result and its static parameters."""


class Spec:
    """A SciPy function srcgrad follows (``name``: its module and name, its signature
    SciPy's own): ``choose(statics)`` gives the result's part (or a tuple of parts), or a
    string saying why these static arguments are refused.  With ``variadic``, the function
    takes its arrays as ``*arrs`` (``block_diag``)."""

    def __init__(self, name: str, inputs: tuple[str, ...], choose: Callable[[dict], Any],
                 prims: tuple[Primitive, ...], variadic: bool = False) -> None:
        self.name = name
        self.inputs = inputs
        self.choose = choose
        self.prims = prims                # what ``choose`` picks from (the reference lists it)
        self.variadic = variadic

    @property
    def function(self) -> Any:
        """SciPy's function (its module is imported: a program calls it)."""
        module, _, name = self.name.rpartition(".")
        return getattr(sys.modules[module], name)

    @property
    def signature(self) -> inspect.Signature:
        return inspect.signature(self.function)

    def __repr__(self) -> str:
        return f"<scipy spec {self.name}>"


def no_overwrite(name: str, statics: dict, *keys: str) -> str | None:
    """The refusal of ``overwrite_a=True`` and the like: SciPy may then write into its
    operand, which no gradient follows."""
    for key in keys:
        if statics.get(key):
            return (f"{name}({key}=True) may write into its operand, which srcgrad does not "
                    f"follow; leave {key} False")
    return None


def eager_call(spec: Spec, *args: Any, located: Callable[[str], str] = str, **kwargs: Any
               ) -> Any:
    """``spec``'s function called with SciPy's arguments, on operands that carry a gradient
    (``located``: a refusal with the caller's line)."""
    if spec.variadic:
        if kwargs:
            raise TypeError(f"{spec.name}() takes no keyword arguments")
        part = spec.choose({})
        return part[0](*args, **part[1])
    bound = spec.signature.bind(*args, **kwargs)
    bound.apply_defaults()
    values = bound.arguments
    inputs = [values[n] for n in spec.inputs]
    statics = {k: v for k, v in values.items() if k not in spec.inputs}
    chosen = spec.choose(statics)
    if isinstance(chosen, str):
        raise TypeError(located(chosen))
    if isinstance(chosen, tuple) and isinstance(chosen[0], Primitive):
        return chosen[0](*inputs, **chosen[1])
    return tuple(prim(*inputs, **params) for prim, params in chosen)


# ---------------------------------------------------------------------------------------------
# SciPy's calls

def _solve(st):
    refusal = no_overwrite("scipy.linalg.solve", st, "overwrite_a", "overwrite_b")
    if refusal is not None:
        return refusal
    if st["assume_a"] not in GENERAL + TRIANGLE:
        return (f"scipy.linalg.solve(assume_a={st['assume_a']!r}) is not differentiated by "
                f"srcgrad (it follows assume_a None, 'gen', 'pos' and 'sym')")
    if st["transposed"]:
        return "scipy.linalg.solve(transposed=True) is not differentiated by srcgrad"
    return scipy_solve, {"assume_a": st["assume_a"], "lower": bool(st["lower"])}


def _inv(st):
    refusal = no_overwrite("scipy.linalg.inv", st, "overwrite_a")
    assume_a = st.get("assume_a")                # SciPy before 1.17: no assume_a, no lower
    if refusal is None and assume_a not in GENERAL + TRIANGLE:
        refusal = (f"scipy.linalg.inv(assume_a={assume_a!r}) is not differentiated by "
                   "srcgrad (it follows assume_a None, 'gen', 'pos' and 'sym')")
    return refusal or (scipy_inv, {"assume_a": assume_a, "lower": bool(st.get("lower"))})


def _pinv(st):
    if st["return_rank"]:
        return "scipy.linalg.pinv(return_rank=True) is not differentiated by srcgrad"
    return scipy_pinv, {"atol": st["atol"], "rtol": st["rtol"]}


LINALG_SPECS = {
    "solve": Spec("scipy.linalg.solve", ("a", "b"), _solve, (scipy_solve,)),
    "inv": Spec("scipy.linalg.inv", ("a",), _inv, (scipy_inv,)),
    "det": Spec("scipy.linalg.det", ("a",), lambda st: no_overwrite(
        "scipy.linalg.det", st, "overwrite_a") or (scipy_det, {}), (scipy_det,)),
    "cholesky": Spec("scipy.linalg.cholesky", ("a",), lambda st: no_overwrite(
        "scipy.linalg.cholesky", st, "overwrite_a") or (scipy_cholesky,
                                                        {"upper": not st["lower"]}),
        (scipy_cholesky,)),
    "norm": Spec("scipy.linalg.norm", ("a",), lambda st: (scipy_norm, {
        "ord": st["ord"], "axis": st["axis"], "keepdims": bool(st["keepdims"])}),
        (scipy_norm,)),
    "pinv": Spec("scipy.linalg.pinv", ("a",), _pinv, (scipy_pinv,)),
    "expm": Spec("scipy.linalg.expm", ("A",), lambda st: (scipy_expm, {}), (scipy_expm,)),
    "block_diag": Spec("scipy.linalg.block_diag", (), lambda st: (scipy_block_diag, {}),
                       (scipy_block_diag,), variadic=True),
}
"""``scipy.linalg`` names → how srcgrad follows them."""
