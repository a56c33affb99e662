"""A univariate Hawkes process log likelihood with an exponential kernel: the recursive
A_i = exp(-beta (t_i - t_{i-1})) (1 + A_{i-1}) over a Python loop of event times, the
compensator in closed form, parameters through np.exp; events validated with np.all(np.diff)."""
import numpy as np


def hawkes_loglik(params, times, T):
    mu, alpha, beta = np.exp(params)
    if not np.all(np.diff(times) > 0):
        raise ValueError("event times must be strictly increasing")
    loglik = 0.0
    A = 0.0
    for i, t in enumerate(times):
        if i > 0:
            A = np.exp(-beta * (t - times[i - 1])) * (1.0 + A)
        intensity = mu + alpha * A
        loglik += np.log(intensity)
    compensator = mu * T + (alpha / beta) * np.sum(1.0 - np.exp(-beta * (T - times)))
    return -(loglik - compensator)


def example_args():
    rs = np.random.RandomState(19)
    times = np.cumsum(rs.exponential(0.7, size=15))
    return np.log(np.array([0.8, 0.5, 1.5])), times, float(times[-1] + 0.5)


CASE = dict(f=hawkes_loglik, args=example_args, wrt=0)
