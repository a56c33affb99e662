"""A pre-norm transformer block: layer_norm, gelu (tanh approximation), residuals, param dict."""
import numpy as np


def layer_norm(x, g, b, eps=1e-5):
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return g * (x - mean) / np.sqrt(var + eps) + b


def gelu(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))


def softmax(x):
    x = x - np.max(x, axis=-1, keepdims=True)
    ex = np.exp(x)
    return ex / np.sum(ex, axis=-1, keepdims=True)


def self_attention(x, w_qkv, w_out):
    q, k, v = np.split(x @ w_qkv, 3, axis=-1)
    n_seq = x.shape[0]
    mask = (1 - np.tri(n_seq)) * -1e10
    a = softmax(q @ k.T / np.sqrt(q.shape[-1]) + mask) @ v
    return a @ w_out


def block(x, p):
    x = x + self_attention(layer_norm(x, **p['ln_1']), p['w_qkv'], p['w_out'])
    x = x + gelu(layer_norm(x, **p['ln_2']) @ p['w_fc']) @ p['w_proj']
    return x


def loss(p, x, y):
    return np.mean((block(x, p) - y) ** 2)


def example_args():
    rs = np.random.RandomState(14)
    d = 4
    p = {
        'ln_1': {'g': np.ones(d), 'b': np.zeros(d)},
        'ln_2': {'g': np.ones(d), 'b': np.zeros(d)},
        'w_qkv': 0.3 * rs.randn(d, 3 * d), 'w_out': 0.3 * rs.randn(d, d),
        'w_fc': 0.3 * rs.randn(d, 2 * d), 'w_proj': 0.3 * rs.randn(2 * d, d),
    }
    return p, rs.randn(3, d), rs.randn(3, d)


CASE = dict(f=loss, args=example_args, wrt=0)
