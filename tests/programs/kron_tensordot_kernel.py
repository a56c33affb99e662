"""A separable (Kronecker) GP kernel on a grid: np.kron of two RBF factors, np.tensordot to
contract a mode of the data tensor, np.linalg.slogdet and solve for the marginal likelihood."""
import numpy as np


def rbf(x, lengthscale):
    d = x[:, None] - x[None, :]
    return np.exp(-0.5 * (d / lengthscale) ** 2)


def kron_marginal_nll(log_params, x1, x2, Y):
    ell1, ell2, noise = np.exp(log_params)
    K = np.kron(rbf(x1, ell1), rbf(x2, ell2)) + noise * np.eye(len(x1) * len(x2))
    y = Y.reshape(-1)
    sign, logdet = np.linalg.slogdet(K)
    alpha = np.linalg.solve(K, y)
    return 0.5 * y @ alpha + 0.5 * logdet + 0.5 * len(y) * np.log(2 * np.pi)


def tucker_penalty(core, U, Y):
    recon = np.tensordot(U, core, axes=([1], [0]))        # (n1, r) x (r, n2) -> (n1, n2)
    return np.sum((recon - Y) ** 2)


def loss(log_params, core, U, x1, x2, Y):
    return kron_marginal_nll(log_params, x1, x2, Y) + 0.1 * tucker_penalty(core, U, Y)


def example_args():
    rs = np.random.RandomState(33)
    x1 = np.linspace(0, 1, 3)
    x2 = np.linspace(0, 2, 4)
    Y = np.sin(x1)[:, None] * np.cos(x2)[None, :] + 0.1 * rs.randn(3, 4)
    return np.log(np.array([0.5, 0.8, 0.1])), rs.randn(2, 4), rs.randn(3, 2), x1, x2, Y


CASE = dict(f=loss, args=example_args, wrt=(0, 1, 2))
