"""Defensive code: raise ValueError on bad shapes, assert on finiteness, isinstance checks."""
import numpy as np


def softmax_cross_entropy(logits, labels):
    if logits.ndim != 2:
        raise ValueError(f"expected 2-D logits, got shape {logits.shape}")
    if len(labels) != logits.shape[0]:
        raise ValueError("labels and logits disagree on the batch size")
    assert np.all(np.isfinite(logits)), "non-finite logits"
    z = logits - logits.max(axis=1, keepdims=True)
    log_probs = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    return -log_probs[np.arange(len(labels)), labels].mean()


def loss(W, X, labels, temperature=1.0):
    if not isinstance(temperature, float) or temperature <= 0:
        raise ValueError("temperature must be a positive float")
    return softmax_cross_entropy(X @ W / temperature, labels)


def example_args():
    rs = np.random.RandomState(28)
    return rs.randn(3, 4), rs.randn(6, 3), np.array([0, 1, 2, 3, 0, 1])


CASE = dict(f=loss, args=example_args, wrt=0)
