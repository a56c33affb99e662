"""A 1-D Gaussian mixture's negative log likelihood with scipy.special.logsumexp and norm.logpdf."""
import numpy as np
from scipy.special import logsumexp
from scipy.stats import norm


def unpack(params, K):
    logits = params[:K]
    means = params[K:2 * K]
    log_stds = params[2 * K:]
    return logits, means, log_stds


def gmm_nll(params, data, K=3):
    logits, means, log_stds = unpack(params, K)
    log_weights = logits - logsumexp(logits)
    # (N, K) table of component log densities
    comp = norm.logpdf(data[:, None], loc=means, scale=np.exp(log_stds))
    return -np.sum(logsumexp(comp + log_weights, axis=1))


def example_args():
    rs = np.random.RandomState(6)
    data = np.concatenate([rs.randn(6) - 2, rs.randn(6) + 2])
    params = np.concatenate([np.zeros(3), np.array([-1.0, 0.0, 1.0]), np.zeros(3)])
    return params, data


CASE = dict(f=gmm_nll, args=example_args, wrt=0)
