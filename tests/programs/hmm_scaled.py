"""Rabiner's scaled HMM forward pass: alpha = np.zeros((T, K)) filled row by row with c[t]."""
import numpy as np


def softmax_rows(z):
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def forward_scaled(pi, A, B, obs):
    T = len(obs)
    K = len(pi)
    alpha = np.zeros((T, K))
    c = np.zeros(T)
    alpha[0] = pi * B[:, obs[0]]
    c[0] = alpha[0].sum()
    alpha[0] /= c[0]
    for t in range(1, T):
        alpha[t] = (alpha[t - 1] @ A) * B[:, obs[t]]
        c[t] = alpha[t].sum()
        alpha[t] /= c[t]
    return alpha, c


def neg_log_likelihood(A_logits, B_logits, obs):
    K = A_logits.shape[0]
    pi = np.full(K, 1.0 / K)
    A = softmax_rows(A_logits)
    B = softmax_rows(B_logits)
    _, c = forward_scaled(pi, A, B, obs)
    return -np.sum(np.log(c))


def example_args():
    rs = np.random.RandomState(17)
    return rs.randn(3, 3), rs.randn(3, 4), np.array([0, 2, 1, 3, 3, 0, 1])


CASE = dict(f=neg_log_likelihood, args=example_args, wrt=(0, 1))
