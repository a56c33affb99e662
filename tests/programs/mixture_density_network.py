"""A mixture density network: the net emits (pi, mu, log sigma) per input; NLL via log-sum-exp."""
import numpy as np

K = 3


def mdn_forward(params, x):
    h = np.tanh(x @ params["W1"] + params["b1"])
    out = h @ params["W2"] + params["b2"]
    logit_pi, mu, log_sigma = out[:, :K], out[:, K:2 * K], out[:, 2 * K:]
    log_pi = logit_pi - np.log(np.sum(np.exp(logit_pi), axis=1, keepdims=True))
    return log_pi, mu, log_sigma


def mdn_nll(params, x, y):
    log_pi, mu, log_sigma = mdn_forward(params, x)
    z = (y[:, None] - mu) / np.exp(log_sigma)
    log_comp = -0.5 * z ** 2 - log_sigma - 0.5 * np.log(2 * np.pi)
    a = log_pi + log_comp
    a_max = np.max(a, axis=1, keepdims=True)
    lse = a_max.squeeze(1) + np.log(np.sum(np.exp(a - a_max), axis=1))
    return -np.mean(lse)


def example_args():
    rs = np.random.RandomState(42)
    params = {"W1": 0.5 * rs.randn(1, 5), "b1": np.zeros(5),
              "W2": 0.5 * rs.randn(5, 3 * K), "b2": np.zeros(3 * K)}
    x = rs.uniform(-1, 1, size=(6, 1))
    return params, x, np.sin(3 * x[:, 0])


CASE = dict(f=mdn_nll, args=example_args, wrt=0)
