"""GP marginal likelihood with a jittered Cholesky in try/except LinAlgError, solve_triangular."""
import numpy as np
import scipy.linalg


def kernel(x1, x2, params):
    amp, ell = np.exp(params[0]), np.exp(params[1])
    d = x1[:, None] - x2[None, :]
    return amp * np.exp(-0.5 * (d / ell) ** 2)


def safe_cholesky(K, jitter=1e-8):
    try:
        return np.linalg.cholesky(K)
    except np.linalg.LinAlgError:
        return np.linalg.cholesky(K + jitter * np.eye(K.shape[0]))


def nll(params, x, y):
    noise = np.exp(params[2])
    K = kernel(x, x, params) + noise * np.eye(len(x))
    L = safe_cholesky(K)
    v = scipy.linalg.solve_triangular(L, y, lower=True)
    return 0.5 * v @ v + np.log(np.diag(L)).sum() + 0.5 * len(x) * np.log(2 * np.pi)


def example_args():
    rs = np.random.RandomState(16)
    x = np.sort(rs.uniform(0, 5, 7))
    y = np.cos(x) + 0.1 * rs.randn(7)
    return np.array([0.0, 0.0, -2.0]), x, y


CASE = dict(f=nll, args=example_args, wrt=0)
