"""Keras-style layers: a Layer base class with name and built flag, Dense(Layer) calling
super().__init__(name=name) and a lazy build(input_shape), a Sequential container whose
__call__ runs each layer's call(), activations looked up with getattr on a module-level class."""
import numpy as np


class activations:
    @staticmethod
    def relu(x):
        return np.maximum(x, 0.0)

    @staticmethod
    def linear(x):
        return x

    @staticmethod
    def softplus(x):
        return np.log1p(np.exp(x))


class Layer:
    def __init__(self, name=None):
        self.name = name or self.__class__.__name__.lower()
        self.built = False

    def build(self, input_shape):
        self.built = True

    def __call__(self, inputs):
        if not self.built:
            self.build(inputs.shape)
        return self.call(inputs)


class Dense(Layer):
    def __init__(self, kernel, bias, activation="linear", name=None):
        super().__init__(name=name)
        self.units = kernel.shape[1]
        self.kernel = kernel
        self.bias = bias
        self.activation = getattr(activations, activation)

    def build(self, input_shape):
        assert input_shape[-1] == self.kernel.shape[0], (input_shape, self.kernel.shape)
        super().build(input_shape)

    def call(self, inputs):
        return self.activation(inputs @ self.kernel + self.bias)


class Sequential:
    def __init__(self, layers):
        self.layers = layers

    def __call__(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


def poisson_loss(weights, x, counts):
    model = Sequential([
        Dense(weights[0], weights[1], activation="relu", name="hidden"),
        Dense(weights[2], weights[3], activation="softplus", name="rate"),
    ])
    rate = model(x)
    return np.mean(rate - counts * np.log(rate + 1e-7))


def example_args():
    rs = np.random.RandomState(91)
    weights = [rs.randn(3, 5) * 0.5, np.zeros(5), rs.randn(5, 1) * 0.5, np.zeros(1)]
    x = rs.randn(8, 3)
    counts = rs.poisson(2.0, size=(8, 1)).astype(float)
    return weights, x, counts


CASE = dict(f=poisson_loss, args=example_args, wrt=0)
