"""autograd's sinusoid.py: sin written as a Taylor series summed in a while loop that stops
when the term is small (data-dependent trip count), then fitted to data through an amplitude
and frequency."""
import numpy as np


def taylor_sine(x):  # Taylor approximation to sine function
    ans = currterm = x
    i = 0
    while np.abs(currterm) > 0.001:
        currterm = -currterm * x ** 2 / ((2 * i + 3) * (2 * i + 2))
        ans = ans + currterm
        i += 1
    return ans


def fit_loss(params, ts, ys):
    amplitude, freq = params
    err = 0.0
    for t, y in zip(ts, ys):
        err = err + (amplitude * taylor_sine(freq * t) - y) ** 2
    return err / len(ts)


def example_args():
    rs = np.random.RandomState(15)
    ts = np.linspace(-2.0, 2.0, 7)
    ys = 1.3 * np.sin(0.8 * ts) + 0.05 * rs.randn(7)
    return np.array([1.0, 1.0]), ts, ys


CASE = dict(f=fit_loss, args=example_args, wrt=0)
