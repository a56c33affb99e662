"""A model object whose bound method model.loss(params, X, y) is differentiated; self.helper()."""
import numpy as np


class LinearSVM:
    def __init__(self, C=1.0, margin=1.0):
        self.C = C
        self.margin = margin

    def scores(self, params, X):
        return X @ params["w"] + params["b"]

    def hinge(self, s, y):
        return np.maximum(0.0, self.margin - y * s)

    def loss(self, params, X, y):
        s = self.scores(params, X)
        return 0.5 * params["w"] @ params["w"] + self.C * np.mean(self.hinge(s, y) ** 2)


model = LinearSVM(C=2.0)


def example_args():
    rs = np.random.RandomState(62)
    return {"w": rs.randn(3), "b": 0.1}, rs.randn(7, 3), np.sign(rs.randn(7))


CASE = dict(f=model.loss, args=example_args, wrt=0)
