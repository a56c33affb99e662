"""CS231n conv_forward via im2col: np.pad, loops filling a preallocated column matrix."""
import numpy as np


def im2col(x, HH, WW, stride, pad):
    N, C, H, W = x.shape
    x_padded = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)), mode='constant')
    H_out = 1 + (H + 2 * pad - HH) // stride
    W_out = 1 + (W + 2 * pad - WW) // stride
    cols = np.zeros((N, H_out * W_out, C * HH * WW))
    for i in range(H_out):
        for j in range(W_out):
            window = x_padded[:, :, i * stride:i * stride + HH, j * stride:j * stride + WW]
            cols[:, i * W_out + j, :] = window.reshape(N, -1)
    return cols, H_out, W_out


def conv_forward_im2col(x, w, b, conv_param):
    stride, pad = conv_param['stride'], conv_param['pad']
    F, C, HH, WW = w.shape
    N = x.shape[0]
    cols, H_out, W_out = im2col(x, HH, WW, stride, pad)
    out = cols @ w.reshape(F, -1).T + b
    out = out.reshape(N, H_out, W_out, F).transpose(0, 3, 1, 2)
    cache = (x, w, b, conv_param, cols)
    return out, cache


def loss(w, b, x):
    out, _ = conv_forward_im2col(x, w, b, {'stride': 1, 'pad': 1})
    return np.sum(np.tanh(out) ** 2)


def example_args():
    rs = np.random.RandomState(9)
    w = 0.2 * rs.randn(2, 2, 3, 3)
    b = np.zeros(2)
    x = rs.randn(1, 2, 4, 4)
    return w, b, x


CASE = dict(f=loss, args=example_args, wrt=(0, 1))
