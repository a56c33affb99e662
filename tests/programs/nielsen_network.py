"""Nielsen's network.py: a Network class with sizes, zip(self.biases, self.weights), sigmoid."""
import numpy as np


def sigmoid(z):
    """The sigmoid function."""
    return 1.0 / (1.0 + np.exp(-z))


class Network(object):  # noqa: UP004

    def __init__(self, sizes, biases, weights):
        """``sizes`` holds the number of neurons in each layer, input layer first."""
        self.num_layers = len(sizes)
        self.sizes = sizes
        self.biases = biases
        self.weights = weights

    def feedforward(self, a):
        """Return the output of the network if ``a`` is input."""
        for b, w in zip(self.biases, self.weights):
            a = sigmoid(np.dot(w, a) + b)
        return a

    def cost(self, training_data):
        """Quadratic cost summed over (x, y) pairs, as in chapter 1."""
        total = 0.0
        for x, y in training_data:
            total += 0.5 * np.linalg.norm(self.feedforward(x) - y) ** 2
        return total / len(training_data)


def quadratic_cost(weights, biases, sizes, training_data):
    net = Network(sizes, biases, weights)
    return net.cost(training_data)


def example_args():
    rs = np.random.RandomState(101)
    sizes = [4, 5, 3]
    biases = [rs.randn(y, 1) for y in sizes[1:]]
    weights = [rs.randn(y, x) for x, y in zip(sizes[:-1], sizes[1:])]
    training_data = []
    for i in range(5):
        x = rs.randn(4, 1)
        y = np.zeros((3, 1))
        y[i % 3] = 1.0
        training_data.append((x, y))
    return weights, biases, sizes, training_data


CASE = dict(f=quadratic_cost, args=example_args, wrt=(0, 1))
