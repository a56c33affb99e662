"""A GAN's generator loss: generator and discriminator nets as lists of (W, b), noise from rs."""
import numpy as np


def leaky_relu(x, slope=0.2):
    return np.where(x > 0, x, slope * x)


def neural_net(params, inputs, final=None):
    for W, b in params[:-1]:
        inputs = leaky_relu(inputs @ W + b)
    W, b = params[-1]
    out = inputs @ W + b
    return out if final is None else final(out)


def logsigmoid(x):
    return x - np.logaddexp(0, x)


def generator_loss(gen_params, dsc_params, rs, batch_size=4, latent_dim=2):
    noise = rs.randn(batch_size, latent_dim)
    fake = neural_net(gen_params, noise, final=np.tanh)
    logits = neural_net(dsc_params, fake)
    return -np.mean(logsigmoid(logits))


def init(rs, sizes):
    return [(0.3 * rs.randn(m, n), 0.1 * rs.randn(n)) for m, n in zip(sizes[:-1], sizes[1:])]


def example_args():
    rs = np.random.RandomState(15)
    return init(rs, [2, 4, 3]), init(rs, [3, 4, 1]), np.random.RandomState(1)


CASE = dict(f=generator_loss, args=example_args, wrt=0)
