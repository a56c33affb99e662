"""CS231n-style layer functions: affine/relu_forward returning (out, cache), softmax_loss."""
import numpy as np


def affine_forward(x, w, b):
    out = x.reshape(x.shape[0], -1).dot(w) + b
    cache = (x, w, b)
    return out, cache


def relu_forward(x):
    out = np.maximum(0, x)
    cache = x
    return out, cache


def affine_relu_forward(x, w, b):
    a, fc_cache = affine_forward(x, w, b)
    out, relu_cache = relu_forward(a)
    cache = (fc_cache, relu_cache)
    return out, cache


def softmax_loss(x, y):
    shifted_logits = x - np.max(x, axis=1, keepdims=True)
    Z = np.sum(np.exp(shifted_logits), axis=1, keepdims=True)
    log_probs = shifted_logits - np.log(Z)
    probs = np.exp(log_probs)
    N = x.shape[0]
    loss = -np.sum(log_probs[np.arange(N), y]) / N
    dx = probs.copy()
    dx[np.arange(N), y] -= 1
    dx /= N
    return loss, dx


def two_layer_loss(params, X, y, reg=0.1):
    W1, b1 = params['W1'], params['b1']
    W2, b2 = params['W2'], params['b2']
    h, cache1 = affine_relu_forward(X, W1, b1)
    scores, cache2 = affine_forward(h, W2, b2)
    data_loss, dscores = softmax_loss(scores, y)
    reg_loss = 0.5 * reg * (np.sum(W1 * W1) + np.sum(W2 * W2))
    loss = data_loss + reg_loss
    return loss


def example_args():
    rs = np.random.RandomState(1)
    params = {
        'W1': 1e-1 * rs.randn(4, 6), 'b1': np.zeros(6),
        'W2': 1e-1 * rs.randn(6, 3), 'b2': np.zeros(3),
    }
    X = rs.randn(5, 2, 2)
    y = np.array([0, 1, 2, 2, 1])
    return params, X, y


CASE = dict(f=two_layer_loss, args=example_args, wrt=0)
