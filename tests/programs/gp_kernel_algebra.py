"""GP kernels as objects with operator overloading: a Kernel base class whose __add__/__mul__
build Sum/Product kernels, subclasses calling super().__init__(), __call__(X, Y=None), a
cho_solve-free Cholesky marginal likelihood over `ConstantKernel * RBF + WhiteKernel`."""
import numpy as np


class Kernel:
    def __init__(self):
        self.name = type(self).__name__

    def __add__(self, other):
        return Sum(self, other)

    def __mul__(self, other):
        return Product(self, other)

    def diag(self, X):
        return np.diag(self(X))


class RBF(Kernel):
    def __init__(self, log_length_scale):
        super().__init__()
        self.log_length_scale = log_length_scale

    def __call__(self, X, Y=None):
        if Y is None:
            Y = X
        ell = np.exp(self.log_length_scale)
        d2 = np.sum((X[:, None, :] - Y[None, :, :]) ** 2, axis=-1)
        return np.exp(-0.5 * d2 / ell ** 2)


class ConstantKernel(Kernel):
    def __init__(self, log_constant):
        super().__init__()
        self.log_constant = log_constant

    def __call__(self, X, Y=None):
        if Y is None:
            Y = X
        return np.exp(self.log_constant) * np.ones((X.shape[0], Y.shape[0]))


class WhiteKernel(Kernel):
    def __init__(self, log_noise):
        super().__init__()
        self.log_noise = log_noise

    def __call__(self, X, Y=None):
        if Y is None:
            return np.exp(self.log_noise) * np.eye(X.shape[0])
        return np.zeros((X.shape[0], Y.shape[0]))


class Sum(Kernel):
    def __init__(self, k1, k2):
        super().__init__()
        self.k1, self.k2 = k1, k2

    def __call__(self, X, Y=None):
        return self.k1(X, Y) + self.k2(X, Y)


class Product(Kernel):
    def __init__(self, k1, k2):
        super().__init__()
        self.k1, self.k2 = k1, k2

    def __call__(self, X, Y=None):
        return self.k1(X, Y) * self.k2(X, Y)


def neg_log_marginal_likelihood(theta, X, y):
    kernel = ConstantKernel(theta[0]) * RBF(theta[1]) + WhiteKernel(theta[2])
    K = kernel(X)
    L = np.linalg.cholesky(K)
    alpha = np.linalg.solve(L.T, np.linalg.solve(L, y))
    return (0.5 * y @ alpha + np.log(np.diag(L)).sum()
            + 0.5 * len(y) * np.log(2 * np.pi))


def example_args():
    rs = np.random.RandomState(73)
    X = rs.uniform(-2, 2, size=(9, 1))
    y = np.sin(2 * X[:, 0]) + 0.1 * rs.randn(9)
    return np.array([0.0, -0.5, -2.0]), X, y


CASE = dict(f=neg_log_marginal_likelihood, args=example_args, wrt=0)
