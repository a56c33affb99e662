"""Constrained parameters behind @property: a Gaussian likelihood class storing unconstrained
raw values, exposing `scale` (softplus) and `corr` (tanh) as properties, a __repr__ used in a
debug log, and a classmethod constructor from a flat vector."""
import logging

import numpy as np

log = logging.getLogger("bivariate")


def softplus(x):
    return np.logaddexp(0.0, x)


class BivariateNormal:
    def __init__(self, loc, raw_scale, raw_corr):
        self.loc = loc
        self.raw_scale = raw_scale
        self.raw_corr = raw_corr

    @classmethod
    def from_vector(cls, theta):
        return cls(theta[:2], theta[2:4], theta[4])

    @property
    def scale(self):
        return softplus(self.raw_scale)

    @property
    def corr(self):
        return np.tanh(self.raw_corr)

    @property
    def covariance(self):
        s = self.scale
        off = self.corr * s[0] * s[1]
        return np.array([[s[0] ** 2, off], [off, s[1] ** 2]])

    def __repr__(self):
        return "BivariateNormal(loc=%s, scale=%s, corr=%.3f)" % (self.loc, self.scale, self.corr)  # noqa: UP031

    def log_prob(self, x):
        cov = self.covariance
        diff = x - self.loc
        sol = np.linalg.solve(cov, diff.T).T
        _, logdet = np.linalg.slogdet(cov)
        return -0.5 * np.sum(diff * sol, axis=1) - 0.5 * logdet - np.log(2 * np.pi)


def nll(theta, data):
    dist = BivariateNormal.from_vector(theta)
    log.debug("fitting %r", dist)
    return -np.mean(dist.log_prob(data))


def example_args():
    rs = np.random.RandomState(13)
    data = rs.multivariate_normal([0.5, -1.0], [[1.0, 0.6], [0.6, 2.0]], size=12)
    return np.array([0.0, 0.0, 0.5, 0.5, 0.2]), data


CASE = dict(f=nll, args=example_args, wrt=0)
