"""GP regression: negative log marginal likelihood with np.linalg.cholesky and scipy cho_solve."""
import numpy as np
from scipy.linalg import cho_solve


def rbf_kernel(X1, X2, lengthscale, variance):
    sqdist = (np.sum(X1 ** 2, 1).reshape(-1, 1) + np.sum(X2 ** 2, 1)
              - 2 * np.dot(X1, X2.T))
    return variance * np.exp(-0.5 * sqdist / lengthscale ** 2)


def neg_log_marginal_likelihood(log_params, X, y):
    lengthscale, variance, noise = np.exp(log_params)
    n = X.shape[0]
    K = rbf_kernel(X, X, lengthscale, variance) + (noise + 1e-6) * np.eye(n)
    L = np.linalg.cholesky(K)
    alpha = cho_solve((L, True), y)
    return (0.5 * y.dot(alpha) + np.sum(np.log(np.diag(L)))
            + 0.5 * n * np.log(2 * np.pi))


def example_args():
    rs = np.random.RandomState(5)
    X = rs.uniform(-3, 3, size=(8, 1))
    y = np.sin(X).ravel() + 0.1 * rs.randn(8)
    return np.log(np.array([1.0, 1.0, 0.1])), X, y


CASE = dict(f=neg_log_marginal_likelihood, args=example_args, wrt=0)
