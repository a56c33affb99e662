"""A variational autoencoder's ELBO taking a np.random.RandomState for the reparameterisation."""
import numpy as np


def relu(x):
    return np.maximum(0.0, x)


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def encode(params, x):
    h = relu(x @ params['enc_W1'] + params['enc_b1'])
    mu = h @ params['enc_Wmu'] + params['enc_bmu']
    log_sigma = h @ params['enc_Wsig'] + params['enc_bsig']
    return mu, log_sigma


def decode(params, z):
    h = np.tanh(z @ params['dec_W1'] + params['dec_b1'])
    return sigmoid(h @ params['dec_W2'] + params['dec_b2'])


def sample_latents(rs, mu, log_sigma):
    eps = rs.randn(*mu.shape)
    return mu + np.exp(log_sigma) * eps


def bernoulli_log_density(targets, probs):
    return np.sum(targets * np.log(probs + 1e-7) + (1 - targets) * np.log(1 - probs + 1e-7),
                  axis=-1)


def elbo_loss(params, x, rs):
    mu, log_sigma = encode(params, x)
    z = sample_latents(rs, mu, log_sigma)
    probs = decode(params, z)
    log_lik = bernoulli_log_density(x, probs)
    kl = 0.5 * np.sum(np.exp(2 * log_sigma) + mu ** 2 - 1 - 2 * log_sigma, axis=-1)
    return -np.mean(log_lik - kl)


def init_params(rs, D=6, H=5, Z=2):
    return {
        'enc_W1': 0.3 * rs.randn(D, H), 'enc_b1': np.zeros(H),
        'enc_Wmu': 0.3 * rs.randn(H, Z), 'enc_bmu': np.zeros(Z),
        'enc_Wsig': 0.3 * rs.randn(H, Z), 'enc_bsig': np.zeros(Z),
        'dec_W1': 0.3 * rs.randn(Z, H), 'dec_b1': np.zeros(H),
        'dec_W2': 0.3 * rs.randn(H, D), 'dec_b2': np.zeros(D),
    }


def example_args():
    rs = np.random.RandomState(4)
    params = init_params(rs)
    x = (rs.rand(4, 6) > 0.5).astype(float)
    return params, x, np.random.RandomState(0)


CASE = dict(f=elbo_loss, args=example_args, wrt=0)
