"""An LSTM over one-hot character inputs, gates sliced from one matmul, states kept in lists."""
import numpy as np

VOCAB = 4
HIDDEN = 3


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def one_hot(idx, n):
    v = np.zeros(n)
    v[idx] = 1.0
    return v


def lstm_forward(params, inputs):
    H = HIDDEN
    h = np.zeros(H)
    c = np.zeros(H)
    hs, cs = [h], [c]
    for ch in inputs:
        x = one_hot(ch, VOCAB)
        z = params['W'] @ np.concatenate([x, h]) + params['b']
        i = sigmoid(z[:H])
        f = sigmoid(z[H:2 * H])
        o = sigmoid(z[2 * H:3 * H])
        g = np.tanh(z[3 * H:])
        c = f * c + i * g
        h = o * np.tanh(c)
        hs.append(h)
        cs.append(c)
    return hs, cs


def loss(params, inputs, targets):
    hs, _ = lstm_forward(params, inputs)
    total = 0.0
    for t, target in enumerate(targets):
        logits = params['Wy'] @ hs[t + 1] + params['by']
        logits = logits - logits.max()
        total -= logits[target] - np.log(np.sum(np.exp(logits)))
    return total / len(targets)


def example_args():
    rs = np.random.RandomState(19)
    params = {'W': 0.3 * rs.randn(4 * HIDDEN, VOCAB + HIDDEN), 'b': np.zeros(4 * HIDDEN),
              'Wy': 0.3 * rs.randn(VOCAB, HIDDEN), 'by': np.zeros(VOCAB)}
    return params, [0, 1, 2, 3, 1], [1, 2, 3, 1, 0]


CASE = dict(f=loss, args=example_args, wrt=0)
