"""Batched bilinear scoring with np.einsum ellipsis subscripts ('...i,ij,...j->...'), a
per-head projection '...hd,hde->...he' and an explicit-output trace term."""
import numpy as np


def bilinear_scores(u, W, v):
    return np.einsum("...i,ij,...j->...", u, W, v)


def head_project(x, P):
    return np.einsum("...hd,hde->...he", x, P)


def objective(params, u, v, x, labels):
    W, P = params["W"], params["P"]
    s = bilinear_scores(u, W, v)
    loss = np.mean(np.logaddexp(0.0, -labels * s))
    heads = head_project(x, P)
    loss += 0.1 * np.mean(np.einsum("...he,...he->...", heads, heads))
    loss += 0.01 * np.einsum("ii", W @ W.T)
    return loss


def example_args():
    rs = np.random.RandomState(61)
    params = {"W": rs.randn(3, 3) * 0.5, "P": rs.randn(2, 4, 3) * 0.3}
    u = rs.randn(2, 5, 3)
    v = rs.randn(2, 5, 3)
    x = rs.randn(5, 2, 4)
    labels = np.sign(rs.randn(2, 5))
    return params, u, v, x, labels


CASE = dict(f=objective, args=example_args, wrt=0)
