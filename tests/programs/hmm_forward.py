"""HMM forward algorithm in log space, a list of alphas and scipy.special.logsumexp."""
import numpy as np
from scipy.special import logsumexp


def log_normalize(x, axis=-1):
    return x - logsumexp(x, axis=axis, keepdims=True)


def hmm_log_likelihood(params, obs):
    log_pi = log_normalize(params['pi_logits'])
    log_A = log_normalize(params['A_logits'], axis=1)
    log_B = log_normalize(params['B_logits'], axis=1)

    alphas = []
    alpha = log_pi + log_B[:, obs[0]]
    alphas.append(alpha)
    for t in range(1, len(obs)):
        alpha = logsumexp(alpha[:, None] + log_A, axis=0) + log_B[:, obs[t]]
        alphas.append(alpha)
    return -logsumexp(alphas[-1])


def example_args():
    rs = np.random.RandomState(7)
    params = {'pi_logits': rs.randn(3), 'A_logits': rs.randn(3, 3), 'B_logits': rs.randn(3, 4)}
    obs = [0, 1, 3, 2, 2, 1, 0, 3]
    return params, obs


CASE = dict(f=hmm_log_likelihood, args=example_args, wrt=0)
