"""Black-box variational inference (autograd's example): Monte Carlo ELBO, rs.randn samples."""
import numpy as np
from scipy.stats import norm


def log_density(w, X, y):
    prior = np.sum(norm.logpdf(w, 0.0, 1.0), axis=1)
    preds = w @ X.T
    lik = np.sum(norm.logpdf(y, preds, 0.5), axis=1)
    return prior + lik


def gaussian_entropy(log_std):
    return 0.5 * log_std.shape[0] * (1.0 + np.log(2 * np.pi)) + np.sum(log_std)


def variational_objective(params, X, y, rs, num_samples=4):
    D = X.shape[1]
    mean, log_std = params[:D], params[D:]
    samples = rs.randn(num_samples, D) * np.exp(log_std) + mean
    lower_bound = gaussian_entropy(log_std) + np.mean(log_density(samples, X, y))
    return -lower_bound


def example_args():
    rs = np.random.RandomState(41)
    X = rs.randn(6, 2)
    y = X @ np.array([1.0, -1.0]) + 0.3 * rs.randn(6)
    return np.array([0.0, 0.0, -1.0, -1.0]), X, y, np.random.RandomState(3)


CASE = dict(f=variational_objective, args=example_args, wrt=0)
