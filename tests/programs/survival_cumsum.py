"""A discrete-time survival model: hazards by sigmoid, survival via np.cumsum of log(1 - h)."""
import numpy as np


def survival_nll(w, X, durations, events):
    hazards = 1.0 / (1.0 + np.exp(-(X @ w)))            # (n, T)
    log_surv = np.cumsum(np.log1p(-hazards), axis=1)
    n = X.shape[0]
    idx = np.arange(n)
    log_h_event = np.log(hazards[idx, durations])
    log_s_before = np.where(durations > 0, log_surv[idx, durations - 1], 0.0)
    ll = events * (log_h_event + log_s_before) + (1 - events) * log_surv[idx, durations]
    return -np.mean(ll)


def example_args():
    rs = np.random.RandomState(53)
    X = rs.randn(6, 4, 3)     # (n, T, features)
    return 0.3 * rs.randn(3), X, np.array([0, 1, 3, 2, 3, 1]), np.array([1, 0, 1, 1, 0, 1])


CASE = dict(f=survival_nll, args=example_args, wrt=0)
