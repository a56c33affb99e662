"""min-char-rnn: one-hot characters, xs/hs/ps dicts keyed by time, hs[-1] = np.copy(hprev)."""
import numpy as np

data = "hello world"
chars = sorted(set(data))
vocab_size = len(chars)
char_to_ix = {ch: i for i, ch in enumerate(chars)}
hidden_size = 5


def lossFun(params, inputs, targets, hprev):
    Wxh, Whh, Why, bh, by = params
    xs, hs, ys, ps = {}, {}, {}, {}
    hs[-1] = np.copy(hprev)
    loss = 0
    for t in range(len(inputs)):
        xs[t] = np.zeros((vocab_size, 1))
        xs[t][inputs[t]] = 1
        hs[t] = np.tanh(np.dot(Wxh, xs[t]) + np.dot(Whh, hs[t - 1]) + bh)
        ys[t] = np.dot(Why, hs[t]) + by
        ps[t] = np.exp(ys[t]) / np.sum(np.exp(ys[t]))
        loss += -np.log(ps[t][targets[t], 0])
    return loss


def example_args():
    rs = np.random.RandomState(8)
    Wxh = rs.randn(hidden_size, vocab_size) * 0.1
    Whh = rs.randn(hidden_size, hidden_size) * 0.1
    Why = rs.randn(vocab_size, hidden_size) * 0.1
    bh = np.zeros((hidden_size, 1))
    by = np.zeros((vocab_size, 1))
    seq = data[:7]
    inputs = [char_to_ix[ch] for ch in seq[:-1]]
    targets = [char_to_ix[ch] for ch in seq[1:]]
    return [Wxh, Whh, Why, bh, by], inputs, targets, np.zeros((hidden_size, 1))


CASE = dict(f=lossFun, args=example_args, wrt=0)
