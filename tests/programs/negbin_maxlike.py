"""autograd's negative_binomial_maxlike.py: the NB log pmf written with gammaln from
scipy.special, parameters through softplus and sigmoid, a negative mean log likelihood."""
import numpy as np
from scipy.special import gammaln


def negbin_loglike(r, p, x):
    # the negative binomial log likelihood we want to maximize
    return gammaln(r + x) - gammaln(r) - gammaln(x + 1) + x * np.log(p) + r * np.log(1 - p)


def negbin_sample(r, p, size, rs):
    # a negative binomial is a gamma-compound-Poisson
    return rs.poisson(rs.gamma(r, p / (1 - p), size=size))


def fit_objective(params, data):
    log_r, logit_p = params
    r = np.log1p(np.exp(log_r))
    p = 1.0 / (1.0 + np.exp(-logit_p))
    return -np.mean(negbin_loglike(r, p, data))


def example_args():
    rs = np.random.RandomState(0)
    data = negbin_sample(r=5, p=0.5, size=50, rs=rs)
    return np.array([1.0, 0.2]), data


CASE = dict(f=fit_objective, args=example_args, wrt=0)
