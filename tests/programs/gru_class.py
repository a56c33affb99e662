"""A GRU cell object with __call__, unrolled over a sequence; the model object holds no params."""
import numpy as np


class GRUCell:
    def __init__(self, hidden):
        self.hidden = hidden

    def __call__(self, p, x, h):
        xh = np.concatenate([x, h])
        r = 1 / (1 + np.exp(-(p['Wr'] @ xh)))
        u = 1 / (1 + np.exp(-(p['Wu'] @ xh)))
        c = np.tanh(p['Wc'] @ np.concatenate([x, r * h]))
        return u * h + (1 - u) * c


class Model:
    def __init__(self, hidden):
        self.cell = GRUCell(hidden)
        self.hidden = hidden

    def loss(self, p, xs, y):
        h = np.zeros(self.hidden)
        for x in xs:
            h = self.cell(p, x, h)
        pred = p['Wo'] @ h
        return float(np.sum((pred - y) ** 2))


model = Model(hidden=3)


def loss(p, xs, y):
    return model.loss(p, xs, y)


def example_args():
    rs = np.random.RandomState(20)
    p = {'Wr': 0.4 * rs.randn(3, 5), 'Wu': 0.4 * rs.randn(3, 5), 'Wc': 0.4 * rs.randn(3, 5),
         'Wo': 0.4 * rs.randn(2, 3)}
    return p, rs.randn(4, 2), rs.randn(2)


CASE = dict(f=loss, args=example_args, wrt=0)
