"""``scipy.linalg``'s factorizations: ``eigh`` (and ``eigvalsh``), ``svd`` (and
``svdvals``), ``qr`` and ``lstsq``, one primitive per element of the result.

Each primitive computes SciPy's own value and borrows the rules of ``np.linalg``'s twin.
SciPy's LAPACK drivers may return eigenvectors (singular vectors, Q's columns) with other
signs than NumPy's: the rules then read NumPy's factor, so a cotangent is first turned by
the signs that carry SciPy's vectors onto NumPy's (:func:`signs`), and a tangent back.
``lstsq`` is differentiated at constant rank, its residues (``sum((b - a x)**2)``, empty
unless ``a`` has full column rank and more rows than columns) by their own rule.
"""

from __future__ import annotations

import numpy as np

from srcgrad.runtime.rules.decompositions import (
    eigh_grad,
    eigh_tangent,
    eigh_vectors,
    qr_grad,
    qr_q,
    qr_tangent,
    svd_grad,
    svd_tangent,
    svd_u,
)
from srcgrad.runtime.rules.primitives import NotCompiled, defjvp, defvjp, helper, primitive
from srcgrad.runtime.rules.scipy_specs import Spec, no_overwrite
from srcgrad.runtime.rules.solvers import lstsq_grad, lstsq_tangent

__all__ = ["FACTOR_SPECS", "signs"]


def _uplo(lower):
    return "L" if lower else "U"


def signs(mine, numpys):
    """±1 per column: the sign that turns each of NumPy's columns into SciPy's."""
    return np.sign(np.sum(mine * numpys, axis=-2, keepdims=True))


@primitive(dtype_rule="float")
def scipy_eigh_values(a, *, lower=True, only=False):
    """The eigenvalues of ``scipy.linalg.eigh(a, lower=, eigvals_only=only)``."""
    from scipy import linalg
    return linalg.eigh(a, lower=lower, eigvals_only=True) if only else \
        linalg.eigh(a, lower=lower)[0]


@primitive(dtype_rule="float")
def scipy_eigh_vectors(a, *, lower=True):
    """The eigenvectors of ``scipy.linalg.eigh(a, lower=)``."""
    from scipy import linalg
    return linalg.eigh(a, lower=lower)[1]


def _eigh_turn(ans, a, lower):
    return signs(ans, eigh_vectors(a, UPLO=_uplo(lower)))


defvjp(scipy_eigh_values, lambda g, ans, a, lower=True, only=False:
       eigh_grad(a, _uplo(lower), g, None))
defjvp(scipy_eigh_values, lambda tangents, ans, a, lower=True, only=False:
       eigh_tangent(a, _uplo(lower), tangents[0], False))
defvjp(scipy_eigh_vectors, lambda g, ans, a, lower=True:
       eigh_grad(a, _uplo(lower), None, g * _eigh_turn(ans, a, lower)))
defjvp(scipy_eigh_vectors, lambda tangents, ans, a, lower=True:
       eigh_tangent(a, _uplo(lower), tangents[0], True) * _eigh_turn(ans, a, lower))


@helper
def _check_full(shape, full_matrices):
    """``full_matrices=True`` is followed where the full factors are the reduced ones."""
    if full_matrices and shape[-1] != shape[-2]:
        raise NotCompiled("scipy.linalg.svd is differentiated by srcgrad with "
                          "full_matrices=False (or of a square matrix)")
    return full_matrices


@primitive(dtype_rule="float")
def scipy_svd_u(a, *, full_matrices=False):
    """``U`` of ``scipy.linalg.svd(a, full_matrices)``."""
    from scipy import linalg
    return linalg.svd(a, full_matrices=_check_full(np.shape(a), full_matrices))[0]


@primitive(dtype_rule="float")
def scipy_svd_s(a, *, full_matrices=False, compute_uv=True):
    """The singular values of ``scipy.linalg.svd(a, full_matrices, compute_uv)``."""
    from scipy import linalg
    if not compute_uv:
        return linalg.svd(a, compute_uv=False)
    return linalg.svd(a, full_matrices=_check_full(np.shape(a), full_matrices))[1]


@primitive(dtype_rule="float")
def scipy_svd_vh(a, *, full_matrices=False):
    """``Vh`` of ``scipy.linalg.svd(a, full_matrices)``."""
    from scipy import linalg
    return linalg.svd(a, full_matrices=_check_full(np.shape(a), full_matrices))[2]


def _svd_turn(a, u):
    return signs(u, svd_u(a))


defvjp(scipy_svd_u, lambda g, ans, a, full_matrices=False:
       svd_grad(a, g * _svd_turn(a, ans), None, None))
defjvp(scipy_svd_u, lambda tangents, ans, a, full_matrices=False:
       svd_tangent(a, tangents[0], 0) * _svd_turn(a, ans))
defvjp(scipy_svd_s, lambda g, ans, a, full_matrices=False, compute_uv=True:
       svd_grad(a, None, g, None))
defjvp(scipy_svd_s, lambda tangents, ans, a, full_matrices=False, compute_uv=True:
       svd_tangent(a, tangents[0], 1))
defvjp(scipy_svd_vh, lambda g, ans, a, full_matrices=False: svd_grad(
    a, None, None, g * np.swapaxes(_svd_turn(a, scipy_svd_u(a, full_matrices=full_matrices)),
                                   -1, -2)))
defjvp(scipy_svd_vh, lambda tangents, ans, a, full_matrices=False: svd_tangent(
    a, tangents[0], 2) * np.swapaxes(_svd_turn(a, scipy_svd_u(
        a, full_matrices=full_matrices)), -1, -2))


@helper
def _qr_mode(shape, mode):
    """SciPy's mode; ``'full'`` is followed where its factors are the economic ones."""
    if mode == "full" and shape[-2] > shape[-1]:
        raise NotCompiled("scipy.linalg.qr is differentiated by srcgrad with "
                          "mode='economic' (or 'full' of a matrix with no more rows than "
                          "columns)")
    return mode


@primitive(dtype_rule="float")
def scipy_qr_q(a, *, mode="full"):
    """``Q`` of ``scipy.linalg.qr(a, mode=)``."""
    from scipy import linalg
    return linalg.qr(a, mode=_qr_mode(np.shape(a), mode))[0]


@primitive(dtype_rule="float")
def scipy_qr_r(a, *, mode="full"):
    """``R`` of ``scipy.linalg.qr(a, mode=)`` (the one element of mode 'r')."""
    from scipy import linalg
    return linalg.qr(a, mode=_qr_mode(np.shape(a), mode))[-1]


def _qr_turn(a, mode):
    return signs(scipy_qr_q(a, mode=mode if mode != "r" else "economic"), qr_q(a))


defvjp(scipy_qr_q, lambda g, ans, a, mode="full": qr_grad(a, g * signs(ans, qr_q(a)), None))
defjvp(scipy_qr_q, lambda tangents, ans, a, mode="full":
       qr_tangent(a, tangents[0], 0) * signs(ans, qr_q(a)))
defvjp(scipy_qr_r, lambda g, ans, a, mode="full":
       qr_grad(a, None, g * np.swapaxes(_qr_turn(a, mode), -1, -2)))
defjvp(scipy_qr_r, lambda tangents, ans, a, mode="full":
       qr_tangent(a, tangents[0], 1) * np.swapaxes(_qr_turn(a, mode), -1, -2))


def _lstsq(a, b, cond, part):
    from scipy import linalg
    if np.ndim(a) != 2 or np.ndim(b) not in (1, 2):
        raise NotCompiled("scipy.linalg.lstsq is differentiated by srcgrad for one 2-D "
                          "matrix and a 1-D or 2-D right-hand side")
    return linalg.lstsq(a, b, cond=cond)[part]


@primitive(nin=2, dtype_rule="float")
def scipy_lstsq_x(a, b, *, rcond=None):
    """The solution of ``scipy.linalg.lstsq(a, b, cond=rcond)``."""
    return _lstsq(a, b, rcond, 0)


@primitive(nin=2, dtype_rule="float")
def scipy_lstsq_residues(a, b, *, rcond=None):
    """The residues of ``scipy.linalg.lstsq``: ``sum((b - a x)**2, axis=0)``, or empty."""
    return _lstsq(a, b, rcond, 1)


@primitive(nin=2, dtype_rule="index")
def scipy_lstsq_rank(a, b, *, rcond=None):
    """The effective rank ``scipy.linalg.lstsq`` found: an integer, no gradient."""
    return _lstsq(a, b, rcond, 2)


@primitive(nin=2, dtype_rule="float")
def scipy_lstsq_s(a, b, *, rcond=None):
    """The singular values of ``a`` that ``scipy.linalg.lstsq`` returns."""
    return _lstsq(a, b, rcond, 3)


@helper
def _residue_weight(g, shape):
    """The residues' cotangent (of ``shape``) against the residual's rows (0 where there
    are none)."""
    return 0.0 if 0 in tuple(shape) else g


def _residual(ans, a, b, rcond):
    """``(b - a x) * g`` with ``g`` the residues' cotangent, and ``x``."""
    x = scipy_lstsq_x(a, b, rcond=rcond)
    return b - np.matmul(a, x), x


def _residues_a(g, ans, a, b, rcond=None):
    r, x = _residual(ans, a, b, rcond)
    w = np.reshape(r * _residue_weight(g, np.shape(ans)), (np.shape(a)[0], -1))
    return -2.0 * np.matmul(w, np.swapaxes(np.reshape(x, (np.shape(a)[1], -1)), -1, -2))


def _residues_b(g, ans, a, b, rcond=None):
    r, x = _residual(ans, a, b, rcond)
    return 2.0 * r * _residue_weight(g, np.shape(ans))


def _residues_jvp(tangents, ans, a, b, rcond=None):
    ta, tb = tangents
    r, x = _residual(ans, a, b, rcond)
    moved = 0.0 * r
    if ta is not None:
        moved = moved - np.matmul(ta, x)
    if tb is not None:
        moved = moved + tb
    return _residue_weight(2.0 * np.sum(r * moved, axis=0), np.shape(ans)) + 0.0 * ans


defvjp(scipy_lstsq_x, lambda g, ans, a, b, rcond=None: lstsq_grad(g, a, b, rcond, 0, True),
       lambda g, ans, a, b, rcond=None: lstsq_grad(g, a, b, rcond, 0, False))
defjvp(scipy_lstsq_x, lambda tangents, ans, a, b, rcond=None:
       lstsq_tangent(ans, a, b, *tangents, rcond, 0))
defvjp(scipy_lstsq_residues, _residues_a, _residues_b)
defjvp(scipy_lstsq_residues, _residues_jvp)
defvjp(scipy_lstsq_rank, None, None)
defvjp(scipy_lstsq_s, lambda g, ans, a, b, rcond=None: lstsq_grad(g, a, b, rcond, 3, True),
       lambda g, ans, a, b, rcond=None: lstsq_grad(g, a, b, rcond, 3, False))
defjvp(scipy_lstsq_s, lambda tangents, ans, a, b, rcond=None:
       lstsq_tangent(ans, a, b, *tangents, rcond, 3))


# ---------------------------------------------------------------------------------------------
# SciPy's calls

def _eigh(st, only=None):
    name = "scipy.linalg.eigvalsh" if only else "scipy.linalg.eigh"
    refusal = no_overwrite(name, st, "overwrite_a", "overwrite_b")
    if refusal is not None:
        return refusal
    if st["b"] is not None or st["type"] != 1 or st["subset_by_index"] is not None or \
            st["subset_by_value"] is not None:
        return (f"{name} is differentiated by srcgrad for the standard problem (b=None, "
                "type=1) and every eigenvalue (no subset_by_index or subset_by_value)")
    lower = bool(st["lower"])
    if only or st.get("eigvals_only"):
        return scipy_eigh_values, {"lower": lower, "only": True}
    return (scipy_eigh_values, {"lower": lower}), (scipy_eigh_vectors, {"lower": lower})


def _svd(st):
    refusal = no_overwrite("scipy.linalg.svd", st, "overwrite_a")
    if refusal is None and st["lapack_driver"] != "gesdd":
        refusal = "scipy.linalg.svd is differentiated by srcgrad with lapack_driver='gesdd'"
    if refusal is not None:
        return refusal
    if not st["compute_uv"]:
        return scipy_svd_s, {"compute_uv": False}
    full = bool(st["full_matrices"])
    return ((scipy_svd_u, {"full_matrices": full}), (scipy_svd_s, {"full_matrices": full}),
            (scipy_svd_vh, {"full_matrices": full}))


def _qr(st):
    refusal = no_overwrite("scipy.linalg.qr", st, "overwrite_a")
    if refusal is None and (st["pivoting"] or st["mode"] not in ("full", "economic", "r")):
        refusal = ("scipy.linalg.qr is differentiated by srcgrad without pivoting, in mode "
                   "'economic', 'r' or 'full'")
    if refusal is not None:
        return refusal
    if st["mode"] == "r":
        return ((scipy_qr_r, {"mode": "r"}),)
    return (scipy_qr_q, {"mode": st["mode"]}), (scipy_qr_r, {"mode": st["mode"]})


def _lstsq_spec(st):
    refusal = no_overwrite("scipy.linalg.lstsq", st, "overwrite_a", "overwrite_b")
    if refusal is None and st["lapack_driver"] not in (None, "gelsd"):
        refusal = "scipy.linalg.lstsq is differentiated by srcgrad with lapack_driver 'gelsd'"
    if refusal is not None:
        return refusal
    params = {"rcond": st["cond"]}
    return tuple((p, params) for p in _LSTSQ)


_EIGH = (scipy_eigh_values, scipy_eigh_vectors)
_SVD = (scipy_svd_u, scipy_svd_s, scipy_svd_vh)
_LSTSQ = (scipy_lstsq_x, scipy_lstsq_residues, scipy_lstsq_rank, scipy_lstsq_s)
FACTOR_SPECS = {
    "eigh": Spec("scipy.linalg.eigh", ("a",), _eigh, _EIGH),
    "eigvalsh": Spec("scipy.linalg.eigvalsh", ("a",), lambda st: _eigh(st, only=True),
                     _EIGH[:1]),
    "svd": Spec("scipy.linalg.svd", ("a",), _svd, _SVD),
    "svdvals": Spec("scipy.linalg.svdvals", ("a",), lambda st: no_overwrite(
        "scipy.linalg.svdvals", st, "overwrite_a") or (scipy_svd_s, {"compute_uv": False}),
        _SVD[1:2]),
    "qr": Spec("scipy.linalg.qr", ("a",), _qr, (scipy_qr_q, scipy_qr_r)),
    "lstsq": Spec("scipy.linalg.lstsq", ("a", "b"), _lstsq_spec, _LSTSQ),
}
"""``scipy.linalg`` names → how srcgrad follows them."""
