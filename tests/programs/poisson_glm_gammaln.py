"""A Poisson GLM's exact negative log likelihood with scipy.special.gammaln and expit gating."""
import numpy as np
from scipy import special


def poisson_nll(beta, X, counts, exposure):
    log_rate = X @ beta + np.log(exposure)
    rate = np.exp(log_rate)
    ll = counts * log_rate - rate - special.gammaln(counts + 1)
    gate = special.expit(beta[0])
    return -np.sum(ll) * gate


def example_args():
    rs = np.random.RandomState(59)
    X = np.hstack([np.ones((8, 1)), rs.randn(8, 2)])
    return np.array([0.1, 0.2, -0.3]), X, rs.poisson(2.0, size=8).astype(float), rs.rand(8) + 0.5


CASE = dict(f=poisson_nll, args=example_args, wrt=0)
