"""CS231n batchnorm_forward with a bn_param dict, .get('eps', 1e-5) and running averages."""
import numpy as np


def batchnorm_forward(x, gamma, beta, bn_param):
    mode = bn_param['mode']
    eps = bn_param.get('eps', 1e-5)
    momentum = bn_param.get('momentum', 0.9)

    N, D = x.shape
    running_mean = bn_param.get('running_mean', np.zeros(D, dtype=x.dtype))
    running_var = bn_param.get('running_var', np.zeros(D, dtype=x.dtype))

    out, cache = None, None
    if mode == 'train':
        sample_mean = x.mean(axis=0)
        sample_var = x.var(axis=0)
        x_hat = (x - sample_mean) / np.sqrt(sample_var + eps)
        out = gamma * x_hat + beta
        cache = (x, x_hat, sample_mean, sample_var, gamma, eps)
        running_mean = momentum * running_mean + (1 - momentum) * sample_mean
        running_var = momentum * running_var + (1 - momentum) * sample_var
    elif mode == 'test':
        x_hat = (x - running_mean) / np.sqrt(running_var + eps)
        out = gamma * x_hat + beta
    else:
        raise ValueError('Invalid forward batchnorm mode "%s"' % mode)  # noqa: UP031

    bn_param['running_mean'] = running_mean
    bn_param['running_var'] = running_var
    return out, cache


def loss(x, gamma, beta, bn_param, target):
    out, _ = batchnorm_forward(x, gamma, beta, bn_param)
    return np.sum((out - target) ** 2)


def example_args():
    rs = np.random.RandomState(2)
    x = 3 * rs.randn(6, 4) + 1
    gamma = rs.rand(4) + 0.5
    beta = rs.randn(4)
    bn_param = {'mode': 'train'}
    target = rs.randn(6, 4)
    return x, gamma, beta, bn_param, target


CASE = dict(f=loss, args=example_args, wrt=(0, 1, 2))
