"""Every public callable of ``scipy.special``, ``scipy.linalg`` and ``scipy.signal``, classified
once: it has a rule (:data:`SCIPY_SPECS`, the ufuncs and functions of :mod:`.special`,
:mod:`.triangular`, ``signal.convolve``), its result carries no gradient whatever its
arguments (:data:`SCIPY_NO_GRADIENT`: integers, truth values, a piecewise constant, objects of
integer orders), or it is refused when an argument carries a gradient: a CompileError naming
it when compiling, a TypeError naming it in the eager run.

srcgrad never imports SciPy itself: :func:`classify` looks a callable up in the SciPy modules
the program has imported.
"""

from __future__ import annotations

import sys
from typing import Any

from srcgrad.runtime.rules.scipy_factor import FACTOR_SPECS
from srcgrad.runtime.rules.scipy_lu import LU_SPECS
from srcgrad.runtime.rules.scipy_specs import LINALG_SPECS
from srcgrad.runtime.rules.signal import SIGNAL_SPECS
from srcgrad.runtime.rules.special import SCIPY_NAMES, SCIPY_UFUNCS

__all__ = ["SCIPY_SPECS", "SCIPY_RULED", "SCIPY_NO_GRADIENT", "COVERED_MODULES", "classify",
           "numpys_own", "public_name", "refusal"]

COVERED_MODULES = ("scipy.special", "scipy.linalg", "scipy.signal")

SCIPY_SPECS = {**{f"scipy.linalg.{n}": s for n, s in {**LINALG_SPECS, **FACTOR_SPECS,
                                                       **LU_SPECS}.items()},
               **{f"scipy.signal.{n}": s for n, s in SIGNAL_SPECS.items()}}
"""Public name → the :class:`~srcgrad.runtime.rules.scipy_specs.Spec` both modes follow."""

SCIPY_RULED = frozenset(
    {f"scipy.special.{n}" for n in (*SCIPY_NAMES, *SCIPY_UFUNCS, "multigammaln", "polygamma")}
    | {f"scipy.linalg.{n}" for n in ("solve_triangular", "cho_factor", "cho_solve",
                                     "lu_solve")}
    | {"scipy.signal.convolve"} | set(SCIPY_SPECS))
"""Public names with a derivative rule (or, as ``gammasgn``, a rule that it has none).  NumPy's
own functions re-exported by SciPy (``scipy.special.sinc`` is ``np.sinc``,
``scipy.linalg.LinAlgError`` is NumPy's) are NumPy's table's, as :func:`numpys_own` says."""

_TOOLS = "not a function of arrays (a class, a setting, a test runner)"
_ZEROS = "the zeros of a function of an integer order: no gradient"
_INT_ROOTS = "the nodes and weights of a quadrature of integer degree: no gradient"
_INT_POLY = "a polynomial of integer degree: no gradient"
_INTS = "integers (or a function of integers only)"
_TEST = "a truth value or a structure of integers"
_CONSTANT = "piecewise constant: its derivative is zero wherever it exists"
_MATRIX = "a constant matrix of a size"

SCIPY_NO_GRADIENT: dict[str, str] = {
    **{f"scipy.special.{n}": _TOOLS for n in (
        "SpecialFunctionError", "SpecialFunctionWarning", "errstate", "geterr", "seterr",
        "test")},
    **{f"scipy.special.{n}": _ZEROS for n in (
        "ai_zeros", "bi_zeros", "bei_zeros", "beip_zeros", "ber_zeros", "berp_zeros",
        "kei_zeros", "keip_zeros", "ker_zeros", "kerp_zeros", "kelvin_zeros", "erf_zeros",
        "fresnel_zeros", "fresnelc_zeros", "fresnels_zeros", "jn_zeros", "jnjnp_zeros",
        "jnp_zeros", "jnyn_zeros", "y0_zeros", "y1_zeros", "y1p_zeros", "yn_zeros",
        "ynp_zeros")},
    **{f"scipy.special.{n}": _INT_ROOTS for n in (
        "roots_chebyc", "roots_chebys", "roots_chebyt", "roots_chebyu", "roots_hermite",
        "roots_hermitenorm", "roots_laguerre", "roots_legendre", "roots_sh_chebyt",
        "roots_sh_chebyu", "roots_sh_legendre", "c_roots", "h_roots", "he_roots", "l_roots",
        "p_roots", "ps_roots", "s_roots", "t_roots", "ts_roots", "u_roots", "us_roots")},
    **{f"scipy.special.{n}": _INT_POLY for n in (
        "chebyc", "chebys", "chebyt", "chebyu", "hermite", "hermitenorm", "laguerre",
        "legendre", "sh_chebyt", "sh_chebyu", "sh_legendre")},
    **{f"scipy.special.{n}": _INTS for n in ("bernoulli", "euler", "stirling2")},
    "scipy.special.round": _CONSTANT,
    **{f"scipy.linalg.{n}": _TOOLS for n in (
        "LinAlgWarning", "find_best_blas_type", "get_blas_funcs",
        "get_lapack_funcs", "test")},
    **{f"scipy.linalg.{n}": _MATRIX for n in (
        "hadamard", "helmert", "hilbert", "invhilbert", "pascal", "invpascal", "dft")},
    **{f"scipy.linalg.{n}": _TEST for n in ("bandwidth", "ishermitian", "issymmetric")},
    **{f"scipy.signal.{n}": _TOOLS for n in ("BadCoefficients", "choose_conv_method", "test")},
    **{f"scipy.signal.{n}": "indices of extrema" for n in (
        "argrelextrema", "argrelmax", "argrelmin")},
    **{f"scipy.signal.{n}": _TEST for n in ("check_COLA", "check_NOLA", "correlation_lags",
                                           "max_len_seq", "unit_impulse")},
    "scipy.signal.square": _CONSTANT,
}
"""Public name → why its result carries no gradient: both modes run it on plain data."""


def numpys_own(f: Any) -> bool:
    """Whether ``f`` is NumPy's (``scipy.linalg.LinAlgError`` is ``np.linalg.LinAlgError``):
    NumPy's table classifies it, whichever module it is reached through."""
    module = getattr(f, "__module__", None)
    return isinstance(module, str) and module.split(".")[0] == "numpy"


def public_name(f: Any) -> str | None:
    """``scipy.linalg.inv``: the public name of a callable of a covered SciPy module (None:
    not one, or that module is not imported)."""
    name = getattr(f, "__name__", None)
    if not isinstance(name, str) or numpys_own(f):
        return None
    for module in COVERED_MODULES:
        loaded = sys.modules.get(module)
        try:
            if loaded is not None and getattr(loaded, name, None) is f:
                return f"{module}.{name}"
        except TypeError:                       # an object that refuses ``is``: not SciPy's
            return None
    return None


def classify(name: str) -> str:
    """``"rule"``, ``"no gradient"`` or ``"refused"``: what srcgrad does with a public
    SciPy callable."""
    if name in SCIPY_RULED:
        return "rule"
    if name in SCIPY_NO_GRADIENT:
        return "no gradient"
    return "refused"


def refusal(name: str) -> str:
    """Why a call of ``name`` with an argument that carries a gradient is refused."""
    return (f"srcgrad has no derivative rule for {name} (an argument carries a gradient); "
            "register one with srcgrad.defvjp, or keep its arguments constant")
