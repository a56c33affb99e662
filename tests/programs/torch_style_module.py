"""PyTorch-style modules in plain NumPy: a Module base class with __call__ -> forward and a
training flag, Linear/MLP subclasses calling super().__init__(), submodules as attributes,
model.eval() before an evaluation loss."""
import numpy as np


class Module:
    def __init__(self):
        self.training = True

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    def train(self, mode=True):
        self.training = mode
        return self

    def eval(self):
        return self.train(False)

    def forward(self, *args):
        raise NotImplementedError


class Linear(Module):
    def __init__(self, weight, bias):
        super().__init__()
        self.weight = weight
        self.bias = bias

    def forward(self, x):
        return x @ self.weight.T + self.bias


class MLP(Module):
    def __init__(self, params, p_drop=0.5):
        super().__init__()
        self.fc1 = Linear(params["fc1.weight"], params["fc1.bias"])
        self.fc2 = Linear(params["fc2.weight"], params["fc2.bias"])
        self.p_drop = p_drop

    def forward(self, x):
        h = np.maximum(self.fc1(x), 0.0)
        if self.training:
            h = h * (np.random.rand(*h.shape) > self.p_drop) / (1 - self.p_drop)
        return self.fc2(h)


def eval_loss(params, x, y):
    model = MLP(params)
    model.eval()
    out = model(x)
    return np.mean((out - y) ** 2)


def example_args():
    rs = np.random.RandomState(10)
    params = {"fc1.weight": rs.randn(6, 3) * 0.5, "fc1.bias": np.zeros(6),
              "fc2.weight": rs.randn(2, 6) * 0.5, "fc2.bias": np.zeros(2)}
    return params, rs.randn(5, 3), rs.randn(5, 2)


CASE = dict(f=eval_loss, args=example_args, wrt=0)
