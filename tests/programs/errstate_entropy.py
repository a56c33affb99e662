"""Entropy with `with np.errstate(divide='ignore', invalid='ignore')` and np.nan_to_num/where."""
import numpy as np


def entropy_regularised_loss(logits, target_probs, beta=0.1):
    p = np.exp(logits - logits.max())
    p = p / p.sum()
    with np.errstate(divide='ignore', invalid='ignore'):
        kl_terms = np.where(target_probs > 0,
                            target_probs * np.log(target_probs / p), 0.0)
    entropy = -np.sum(p * np.log(p))
    return np.sum(kl_terms) - beta * entropy


def example_args():
    return np.array([0.5, -1.0, 2.0, 0.1]), np.array([0.5, 0.0, 0.3, 0.2])


CASE = dict(f=entropy_regularised_loss, args=example_args, wrt=0)
