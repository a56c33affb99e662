"""Module-global constants: NL = 3 layers in range(NL), a WIDTH, a DTYPE and an EPS."""
import numpy as np

NL = 3
WIDTH = 4
EPS = 1e-8
DTYPE = np.float64


def forward(params, x):
    for l in range(NL):
        x = np.tanh(x @ params[l] + 0.1)
    return x


def loss(params, x):
    out = forward(params, x)
    norm = np.sqrt(np.sum(out ** 2, axis=1) + EPS)
    return np.mean(norm).astype(DTYPE)


def example_args():
    rs = np.random.RandomState(30)
    return [rs.randn(WIDTH, WIDTH) / np.sqrt(WIDTH) for _ in range(NL)], rs.randn(5, WIDTH)


CASE = dict(f=loss, args=example_args, wrt=0)
