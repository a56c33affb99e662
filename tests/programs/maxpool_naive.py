"""CS231n max_pool_forward_naive: pool_param dict, nested loops filling a preallocated output."""
import numpy as np


def max_pool_forward_naive(x, pool_param):
    N, C, H, W = x.shape
    ph = pool_param.get('pool_height', 2)
    pw = pool_param.get('pool_width', 2)
    stride = pool_param.get('stride', 2)
    H_out = 1 + (H - ph) // stride
    W_out = 1 + (W - pw) // stride
    out = np.zeros((N, C, H_out, W_out))
    for i in range(H_out):
        for j in range(W_out):
            region = x[:, :, i * stride:i * stride + ph, j * stride:j * stride + pw]
            out[:, :, i, j] = np.max(region, axis=(2, 3))
    cache = (x, pool_param)
    return out, cache


def loss(x):
    out, _ = max_pool_forward_naive(x, {'pool_height': 2, 'pool_width': 2, 'stride': 2})
    return np.sum(np.sin(out))


def example_args():
    return (np.random.RandomState(12).randn(1, 2, 4, 4),)


CASE = dict(f=loss, args=example_args, wrt=0)
