"""``srcgrad.linalg``, ``srcgrad.einsum`` and ``srcgrad.cuda`` against PyTorch: the same float64
inputs give the same values, gradients (1e-6 relative), node names and error messages."""

from __future__ import annotations

import numpy as np
import pytest

import srcgrad

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(7)


def _spd(n: int, batch: tuple = ()) -> np.ndarray:
    x = RNG.standard_normal((*batch, n, n))
    return x @ np.swapaxes(x, -1, -2) + n * np.eye(n)


def _run(lib, fn, arrays):
    ins = [lib.tensor(a, dtype=lib.float64, requires_grad=True) for a in arrays]
    out = fn(lib, *ins)
    outs = out if isinstance(out, tuple) else (out,)
    loss = sum((o * lib.tensor(np.cos(np.arange(o.numel())).reshape(tuple(o.shape)))).sum()
               for o in outs if o.requires_grad)
    loss.backward()
    return [o.detach().numpy() for o in outs], [None if t.grad is None else t.grad.numpy()
                                               for t in ins], outs


def check(fn, *arrays, values=True):
    got, g_grads, outs = _run(srcgrad, fn, arrays)
    want, t_grads, touts = _run(torch, fn, arrays)
    if values:
        for a, b in zip(got, want):
            np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-9)
    for a, b in zip(g_grads, t_grads):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-9)
    return outs, touts


A = RNG.standard_normal((4, 4))
TALL = RNG.standard_normal((5, 3))
WIDE = RNG.standard_normal((3, 5))
BATCH = RNG.standard_normal((2, 3, 3))

CASES = {
    "norm": (lambda L, a: L.linalg.norm(a), A),
    "norm-3d": (lambda L, a: L.linalg.norm(a), BATCH),
    "norm-ord-vec": (lambda L, a: L.linalg.norm(a, 3, dim=1, keepdim=True), A),
    "norm-nuc": (lambda L, a: L.linalg.norm(a, "nuc"), A),
    "norm-fro-dims": (lambda L, a: L.linalg.norm(a, "fro", dim=(0, 2)), BATCH),
    "norm-inf": (lambda L, a: L.linalg.norm(a, float("inf")), A),
    "norm-1-vec": (lambda L, a: L.linalg.norm(a[0], 1), A),
    "vector_norm": (lambda L, a: L.linalg.vector_norm(a, 1.5, dim=(0, 1)), BATCH),
    "vector_norm-inf": (lambda L, a: L.linalg.vector_norm(a, -float("inf"), dim=0), A),
    "vector_norm-keep": (lambda L, a: L.linalg.vector_norm(a, keepdim=True), BATCH),
    "matrix_norm-fro": (lambda L, a: L.linalg.matrix_norm(a), BATCH),
    "matrix_norm-2": (lambda L, a: L.linalg.matrix_norm(a, 2), A),
    "matrix_norm--2": (lambda L, a: L.linalg.matrix_norm(a, -2), BATCH),
    "matrix_norm-1": (lambda L, a: L.linalg.matrix_norm(a, 1, keepdim=True), A),
    "matrix_norm--inf": (lambda L, a: L.linalg.matrix_norm(a, -float("inf"), dim=(1, 0)), A),
    "solve": (lambda L, a, b: L.linalg.solve(a, b), A, RNG.standard_normal((4, 2))),
    "solve-vec": (lambda L, a, b: L.linalg.solve(a, b), A, RNG.standard_normal(4)),
    "solve-batch-vec": (lambda L, a, b: L.linalg.solve(a, b), BATCH,
                        RNG.standard_normal((2, 3))),
    "solve-right": (lambda L, a, b: L.linalg.solve(a, b, left=False), A,
                    RNG.standard_normal((2, 4))),
    "inv": (lambda L, a: L.linalg.inv(a), A),
    "inv-batch": (lambda L, a: L.linalg.inv(a), BATCH),
    "det": (lambda L, a: L.linalg.det(a), A),
    "det-batch": (lambda L, a: L.linalg.det(a), BATCH),
    "slogdet": (lambda L, a: L.linalg.slogdet(a).logabsdet, A),
    "cholesky-leaf": (lambda L, a: L.linalg.cholesky(a), _spd(4)),
    "cholesky-upper": (lambda L, a: L.linalg.cholesky(a, upper=True), _spd(3, (2,))),
    "cholesky-built": (lambda L, x: L.linalg.cholesky(x @ x.mT + 4 * L.eye(4, dtype=L.float64)),
                       A),
    "eigh-values": (lambda L, a: L.linalg.eigh(a).eigenvalues, _spd(4)),
    "eigh-vectors-sq": (lambda L, a: L.linalg.eigh(a)[1] ** 2, _spd(4)),
    "eigh-upper": (lambda L, a: L.linalg.eigh(a, UPLO="U")[0], _spd(3, (2,))),
    "eigh-built": (lambda L, x: L.linalg.eigh(x + x.mT)[1] ** 2, A),
    "eigvalsh": (lambda L, a: L.linalg.eigvalsh(a), _spd(4)),
    "svd-S": (lambda L, a: L.linalg.svd(a)[1], TALL),
    "svd-U2": (lambda L, a: L.linalg.svd(a, full_matrices=False)[0] ** 2, TALL),
    "svd-V2": (lambda L, a: L.linalg.svd(a, full_matrices=False).Vh ** 2, WIDE),
    "svd-full-tall": (lambda L, a: L.linalg.svd(a)[0][:, :3] ** 2, TALL),
    "svd-full-wide": (lambda L, a: L.linalg.svd(a)[2][:3] ** 2, WIDE),
    "svd-square": (lambda L, a: L.linalg.svd(a)[0] ** 2 + L.linalg.svd(a)[2] ** 2, A),
    "svdvals": (lambda L, a: L.linalg.svdvals(a), BATCH),
    "qr-tall": (lambda L, a: L.linalg.qr(a), TALL),
    "qr-wide": (lambda L, a: L.linalg.qr(a), WIDE),
    "qr-batch": (lambda L, a: L.linalg.qr(a).R, BATCH),
    "qr-complete-wide": (lambda L, a: L.linalg.qr(a, mode="complete"), WIDE),
    "pinv": (lambda L, a: L.linalg.pinv(a), TALL),
    "pinv-wide": (lambda L, a: L.linalg.pinv(a), WIDE),
    "matrix_power-3": (lambda L, a: L.linalg.matrix_power(a, 3), A),
    "matrix_power--2": (lambda L, a: L.linalg.matrix_power(a, -2), BATCH),
    "matrix_power-1": (lambda L, a: L.linalg.matrix_power(a, 1), A),
    "multi_dot": (lambda L, a, b, c: L.linalg.multi_dot([a, b, c]), RNG.standard_normal(3),
                  WIDE, TALL),
    "multi_dot-mats": (lambda L, a, b: L.linalg.multi_dot([a, b, a]), TALL, WIDE),
    "einsum-mm": (lambda L, a, b: L.einsum("ij,jk->ik", a, b), TALL, WIDE),
    "einsum-list": (lambda L, a, b: L.einsum("ij,jk", [a, b]), TALL, WIDE),
    "einsum-trace": (lambda L, a: L.einsum("ii", a), A),
    "einsum-diag": (lambda L, a: L.einsum("ii->i", a), A),
    "einsum-ellipsis": (lambda L, a, b: L.einsum("...ij,...jk->...ik", a, b), BATCH, BATCH),
    "einsum-outer-sum": (lambda L, a, b: L.einsum("i,j->", a, b), A[0], A[1]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_and_gradients_match_torch(name):
    fn, *arrays = CASES[name]
    check(fn, *arrays)


NODES = {
    "norm": "LinalgVectorNormBackward0", "solve": "LinalgSolveExBackward0",
    "inv": "LinalgInvExBackward0", "det": "LinalgDetBackward0",
    "cholesky-leaf": "LinalgCholeskyExBackward0", "eigh-values": "LinalgEighBackward0",
    "svd-S": "LinalgSvdBackward0", "qr-tall": "LinalgQrBackward0",
    "pinv": "LinalgPinvBackward0", "slogdet": "LinalgSlogdetBackward0",
    "matrix_norm-2": "AmaxBackward0", "norm-nuc": "SumBackward1",
    "matrix_power-3": "MmBackward0", "vector_norm": "LinalgVectorNormBackward0",
}


@pytest.mark.parametrize("name", sorted(NODES))
def test_node_names_match_torch(name):
    fn, *arrays = CASES[name]
    outs, touts = check(fn, *arrays)
    assert type(outs[0].grad_fn).__name__ == type(touts[0].grad_fn).__name__ == NODES[name]


def test_result_types_have_torch_fields():
    a = _spd(3)
    fields = {"eigh": ("eigenvalues", "eigenvectors"), "svd": ("U", "S", "Vh"),
              "qr": ("Q", "R"), "slogdet": ("sign", "logabsdet")}
    for lib in (srcgrad, torch):
        t = lib.tensor(a)
        for fn, names in fields.items():
            result = getattr(lib.linalg, fn)(t)
            assert len(result) == len(names)
            for name, part in zip(names, result):
                assert getattr(result, name) is part
    r = srcgrad.linalg.qr(srcgrad.tensor(TALL), mode="r")
    assert tuple(r.Q.shape) == (0,) and tuple(r.R.shape) == (3, 3)
    u, s, vh = srcgrad.linalg.svd(srcgrad.tensor(TALL))
    assert tuple(u.shape) == (5, 5) and tuple(vh.shape) == (3, 3)
    np.testing.assert_allclose(u.numpy().T @ u.numpy(), np.eye(5), atol=1e-12)
    q = srcgrad.linalg.qr(srcgrad.tensor(TALL), mode="complete").Q
    np.testing.assert_allclose(q.numpy(), torch.linalg.qr(torch.tensor(TALL),
                                                          mode="complete").Q.numpy(), atol=1e-12)


def _message(fn, lib):
    with pytest.raises(Exception) as info:
        fn(lib)
    return type(info.value), str(info.value).splitlines()[0]


SING = np.eye(3)
SING[1, 1] = SING[2, 2] = 0
ERRORS = {
    "inv-singular": lambda L: L.linalg.inv(L.tensor(SING)),
    "inv-singular-batch": lambda L: L.linalg.inv(L.tensor(np.stack([np.eye(3), SING]))),
    "inv-nonsquare": lambda L: L.linalg.inv(L.tensor(TALL)),
    "inv-int": lambda L: L.linalg.inv(L.eye(3, dtype=L.int64)),
    "solve-singular": lambda L: L.linalg.solve(L.tensor(SING), L.ones(3, dtype=L.float64)),
    "solve-shapes": lambda L: L.linalg.solve(L.ones(3, 3), L.ones(4)),
    "cholesky-indefinite": lambda L: L.linalg.cholesky(L.tensor([[1.0, 2.0], [2.0, 1.0]])),
    "cholesky-batch": lambda L: L.linalg.cholesky(L.tensor(np.stack([np.eye(3), SING]))),
    "det-1d": lambda L: L.linalg.det(L.ones(3)),
    "eigh-nonsquare": lambda L: L.linalg.eigh(L.ones(2, 3)),
    "svd-1d": lambda L: L.linalg.svd(L.ones(3)),
    "norm-3d-ord": lambda L: L.linalg.norm(L.ones(2, 2, 2), 2),
    "norm-fro-1d": lambda L: L.linalg.norm(L.ones(3), "fro"),
    "matrix_norm-ord": lambda L: L.linalg.matrix_norm(L.ones(3, 3), 3),
    "vector_norm-int": lambda L: L.linalg.vector_norm(L.ones(2, dtype=L.int64)),
    "vector_norm-str": lambda L: L.linalg.vector_norm(L.ones(3), "fro"),
    "qr-mode": lambda L: L.linalg.qr(L.ones(3, 3), mode="x"),
    "matrix_power-nonsquare": lambda L: L.linalg.matrix_power(L.ones(3, 4), 2),
    "multi_dot-one": lambda L: L.linalg.multi_dot([L.ones(3, 3)]),
    "einsum-dims": lambda L: L.einsum("ij,jk->ik", L.ones(3, 3), L.ones(3)),
    "numpy-arg": lambda L: L.linalg.inv(np.eye(2)),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors_match_torch(name):
    got_type, got = _message(ERRORS[name], srcgrad)
    want_type, want = _message(ERRORS[name], torch)
    assert got == want
    assert issubclass(got_type, RuntimeError) == issubclass(want_type, RuntimeError)
    assert issubclass(got_type, TypeError) == issubclass(want_type, TypeError)


def test_singular_error_is_linalg_error():
    with pytest.raises(srcgrad.linalg.LinAlgError):
        srcgrad.linalg.inv(srcgrad.zeros(2, 2))


def test_complete_qr_of_tall_matrix_refuses_gradient_in_backward_as_torch():
    for lib in (srcgrad, torch):
        a = lib.tensor(TALL, requires_grad=True)
        q, r = lib.linalg.qr(a, mode="complete")
        assert tuple(q.shape) == (5, 5)
        with pytest.raises(RuntimeError, match="not differentiable when mode='complete'"):
            q.sum().backward()


def test_second_order_through_inv_matches_torch():
    def hess_diag(lib):
        a = lib.tensor(A, requires_grad=True)
        (g,) = lib.autograd.grad(lib.linalg.inv(a).sum(), a, create_graph=True)
        (h,) = lib.autograd.grad((g * g).sum(), a)
        return h.numpy()
    np.testing.assert_allclose(hess_diag(srcgrad), hess_diag(torch), rtol=1e-6)


def test_cuda_reports_no_device_here():
    cupy_device = False
    try:
        import cupy
        cupy_device = cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        pass
    assert srcgrad.cuda.is_available() is cupy_device
    assert srcgrad.cuda.device_count() == (srcgrad.cuda.device_count() if cupy_device else 0)


def test_functions_not_offered_are_attribute_errors():
    with pytest.raises(AttributeError, match="no attribute 'eig' .*srcgrad offers norm"):
        _ = srcgrad.linalg.eig
    with pytest.raises(AttributeError, match="no attribute 'synchronize'"):
        _ = srcgrad.cuda.synchronize
    assert not hasattr(srcgrad.linalg, "einsum") and srcgrad.einsum is not None
