"""Gaussian mixture marginal likelihood with scipy.special.logsumexp, an E-step computing
responsibilities, and a expected complete-data log likelihood (the EM objective)."""
import numpy as np
from scipy.special import logsumexp


def log_gaussian(X, mu, log_sigma):
    D = X.shape[1]
    sigma2 = np.exp(2 * log_sigma)
    sq = np.sum((X[:, None, :] - mu[None, :, :]) ** 2, axis=2)
    return -0.5 * sq / sigma2 - D * log_sigma - 0.5 * D * np.log(2 * np.pi)


def e_step(X, logits, mu, log_sigma):
    log_pi = logits - logsumexp(logits)
    log_p = log_gaussian(X, mu, log_sigma) + log_pi
    log_norm = logsumexp(log_p, axis=1, keepdims=True)
    resp = np.exp(log_p - log_norm)
    return resp, log_norm.sum()


def em_objective(params, X):
    logits, mu, log_sigma = params["logits"], params["mu"], params["log_sigma"]
    resp, marginal = e_step(X, logits, mu, log_sigma)
    log_pi = logits - logsumexp(logits)
    Q = np.sum(resp * (log_gaussian(X, mu, log_sigma) + log_pi))
    entropy = -np.sum(resp * np.log(resp + 1e-12))
    return -(Q + entropy) / X.shape[0]


def example_args():
    rs = np.random.RandomState(12)
    X = np.concatenate([rs.randn(6, 2) + 2.0, rs.randn(6, 2) - 2.0])
    params = {"logits": np.zeros(3), "mu": rs.randn(3, 2), "log_sigma": np.zeros(3)}
    return params, X


CASE = dict(f=em_objective, args=example_args, wrt=0)
