"""CS231n conv_forward_naive: four nested loops, out[n, f, i, j] = np.sum(window * w[f]) + b[f]."""
import numpy as np


def conv_forward_naive(x, w, b, conv_param):
    stride = conv_param['stride']
    pad = conv_param['pad']
    N, C, H, W = x.shape
    F, _, HH, WW = w.shape
    x_pad = np.pad(x, ((0,), (0,), (pad,), (pad,)), 'constant')
    H_out = 1 + (H + 2 * pad - HH) // stride
    W_out = 1 + (W + 2 * pad - WW) // stride
    out = np.zeros((N, F, H_out, W_out))
    for n in range(N):
        for f in range(F):
            for i in range(H_out):
                for j in range(W_out):
                    window = x_pad[n, :, i * stride:i * stride + HH, j * stride:j * stride + WW]
                    out[n, f, i, j] = np.sum(window * w[f]) + b[f]
    cache = (x, w, b, conv_param)
    return out, cache


def loss(w, b, x):
    out, _ = conv_forward_naive(x, w, b, {'stride': 2, 'pad': 1})
    return np.sum(out ** 2)


def example_args():
    rs = np.random.RandomState(57)
    return 0.3 * rs.randn(2, 1, 3, 3), rs.randn(2), rs.randn(1, 1, 4, 4)


CASE = dict(f=loss, args=example_args, wrt=(0, 1))
