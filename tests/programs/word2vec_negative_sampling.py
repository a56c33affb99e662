"""Skip-gram with negative sampling: embedding rows W[idx], sampled negatives from a RandomState."""
import numpy as np


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def sgns_loss(W_in, W_out, pairs, rs, k=2):
    vocab = W_out.shape[0]
    loss = 0.0
    for center, context in pairs:
        v = W_in[center]
        u_pos = W_out[context]
        negatives = rs.randint(0, vocab, size=k)
        u_neg = W_out[negatives]
        loss -= np.log(sigmoid(u_pos @ v))
        loss -= np.sum(np.log(sigmoid(-u_neg @ v)))
    return loss / len(pairs)


def example_args():
    rs = np.random.RandomState(39)
    pairs = [(0, 1), (1, 2), (2, 3), (3, 0), (4, 2)]
    return 0.5 * rs.randn(5, 3), 0.5 * rs.randn(5, 3), pairs, np.random.RandomState(2)


CASE = dict(f=sgns_loss, args=example_args, wrt=(0, 1))
