"""Causal self-attention with a padding mask: scores filled with -np.inf through np.where,
np.triu for the causal mask, a stable softmax, np.nan_to_num for fully-masked rows."""
import numpy as np


def softmax(x, axis=-1):
    x_max = np.max(x, axis=axis, keepdims=True)
    x_max = np.where(np.isfinite(x_max), x_max, 0.0)
    e = np.exp(x - x_max)
    return e / np.maximum(np.sum(e, axis=axis, keepdims=True), 1e-30)


def causal_attention(x, Wq, Wk, Wv, lengths):
    B, T, D = x.shape
    q = x @ Wq
    k = x @ Wk
    v = x @ Wv
    scores = q @ k.transpose(0, 2, 1) / np.sqrt(D)
    causal = np.triu(np.ones((T, T), dtype=bool), k=1)
    pad = np.arange(T)[None, :] >= lengths[:, None]          # (B, T) keys that are padding
    mask = causal[None, :, :] | pad[:, None, :]
    scores = np.where(mask, -np.inf, scores)
    attn = softmax(scores, axis=-1)
    attn = np.nan_to_num(attn)
    return attn @ v


def loss(params, x, lengths, target):
    Wq, Wk, Wv = params
    out = causal_attention(x, Wq, Wk, Wv, lengths)
    valid = (np.arange(x.shape[1])[None, :] < lengths[:, None])[..., None]
    return np.sum(valid * (out - target) ** 2) / valid.sum()


def example_args():
    rs = np.random.RandomState(17)
    D = 4
    params = [rs.randn(D, D) * 0.5 for _ in range(3)]
    x = rs.randn(2, 5, D)
    return params, x, np.array([5, 3]), rs.randn(2, 5, D)


CASE = dict(f=loss, args=example_args, wrt=0)
