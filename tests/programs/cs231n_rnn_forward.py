"""CS231n rnn_forward: h = np.zeros((N, T, H)) filled by rnn_step_forward, caches in a list."""
import numpy as np


def rnn_step_forward(x, prev_h, Wx, Wh, b):
    next_h = np.tanh(x.dot(Wx) + prev_h.dot(Wh) + b)
    cache = (x, prev_h, Wx, Wh, next_h)
    return next_h, cache


def rnn_forward(x, h0, Wx, Wh, b):
    N, T, D = x.shape
    H = h0.shape[1]
    h = np.zeros((N, T, H))
    cache = []
    prev_h = h0
    for t in range(T):
        prev_h, step_cache = rnn_step_forward(x[:, t, :], prev_h, Wx, Wh, b)
        h[:, t, :] = prev_h
        cache.append(step_cache)
    return h, cache


def temporal_affine_forward(x, w, b):
    N, T, D = x.shape
    M = b.shape[0]
    out = x.reshape(N * T, D).dot(w).reshape(N, T, M) + b
    return out, (x, w, b, out)


def loss(Wx, Wh, b, W_out, x, h0, y):
    h, _ = rnn_forward(x, h0, Wx, Wh, b)
    scores, _ = temporal_affine_forward(h, W_out, np.zeros(W_out.shape[1]))
    return np.sum((scores - y) ** 2) / x.shape[0]


def example_args():
    rs = np.random.RandomState(55)
    N, T, D, H = 2, 4, 3, 3
    return (0.4 * rs.randn(D, H), 0.4 * rs.randn(H, H), np.zeros(H), 0.4 * rs.randn(H, 2),
            rs.randn(N, T, D), np.zeros((N, H)), rs.randn(N, T, 2))


CASE = dict(f=loss, args=example_args, wrt=(0, 1, 2, 3))
