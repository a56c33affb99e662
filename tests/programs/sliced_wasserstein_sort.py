"""Sliced Wasserstein distance between point clouds: random unit directions from an rs,
projections sorted with np.sort along axis 0, the mean squared gap between sorted samples."""
import numpy as np


def random_directions(dim, num_projections, rs):
    directions = rs.normal(size=(num_projections, dim))
    return directions / np.linalg.norm(directions, axis=1, keepdims=True)


def sliced_wasserstein(X, Y, num_projections=8, rs=None):
    if rs is None:
        rs = np.random.RandomState(0)
    theta = random_directions(X.shape[1], num_projections, rs)
    x_proj = np.sort(X @ theta.T, axis=0)
    y_proj = np.sort(Y @ theta.T, axis=0)
    return np.mean((x_proj - y_proj) ** 2)


def generator_loss(W, z, data, rs):
    samples = np.tanh(z @ W)
    return sliced_wasserstein(samples, data, num_projections=6, rs=rs)


def example_args():
    rs = np.random.RandomState(44)
    z = rs.randn(10, 3)
    data = rs.randn(10, 2) * 0.5 + np.array([0.3, -0.2])
    return rs.randn(3, 2) * 0.5, z, data, np.random.RandomState(7)


CASE = dict(f=generator_loss, args=example_args, wrt=0)
