"""autograd's rnn.py style: a WeightsParser class indexing one flat weight vector by name,
string_to_one_hot, build_toy_dataset-like text, a hidden state rolled over a (T, N, D) array."""
import numpy as np


class WeightsParser(object):  # noqa: UP004
    """A helper class to index into a parameter vector."""
    def __init__(self):
        self.idxs_and_shapes = {}
        self.num_weights = 0

    def add_shape(self, name, shape):
        start = self.num_weights
        self.num_weights += np.prod(shape)
        self.idxs_and_shapes[name] = (slice(start, self.num_weights), shape)

    def get(self, vect, name):
        idxs, shape = self.idxs_and_shapes[name]
        return np.reshape(vect[idxs], shape)


def sigmoid(x):
    return 0.5 * (np.tanh(x) + 1.0)


def logsumexp(X, axis=1):
    max_X = np.max(X)
    return max_X + np.log(np.sum(np.exp(X - max_X), axis=axis, keepdims=True))


def string_to_one_hot(string, maxchar):
    """Converts an ASCII string to a one-of-k encoding."""
    ascii = np.array([ord(c) for c in string]).T
    return np.array(ascii[:, None] == np.arange(maxchar)[None, :], dtype=int)


def build_toy_dataset(lines, maxlen=8, maxchar=32):
    seqs = np.zeros((maxlen, len(lines), maxchar))
    for ix, line in enumerate(lines):
        padded = (line + " " * maxlen)[:maxlen]
        seqs[:, ix, :] = string_to_one_hot(padded.lower(), 128)[:, 96:96 + maxchar]
    return seqs


def build_rnn(input_size, state_size, output_size):
    parser = WeightsParser()
    parser.add_shape("init hiddens", (1, state_size))
    parser.add_shape("change", (input_size + state_size + 1, state_size))
    parser.add_shape("predict", (state_size + 1, output_size))

    def update(input, hiddens, change_weights):
        cat_state = np.hstack((input, hiddens, np.ones((input.shape[0], 1))))
        return np.tanh(np.dot(cat_state, change_weights))

    def hiddens_to_output_probs(predict_weights, hiddens):
        output = np.dot(np.hstack((hiddens, np.ones((hiddens.shape[0], 1)))), predict_weights)
        return output - logsumexp(output)

    def outputs(weights, inputs):
        """Goes from right to left, updating the state."""
        num_sequences = inputs.shape[1]
        hiddens = np.repeat(parser.get(weights, "init hiddens"), num_sequences, axis=0)
        change_weights = parser.get(weights, "change")
        predict_weights = parser.get(weights, "predict")
        output = [hiddens_to_output_probs(predict_weights, hiddens)]
        for input in inputs:
            hiddens = update(input, hiddens, change_weights)
            output.append(hiddens_to_output_probs(predict_weights, hiddens))
        return output

    def log_likelihood(weights, inputs, targets):
        logprobs = outputs(weights, inputs)
        loglik = 0.0
        num_time_steps, num_examples, _ = inputs.shape
        for t in range(num_time_steps):
            loglik += np.sum(logprobs[t] * targets[t])
        return loglik / (num_time_steps * num_examples)

    return outputs, log_likelihood, parser.num_weights


def training_loss(weights, train_inputs):
    _, log_likelihood, _ = build_rnn(input_size=32, state_size=6, output_size=32)
    return -log_likelihood(weights, train_inputs, train_inputs)


def example_args():
    rs = np.random.RandomState(0)
    _, _, num_weights = build_rnn(input_size=32, state_size=6, output_size=32)
    weights = rs.randn(num_weights) * 0.1
    inputs = build_toy_dataset(["hello world", "the quick fox"], maxlen=6)
    return weights, inputs


CASE = dict(f=training_loss, args=example_args, wrt=0)
