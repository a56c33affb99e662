"""A truncated Dirichlet-process mixture: stick-breaking weights with np.cumprod and
np.concatenate(([1.], ...)), Beta-distributed sticks through scipy.special.expit, a 1-D
Gaussian mixture log likelihood via scipy.special.logsumexp with b= weights."""
import numpy as np
from scipy.special import expit, logsumexp


def stick_breaking(v):
    remaining = np.cumprod(1.0 - v)
    return v * np.concatenate(([1.0], remaining[:-1]))


def dp_mixture_nll(params, x):
    v = expit(params["stick_logits"])
    w = stick_breaking(v)
    w = np.append(w, 1.0 - w.sum())          # the leftover stick for the last component
    mu = params["means"]
    sigma = np.exp(params["log_scales"])
    log_comp = (-0.5 * ((x[:, None] - mu[None, :]) / sigma) ** 2
                - np.log(sigma) - 0.5 * np.log(2 * np.pi))
    return -np.sum(logsumexp(log_comp, axis=1, b=w[None, :]))


def example_args():
    rs = np.random.RandomState(6)
    x = np.concatenate([rs.randn(8) - 2.0, rs.randn(8) + 1.5])
    params = {"stick_logits": rs.randn(3) * 0.1,
              "means": np.array([-1.5, 0.0, 1.0, 2.0]),
              "log_scales": np.zeros(4)}
    return params, x


CASE = dict(f=dp_mixture_nll, args=example_args, wrt=0)
