"""numpy-ml style layers: an ABC base with super().__init__, properties, @staticmethod,
a class-level registry filled by a decorator, activations looked up by string name, __call__."""
from abc import ABC, abstractmethod

import numpy as np


class ActivationBase(ABC):
    def __init__(self, **kwargs):
        super().__init__()

    def __call__(self, z):
        if z.ndim == 1:
            z = z.reshape(1, -1)
        return self.fn(z)

    @abstractmethod
    def fn(self, z):
        raise NotImplementedError


class ReLU(ActivationBase):
    def __str__(self):
        return "ReLU"

    def fn(self, z):
        return np.clip(z, 0, np.inf)


class LeakyReLU(ActivationBase):
    def __init__(self, alpha=0.3):
        self.alpha = alpha
        super().__init__()

    def __str__(self):
        return "Leaky ReLU(alpha={})".format(self.alpha)  # noqa: UP032

    def fn(self, z):
        _z = z.copy()
        _z[z < 0] = _z[z < 0] * self.alpha
        return _z


class Sigmoid(ActivationBase):
    def fn(self, z):
        return 1 / (1 + np.exp(-z))


class Tanh(ActivationBase):
    def fn(self, z):
        return np.tanh(z)


ACTIVATIONS = {
    "relu": ReLU,
    "leaky_relu": LeakyReLU,
    "sigmoid": Sigmoid,
    "tanh": Tanh,
}


class LayerBase(ABC):
    registry = {}

    def __init__(self):
        self.X = []
        self.trainable = True
        super().__init__()

    @classmethod
    def register(cls, name):
        def wrap(layer_cls):
            cls.registry[name] = layer_cls
            return layer_cls
        return wrap

    @property
    def hyperparameters(self):
        return {"layer": self.__class__.__name__}

    @abstractmethod
    def forward(self, X):
        raise NotImplementedError


@LayerBase.register("FullyConnected")
class FullyConnected(LayerBase):
    def __init__(self, W, b, act_fn="relu", **act_kwargs):
        super().__init__()
        self.n_in, self.n_out = W.shape
        self.act_fn = ACTIVATIONS[act_fn](**act_kwargs)
        self.parameters = {"W": W, "b": b}

    @property
    def hyperparameters(self):
        hp = super().hyperparameters
        hp.update({"n_in": self.n_in, "n_out": self.n_out, "act_fn": str(self.act_fn)})
        return hp

    @staticmethod
    def _affine(X, W, b):
        return X @ W + b

    def forward(self, X, retain_derived=True):
        W = self.parameters["W"]
        b = self.parameters["b"]
        Z = self._affine(X, W, b)
        Y = self.act_fn(Z)
        if retain_derived:
            self.X.append(X)
        return Y


def build_network(params, spec):
    layers = []
    for (W, b), (kind, act, kw) in zip(params, spec):
        layer_cls = LayerBase.registry[kind]
        layers.append(layer_cls(W, b, act_fn=act, **kw))
    return layers


def cross_entropy(y, y_pred):
    eps = np.finfo(float).eps
    return -np.sum(y * np.log(y_pred + eps))


def network_loss(params, X, y):
    spec = [("FullyConnected", "leaky_relu", {"alpha": 0.1}),
            ("FullyConnected", "tanh", {}),
            ("FullyConnected", "sigmoid", {})]
    layers = build_network(params, spec)
    out = X
    for layer in layers:
        out = layer(out) if callable(layer) else layer.forward(out)
    assert layers[0].hyperparameters["n_out"] == params[0][0].shape[1]
    return cross_entropy(y, out) / X.shape[0]


def example_args():
    rs = np.random.RandomState(77)
    dims = [3, 5, 4, 2]
    params = [(rs.randn(m, n) * 0.7, rs.randn(n) * 0.1) for m, n in zip(dims[:-1], dims[1:])]
    X = rs.randn(6, 3)
    y = (rs.rand(6, 2) > 0.5).astype(float)
    return params, X, y


CASE = dict(f=network_loss, args=example_args, wrt=0)
