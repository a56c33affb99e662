"""Multi-head self-attention as a class with __call__, splitting heads by reshape and transpose."""
import numpy as np


class MultiHeadAttention:
    def __init__(self, n_heads):
        self.n_heads = n_heads

    def split_heads(self, x):
        B, T, D = x.shape
        return x.reshape(B, T, self.n_heads, D // self.n_heads).transpose(0, 2, 1, 3)

    def merge_heads(self, x):
        B, H, T, Dh = x.shape
        return x.transpose(0, 2, 1, 3).reshape(B, T, H * Dh)

    def __call__(self, params, x):
        q = self.split_heads(x @ params['Wq'])
        k = self.split_heads(x @ params['Wk'])
        v = self.split_heads(x @ params['Wv'])
        att = q @ k.swapaxes(-1, -2) / np.sqrt(q.shape[-1])
        att = np.exp(att - att.max(-1, keepdims=True))
        att /= att.sum(-1, keepdims=True)
        return self.merge_heads(att @ v) @ params['Wo']


mha = MultiHeadAttention(n_heads=2)


def loss(params, x):
    y = mha(params, x)
    return np.mean((y + x) ** 2)


def example_args():
    rs = np.random.RandomState(13)
    params = {k: 0.3 * rs.randn(4, 4) for k in ('Wq', 'Wk', 'Wv', 'Wo')}
    return params, rs.randn(2, 3, 4)


CASE = dict(f=loss, args=example_args, wrt=0)
