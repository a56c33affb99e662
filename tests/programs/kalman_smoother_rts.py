"""A Rauch-Tung-Striebel smoother: forward filter storing lists of means and covariances,
a backward pass over reversed(range(T)), np.linalg.solve for the gain, a smoothed-state loss."""
import numpy as np


def kalman_filter(y, A, C, Q, R, mu0, V0):
    T = y.shape[0]
    mus, Vs, mus_pred, Vs_pred = [], [], [], []
    mu_pred, V_pred = mu0, V0
    for t in range(T):
        S = C @ V_pred @ C.T + R
        K = np.linalg.solve(S, C @ V_pred).T
        mu = mu_pred + K @ (y[t] - C @ mu_pred)
        V = V_pred - K @ C @ V_pred
        mus.append(mu)
        Vs.append(V)
        mus_pred.append(mu_pred)
        Vs_pred.append(V_pred)
        mu_pred = A @ mu
        V_pred = A @ V @ A.T + Q
    return mus, Vs, mus_pred, Vs_pred


def rts_smoother(y, A, C, Q, R, mu0, V0):
    mus, Vs, mus_pred, Vs_pred = kalman_filter(y, A, C, Q, R, mu0, V0)
    T = len(mus)
    mu_s = [None] * T
    V_s = [None] * T
    mu_s[-1], V_s[-1] = mus[-1], Vs[-1]
    for t in reversed(range(T - 1)):
        J = np.linalg.solve(Vs_pred[t + 1], A @ Vs[t]).T
        mu_s[t] = mus[t] + J @ (mu_s[t + 1] - mus_pred[t + 1])
        V_s[t] = Vs[t] + J @ (V_s[t + 1] - Vs_pred[t + 1]) @ J.T
    return np.array(mu_s), np.array(V_s)


def smoothing_loss(log_noise, y, truth, A, C):
    q, r = np.exp(log_noise)
    n = A.shape[0]
    Q = q * np.eye(n)
    R = r * np.eye(C.shape[0])
    mu_s, V_s = rts_smoother(y, A, C, Q, R, np.zeros(n), np.eye(n))
    return np.mean((mu_s[:, 0] - truth) ** 2) + 0.01 * np.mean(np.trace(V_s, axis1=1, axis2=2))


def example_args():
    rs = np.random.RandomState(55)
    dt = 0.1
    A = np.array([[1.0, dt], [0.0, 1.0]])
    C = np.array([[1.0, 0.0]])
    truth = np.cumsum(rs.randn(10) * 0.2)
    y = (truth + rs.randn(10) * 0.3)[:, None]
    return np.array([-2.0, -1.0]), y, truth, A, C


CASE = dict(f=smoothing_loss, args=example_args, wrt=0)
