"""``srcgrad.linalg``: PyTorch's ``torch.linalg`` on Tensors, one rule-table primitive a call.

Checks and messages are PyTorch's (``linalg.inv: A must be batches of square matrices …``), a
singular or indefinite matrix raises :class:`LinAlgError` (a ``RuntimeError``, as PyTorch's),
and results that are tuples in PyTorch are named tuples with PyTorch's field names.

Gradient conventions follow PyTorch where the rule table leaves a choice:
``eigh``/``eigvalsh``/``cholesky`` read one triangle of ``A``; PyTorch's gradient is the
symmetric matrix, so the input is passed as ``A`` (its value) plus the symmetric part of a zero
(its gradient).  ``svd(full_matrices=True)`` of a non-square matrix ignores the gradient of
the extra (arbitrary) singular vectors, as PyTorch documents.
"""

from __future__ import annotations

from collections import namedtuple
from typing import Any

import numpy as np

from srcgrad.runtime import rules as R
from srcgrad.runtime.eager import grad_mode
from srcgrad.runtime.eager.function import Function
from srcgrad.runtime.eager.tensor import Tensor, apply
from srcgrad.runtime.rules.primitives import lookup

__all__ = ["LinAlgError", "norm", "vector_norm", "matrix_norm", "solve", "inv", "det",
           "slogdet", "cholesky", "eigh", "eigvalsh", "svd", "svdvals", "qr", "pinv",
           "matrix_power", "multi_dot"]


class LinAlgError(RuntimeError):
    """A matrix the factorization cannot handle (singular, not positive-definite)."""


def _result(name: str, fields: list[str]) -> type:
    def __repr__(self: Any) -> str:
        body = ",\n".join(f"{f}={v!r}" for f, v in zip(fields, self))
        return f"srcgrad.return_types.{name}(\n{body})"
    return type(name, (namedtuple(name, fields),), {"__repr__": __repr__, "__slots__": ()})


linalg_slogdet = _result("linalg_slogdet", ["sign", "logabsdet"])
linalg_eigh = _result("linalg_eigh", ["eigenvalues", "eigenvectors"])
linalg_svd = _result("linalg_svd", ["U", "S", "Vh"])
linalg_qr = _result("linalg_qr", ["Q", "R"])


# ------------------------------------------------------------------------------- checks
def _tensor(x: Any, fn: str, arg: str = "A", pos: int = 1) -> Tensor:
    if not isinstance(x, Tensor):
        kind = type(x)
        shown = kind.__name__ if kind.__module__ == "builtins" else \
            f"{kind.__module__}.{kind.__qualname__}"
        raise TypeError(f"{fn}(): argument '{arg}' (position {pos}) must be Tensor, not {shown}")
    return x


def _floating(name: str, A: Tensor) -> None:
    if A._data.dtype.kind not in "fc":
        raise RuntimeError(f"linalg.{name}: Expected a floating point or complex tensor as "
                           f"input. Got {A.dtype.legacy.replace('Tensor', '')}")


def _matrices(name: str, A: Any, square: bool = True) -> Tensor:
    """``A`` checked as PyTorch checks a (batch of) square matrices for ``linalg.<name>``."""
    A = _tensor(A, f"linalg_{name}")
    if A.dim() < 2:
        raise RuntimeError(f"linalg.{name}: The input tensor A must have at least 2 "
                           "dimensions.")
    if square and A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"linalg.{name}: A must be batches of square matrices, but they "
                           f"are {A.shape[-2]} by {A.shape[-1]} matrices")
    _floating(name, A)
    return A


def _batches(a: np.ndarray) -> Any:
    """(prefix, matrix) for each matrix of a stack, prefix as PyTorch words it."""
    if a.ndim == 2:
        yield "", a
        return
    for i, m in enumerate(a.reshape(-1, *a.shape[-2:])):
        yield f"(Batch element {i}): ", m


def _zero_pivot(m: np.ndarray) -> int:
    """1-based index of the first zero diagonal element of U in ``P A = L U`` (0: none)."""
    u = np.array(m, dtype=np.float64)
    n = u.shape[0]
    for k in range(n):
        p = k + int(np.argmax(np.abs(u[k:, k])))
        if u[p, k] == 0:
            return k + 1
        u[[k, p]] = u[[p, k]]
        u[k + 1:] -= np.outer(u[k + 1:, k] / u[k, k], u[k])
    return 0


def _bad_minor(m: np.ndarray, upper: bool) -> int:
    """The order of the first leading minor that is not positive-definite."""
    m = m.T if upper else m
    for k in range(1, m.shape[0] + 1):
        try:
            np.linalg.cholesky(m[:k, :k])
        except np.linalg.LinAlgError:
            return k
    return m.shape[0]


def _singular(name: str, A: Tensor, **kw: Any) -> LinAlgError:
    """PyTorch's error for a singular or indefinite ``A``."""
    for prefix, m in _batches(np.asarray(A._data)):
        if name == "cholesky":
            try:
                np.linalg.cholesky(m.T if kw.get("upper") else m)
                continue
            except np.linalg.LinAlgError:
                return LinAlgError(
                    f"linalg.cholesky: {prefix}The factorization could not be completed "
                    "because the input is not positive-definite (the leading minor of order "
                    f"{_bad_minor(m, kw.get('upper', False))} is not positive-definite).")
        k = _zero_pivot(m)
        if k and name == "solve":
            return LinAlgError(f"torch.linalg.solve: {prefix}The solver failed because the "
                               "input matrix is singular.")
        if k:
            return LinAlgError(f"linalg.{name}: {prefix}The diagonal element {k} is zero, the "
                               "inversion could not be completed because the input matrix is "
                               "singular.")
    return LinAlgError(f"linalg.{name}: the input matrix is singular")


def _call(name: str, node: str, prim: Any, args: tuple, params: dict | None = None) -> Tensor:
    try:
        return apply(prim, node, args, params or {})
    except np.linalg.LinAlgError:
        raise _singular(name, args[0], **(params or {})) from None


def _symmetric_grad(A: Tensor) -> Tensor:
    """``A`` itself, but the gradient that reaches it is symmetrized (PyTorch's convention for
    functions of a symmetric matrix given by one triangle)."""
    if not (A.requires_grad and grad_mode.is_grad_enabled()):
        return A
    sym = (A + A.mT) * 0.5
    return A.detach() + (sym - sym.detach())


# --------------------------------------------------------------------------------- norms
_MATRIX_ORDS = ("fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf)


def _ord_ok(ord: Any) -> None:
    if isinstance(ord, str) or isinstance(ord, bool) or not isinstance(ord, (int, float)):
        raise TypeError("linalg_vector_norm(): argument 'ord' (position 2) must be Number, "
                        f"not {type(ord).__name__}")


def vector_norm(x: Tensor, ord: float = 2, dim: Any = None, keepdim: bool = False, *,
                dtype: Any = None) -> Tensor:
    """``torch.linalg.vector_norm``: the ``ord``-norm over ``dim`` (all dimensions: None)."""
    x = _tensor(x, "linalg_vector_norm", "input")
    _ord_ok(ord)
    _floating("vector_norm", x)
    if dtype is not None:
        x = x.to(dtype)
    axis = tuple(dim) if isinstance(dim, (list, tuple)) else dim
    return apply(lookup(np.linalg.vector_norm), "LinalgVectorNormBackward0", (x,),
                 {"ord": ord, "axis": axis, "keepdims": keepdim})


def matrix_norm(A: Tensor, ord: Any = "fro", dim: tuple = (-2, -1), keepdim: bool = False, *,
                dtype: Any = None) -> Tensor:
    """``torch.linalg.matrix_norm``: 'fro', 'nuc', ±1, ±2, ±inf over the two ``dim``."""
    A = _tensor(A, "linalg_matrix_norm")
    if A.dim() < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 "
                           "dimensions.")
    if not any(ord == o and type(ord) is not bool for o in _MATRIX_ORDS):
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    _floating("matrix_norm", A)
    if dtype is not None:
        A = A.to(dtype)
    node = ("LinalgVectorNormBackward0" if ord == "fro" else "SumBackward1" if ord == "nuc"
            else "AmaxBackward0" if ord > 0 else "AminBackward0")
    return apply(R.norm, node, (A,), {"ord": ord, "axis": tuple(dim), "keepdims": keepdim})


def norm(A: Tensor, ord: Any = None, dim: Any = None, keepdim: bool = False, *,
         dtype: Any = None) -> Tensor:
    """``torch.linalg.norm``: a vector norm or a matrix norm, as ``dim`` and ``ord`` say."""
    A = _tensor(A, "linalg_norm")
    if isinstance(dim, int):
        dim = (dim,)
    if dim is None and ord is not None:
        if A.dim() not in (1, 2):
            raise RuntimeError("linalg.norm: If dim is not specified but ord is, the input "
                               f"must be 1D or 2D. Got {A.dim()}D.")
        dim = tuple(range(A.dim()))
    if dim is not None and len(dim) == 2:
        return matrix_norm(A, "fro" if ord is None else ord, dim, keepdim, dtype=dtype)
    if isinstance(ord, str):
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 "
                           "dimensions.")
    return vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype)


# ------------------------------------------------------------------ solves and inverses
def solve(A: Tensor, B: Tensor, *, left: bool = True) -> Tensor:
    """``torch.linalg.solve``: ``X`` with ``A X = B`` (``X A = B`` with ``left=False``).

    ``B`` is a (batch of) vector(s) when it is 1-D or has ``A``'s batch shape, as PyTorch
    reads it."""
    A = _matrices("solve", A)
    B = _tensor(B, "linalg_solve", "B", 2)
    if not left:
        return solve(A.mT, B.mT).mT
    vector = B.dim() == 1 or (B.dim() == A.dim() - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
    rows = B.shape[0] if B.dim() == 1 else B.shape[-2] if not vector else B.shape[-1]
    if rows != A.shape[-1]:
        cols = 1 if vector else B.shape[-1]
        raise RuntimeError("linalg.solve: Incompatible shapes of A and B for the equation "
                           f"AX = B ({A.shape[-2]}x{A.shape[-1]} and {rows}x{cols})")
    if vector and B.dim() > 1:
        return _call("solve", "LinalgSolveExBackward0", lookup(np.linalg.solve),
                     (A, B.unsqueeze(-1))).squeeze(-1)
    return _call("solve", "LinalgSolveExBackward0", lookup(np.linalg.solve), (A, B))


def inv(A: Tensor) -> Tensor:
    """``torch.linalg.inv``."""
    A = _matrices("inv", A)
    return _call("inv", "LinalgInvExBackward0", lookup(np.linalg.inv), (A,))


def det(A: Tensor) -> Tensor:
    """``torch.linalg.det``."""
    A = _matrices("det", A)
    return apply(lookup(np.linalg.det), "LinalgDetBackward0", (A,))


def slogdet(A: Tensor) -> Any:
    """``torch.linalg.slogdet``: ``(sign, logabsdet)``; only ``logabsdet`` has a gradient."""
    A = _matrices("slogdet", A)
    return linalg_slogdet(apply(R.slogdet_sign, "LinalgSlogdetBackward0", (A,)),
                          apply(R.slogdet_logabsdet, "LinalgSlogdetBackward0", (A,)))


def pinv(A: Tensor, *, atol: Any = None, rtol: Any = None, hermitian: bool = False) -> Tensor:
    """``torch.linalg.pinv`` (differentiated at constant rank, as PyTorch does)."""
    A = _matrices("pinv", A, square=False)
    if atol is not None:
        raise NotImplementedError("srcgrad.linalg.pinv does not take atol; use rtol")
    params: dict = {"hermitian": hermitian}
    if rtol is not None:
        params["rtol"] = rtol
    return apply(lookup(np.linalg.pinv), "LinalgPinvBackward0", (A,), params)


def matrix_power(A: Tensor, n: int) -> Tensor:
    """``torch.linalg.matrix_power``: ``A`` times itself ``n`` times (``inv(A)`` for n < 0)."""
    A = _matrices("matrix_power", A)
    if n == 0:
        node = "CopyBackwards"
    elif n == 1:
        node = "CloneBackward0"
    else:
        node = "LinalgInvExBackward0" if n == -1 else "MmBackward0"
    return _call("inv", node, lookup(np.linalg.matrix_power), (A,), {"n": int(n)})


def multi_dot(tensors: Any, *, out: Any = None) -> Tensor:
    """``torch.linalg.multi_dot``: a product of matrices (the first and last may be 1-D)."""
    if out is not None:
        raise NotImplementedError("srcgrad.linalg.multi_dot does not take out=")
    tensors = list(tensors)
    if len(tensors) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(tensors)}")
    for i, t in enumerate(tensors):
        wanted = (1, 2) if i in (0, len(tensors) - 1) else (2,)
        if _tensor(t, "linalg_multi_dot", "tensors").dim() not in wanted:
            where = "first" if i == 0 else "last" if i == len(tensors) - 1 else None
            raise RuntimeError(
                f"multi_dot(): the {where} tensor must be 1D or 2D but got {t.dim()}D"
                if where else f"multi_dot(): tensor {i} must be 2D but got {t.dim()}D")
    return apply(R.multi_dot, "MmBackward0", tuple(tensors))


# -------------------------------------------------------------------- factorizations
def cholesky(A: Tensor, *, upper: bool = False, out: Any = None) -> Tensor:
    """``torch.linalg.cholesky``: ``L`` with ``A = L Lᴴ`` (``U`` with ``A = Uᴴ U``)."""
    A = _matrices("cholesky", A)
    return _call("cholesky", "LinalgCholeskyExBackward0", lookup(np.linalg.cholesky),
                 (_symmetric_grad(A),), {"upper": upper})


def eigh(A: Tensor, UPLO: str = "L") -> Any:
    """``torch.linalg.eigh``: ascending eigenvalues and orthonormal eigenvectors."""
    A = _matrices("eigh", A)
    S = _symmetric_grad(A)
    return linalg_eigh(apply(R.eigh_values, "LinalgEighBackward0", (S,), {"UPLO": UPLO}),
                       apply(R.eigh_vectors, "LinalgEighBackward0", (S,), {"UPLO": UPLO}))


def eigvalsh(A: Tensor, UPLO: str = "L") -> Tensor:
    """``torch.linalg.eigvalsh``."""
    A = _matrices("eigvalsh", A)
    return apply(lookup(np.linalg.eigvalsh), "LinalgEighBackward0", (_symmetric_grad(A),),
                 {"UPLO": UPLO})


def svd(A: Tensor, full_matrices: bool = True, *, driver: Any = None) -> Any:
    """``torch.linalg.svd``: ``U, S, Vh`` with ``A = U diag(S) Vh``."""
    A = _matrices("svd", A, square=False)
    U = apply(R.svd_u, "LinalgSvdBackward0", (A,))
    S = apply(R.svd_s, "LinalgSvdBackward0", (A,))
    Vh = apply(R.svd_vh, "LinalgSvdBackward0", (A,))
    m, n = A.shape[-2:]
    if full_matrices and m != n:
        from srcgrad.runtime.eager.views import cat
        u, _, vh = np.linalg.svd(A._data, full_matrices=True)
        k = min(m, n)
        if m > n:
            U = cat([U, Tensor._make(np.ascontiguousarray(u[..., k:]))], -1)
        else:
            Vh = cat([Vh, Tensor._make(np.ascontiguousarray(vh[..., k:, :]))], -2)
    return linalg_svd(U, S, Vh)


def svdvals(A: Tensor, *, driver: Any = None) -> Tensor:
    """``torch.linalg.svdvals``."""
    A = _matrices("svdvals", A, square=False)
    return apply(lookup(np.linalg.svdvals), "LinalgSvdBackward0", (A,))


def qr(A: Tensor, mode: str = "reduced") -> Any:
    """``torch.linalg.qr``: modes 'reduced', 'r' (``Q`` empty) and 'complete'."""
    if mode not in ("reduced", "r", "complete"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of "
                           "'reduced' (default), 'r', or 'complete'")
    A = _matrices("qr", A, square=False)
    R_ = apply(R.qr_r, "LinalgQrBackward0", (A,))
    if mode == "r":
        return linalg_qr(Tensor._make(np.empty(0, dtype=A._data.dtype)), R_)
    m, n = A.shape[-2:]
    if mode == "complete" and m > n:
        return linalg_qr(*_CompleteQR.apply(A))
    return linalg_qr(apply(R.qr_q, "LinalgQrBackward0", (A,)), R_)


class _CompleteQR(Function):
    """``qr(A, mode='complete')`` of a tall ``A``: values, and PyTorch's refusal in backward
    (the extra columns of ``Q`` are an arbitrary basis)."""

    @staticmethod
    def forward(ctx: Any, A: Tensor) -> tuple:
        q, r = np.linalg.qr(A._data, mode="complete")
        return Tensor._make(q), Tensor._make(r)

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> Any:
        raise RuntimeError("The QR decomposition is not differentiable when mode='complete' "
                           "and nrows > ncols.")


# ---------------------------------------------------------------------------------- einsum
def einsum(equation: str, *operands: Any) -> Tensor:
    """``torch.einsum(equation, *operands)`` (or the operands as one list)."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not isinstance(equation, str):
        raise NotImplementedError("srcgrad.einsum takes the equation as a string")
    lhs = equation.replace(" ", "").partition("->")[0].split(",")
    if len(lhs) != len(operands):
        raise RuntimeError(f"einsum(): {len(lhs)} operands were provided in the equation but "
                           f"{len(operands)} tensors were given" if len(lhs) < len(operands)
                           else "einsum(): more operands were provided than specified in the "
                           "equation")
    for i, (spec, op) in enumerate(zip(lhs, operands)):
        _tensor(op, "einsum", "operands", 2)
        if "..." not in spec and len(spec) != op.dim():
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({len(spec)})"
                               f" does not match the number of dimensions ({op.dim()}) for "
                               f"operand {i} and no ellipsis was given")
    return apply(R.einsum, "EinsumBackward0", operands, {"subscripts": equation})
