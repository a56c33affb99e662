"""A continuous-time Markov chain fitted to irregularly sampled states: a rate matrix Q with
np.fill_diagonal(Q, -Q.sum(axis=1)), transition matrices from scipy.linalg.expm(Q * dt),
a log likelihood summed over consecutive (state, next_state, dt) triples from zip."""
import numpy as np
from scipy.linalg import expm


def rate_matrix(log_rates, n_states):
    Q = np.zeros((n_states, n_states))
    off = ~np.eye(n_states, dtype=bool)
    Q[off] = np.exp(log_rates)
    np.fill_diagonal(Q, -Q.sum(axis=1))
    return Q


def ctmc_nll(log_rates, states, times, n_states=3):
    Q = rate_matrix(log_rates, n_states)
    nll = 0.0
    for s, s_next, dt in zip(states[:-1], states[1:], np.diff(times)):
        P = expm(Q * dt)
        nll -= np.log(P[s, s_next])
    return nll


def example_args():
    rs = np.random.RandomState(27)
    states = rs.randint(3, size=9)
    times = np.cumsum(rs.uniform(0.2, 1.0, size=9))
    return rs.randn(6) * 0.3, states, times


CASE = dict(f=ctmc_nll, args=example_args, wrt=0)
