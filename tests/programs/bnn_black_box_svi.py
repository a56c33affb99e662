"""autograd's bayesian_neural_net.py: black-box SVI with a mean-field Gaussian over a flat
weight vector, unpack_layers with reshape, a reparameterised Monte Carlo ELBO with an rs."""
import numpy as np


def make_nn_funs(layer_sizes, L2_reg, noise_variance, nonlinearity=np.tanh):
    """These functions implement a standard multi-layer perceptron, vectorized over weights."""
    shapes = list(zip(layer_sizes[:-1], layer_sizes[1:]))
    num_weights = sum((m + 1) * n for m, n in shapes)

    def unpack_layers(weights):
        num_weight_sets = len(weights)
        for m, n in shapes:
            yield weights[:, :m * n].reshape((num_weight_sets, m, n)), \
                weights[:, m * n:m * n + n].reshape((num_weight_sets, 1, n))
            weights = weights[:, (m + 1) * n:]

    def predictions(weights, inputs):
        """weights is shape (num_weight_samples x num_weights)
           inputs  is shape (num_datapoints x D)"""
        inputs = np.expand_dims(inputs, 0)
        for W, b in unpack_layers(weights):
            outputs = np.einsum("mnd,mdo->mno", inputs, W) + b
            inputs = nonlinearity(outputs)
        return outputs

    def logprob(weights, inputs, targets):
        log_prior = -L2_reg * np.sum(weights ** 2, axis=1)
        preds = predictions(weights, inputs)
        log_lik = -np.sum((preds - targets) ** 2, axis=1)[:, 0] / noise_variance
        return log_prior + log_lik

    return num_weights, predictions, logprob


def black_box_variational_inference(logprob, D, num_samples):
    """Implements http://arxiv.org/abs/1401.0118, and uses the
    local reparameterization trick from http://arxiv.org/abs/1506.02557"""

    def unpack_params(params):
        # Variational dist is a diagonal Gaussian.
        mean, log_std = params[:D], params[D:]
        return mean, log_std

    def gaussian_entropy(log_std):
        return 0.5 * D * (1.0 + np.log(2 * np.pi)) + np.sum(log_std)

    def variational_objective(params, t, rs):
        """Provides a stochastic estimate of the variational lower bound."""
        mean, log_std = unpack_params(params)
        samples = rs.randn(num_samples, D) * np.exp(log_std) + mean
        lower_bound = gaussian_entropy(log_std) + np.mean(logprob(samples, t))
        return -lower_bound

    return variational_objective, unpack_params


def build_toy_dataset(n_data=20, noise_std=0.1):
    D = 1
    rs = np.random.RandomState(0)
    inputs = np.concatenate([np.linspace(0, 2, num=n_data // 2),
                             np.linspace(6, 8, num=n_data // 2)])
    targets = np.cos(inputs) + rs.randn(n_data) * noise_std
    inputs = (inputs - 4.0) / 4.0
    inputs = inputs.reshape((len(inputs), D))
    targets = targets.reshape((len(targets), D))
    return inputs, targets


def elbo_loss(init_var_params, rs):
    inputs, targets = build_toy_dataset(n_data=10)
    num_weights, predictions, logprob = make_nn_funs(
        layer_sizes=[1, 5, 1], L2_reg=0.1, noise_variance=0.01, nonlinearity=np.tanh)

    def log_posterior(weights, t):
        return logprob(weights, inputs, targets)

    objective, unpack_params = black_box_variational_inference(
        log_posterior, num_weights, num_samples=4)
    return objective(init_var_params, 0, rs)


def example_args():
    num_weights = (1 + 1) * 5 + (5 + 1) * 1
    rs = np.random.RandomState(1)
    init_mean = rs.randn(num_weights)
    init_log_std = -5 * np.ones(num_weights)
    return np.concatenate([init_mean, init_log_std]), np.random.RandomState(0)


CASE = dict(f=elbo_loss, args=example_args, wrt=0)
