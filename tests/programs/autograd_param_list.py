"""HIPS autograd's MNIST example: params a list of (W, b) tuples from init_random_params."""
import numpy as np
import numpy.random as npr
from scipy.special import logsumexp


def init_random_params(scale, layer_sizes, rs=npr.RandomState(0)):  # noqa: B008
    return [(scale * rs.randn(m, n), scale * rs.randn(n))
            for m, n in zip(layer_sizes[:-1], layer_sizes[1:])]


def neural_net_predict(params, inputs):
    for W, b in params:
        outputs = np.dot(inputs, W) + b
        inputs = np.tanh(outputs)
    return outputs - logsumexp(outputs, axis=1, keepdims=True)


def l2_norm(params):
    return sum(np.sum(W ** 2) + np.sum(b ** 2) for W, b in params)


def log_posterior(params, inputs, targets, L2_reg):
    log_prior = -L2_reg * l2_norm(params)
    log_lik = np.sum(neural_net_predict(params, inputs) * targets)
    return log_prior + log_lik


def objective(params, inputs, targets):
    return -log_posterior(params, inputs, targets, 1.0)


def example_args():
    params = init_random_params(0.3, [3, 4, 3], rs=npr.RandomState(22))
    rs = npr.RandomState(23)
    inputs = rs.randn(5, 3)
    targets = np.eye(3)[[0, 1, 2, 1, 0]]
    return params, inputs, targets


CASE = dict(f=objective, args=example_args, wrt=0)
