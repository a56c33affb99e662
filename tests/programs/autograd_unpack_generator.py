"""HIPS autograd's neural-net example: a flat parameter vector unpacked by a generator."""
import numpy as np
from scipy.special import logsumexp

layer_sizes = [3, 4, 2]


def shapes_and_num(sizes):
    shapes = list(zip(sizes[:-1], sizes[1:]))
    N = sum((m + 1) * n for m, n in shapes)
    return shapes, N


def unpack_layers(weights):
    shapes, _ = shapes_and_num(layer_sizes)
    num_weights = len(weights)
    for m, n in shapes:
        yield weights[:m * n].reshape((m, n)), weights[m * n:m * n + n]
        weights = weights[(m + 1) * n:]
        num_weights -= (m + 1) * n


def predictions(weights, inputs):
    for W, b in unpack_layers(weights):
        outputs = np.dot(inputs, W) + b
        inputs = np.tanh(outputs)
    return outputs - logsumexp(outputs, axis=1, keepdims=True)


def loss(weights, inputs, targets):
    log_prior = -0.5 * np.dot(weights, weights)
    log_lik = np.sum(predictions(weights, inputs) * targets)
    return -(log_prior + log_lik)


def example_args():
    rs = np.random.RandomState(21)
    _, N = shapes_and_num(layer_sizes)
    inputs = rs.randn(5, 3)
    targets = np.eye(2)[rs.randint(0, 2, size=5)]
    return 0.3 * rs.randn(N), inputs, targets


CASE = dict(f=loss, args=example_args, wrt=0)
