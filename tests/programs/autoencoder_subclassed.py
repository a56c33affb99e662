"""A subclassed autoencoder: a Model base class keeping a name and a parameters() listing,
Encoder(Model) and Decoder(Model) calling super().__init__(name), __call__(self, x), and a
reconstruction loss with a contractive-style code penalty."""
import numpy as np


class Model:
    def __init__(self, name):
        self.name = name

    def parameters(self):
        return [v for k, v in sorted(vars(self).items()) if isinstance(v, np.ndarray)]

    def num_parameters(self):
        return sum(p.size for p in self.parameters())


class Encoder(Model):
    def __init__(self, W, b):
        super().__init__("encoder")
        self.W = W
        self.b = b

    def __call__(self, x):
        return np.tanh(x @ self.W + self.b)


class Decoder(Model):
    def __init__(self, W, b):
        super().__init__("decoder")
        self.W = W
        self.b = b

    def __call__(self, z):
        return z @ self.W + self.b


def reconstruction_loss(params, x, beta=0.01):
    encoder = Encoder(params["enc_W"], params["enc_b"])
    decoder = Decoder(params["dec_W"], params["dec_b"])
    z = encoder(x)
    x_hat = decoder(z)
    mse = np.mean(np.sum((x - x_hat) ** 2, axis=1))
    return mse + beta * np.mean(np.sum(z ** 2, axis=1))


def example_args():
    rs = np.random.RandomState(66)
    params = {"enc_W": rs.randn(5, 2) * 0.4, "enc_b": np.zeros(2),
              "dec_W": rs.randn(2, 5) * 0.4, "dec_b": np.zeros(5)}
    return params, rs.randn(7, 5)


CASE = dict(f=reconstruction_loss, args=example_args, wrt=0)
