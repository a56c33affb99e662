"""A Kalman filter's log likelihood: predict/update loop with np.linalg.inv and slogdet."""
import numpy as np


def kalman_log_likelihood(log_q, log_r, ys, F, H):
    n = F.shape[0]
    Q = np.exp(log_q) * np.eye(n)
    R = np.exp(log_r) * np.eye(H.shape[0])
    m = np.zeros(n)
    P = np.eye(n)
    ll = 0.0
    for y in ys:
        # predict
        m = F @ m
        P = F @ P @ F.T + Q
        # update
        S = H @ P @ H.T + R
        S_inv = np.linalg.inv(S)
        v = y - H @ m
        K = P @ H.T @ S_inv
        m = m + K @ v
        P = P - K @ S @ K.T
        sign, logdet = np.linalg.slogdet(S)
        ll += -0.5 * (v @ S_inv @ v + logdet + len(y) * np.log(2 * np.pi))
    return -ll


def example_args():
    rs = np.random.RandomState(38)
    F = np.array([[1.0, 0.1], [0.0, 1.0]])
    H = np.array([[1.0, 0.0]])
    ys = [np.array([v]) for v in np.cumsum(rs.randn(8)) * 0.3]
    return -1.0, -0.5, ys, F, H


CASE = dict(f=kalman_log_likelihood, args=example_args, wrt=(0, 1))
