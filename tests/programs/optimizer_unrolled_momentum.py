"""Hyper-gradient through an unrolled optimizer: an Optimizer base class with a step() that
updates a params dict in place (self.velocity keyed like params, `for k in params`), a
Momentum subclass calling super().__init__(lr), the validation loss after K steps."""
import numpy as np


class Optimizer:
    def __init__(self, lr):
        self.lr = lr
        self.t = 0

    def step(self, params, grads):
        raise NotImplementedError


class Momentum(Optimizer):
    def __init__(self, lr, beta=0.9):
        super().__init__(lr)
        self.beta = beta
        self.velocity = {}

    def step(self, params, grads):
        self.t += 1
        for k in params:
            if k not in self.velocity:
                self.velocity[k] = np.zeros_like(params[k])
            self.velocity[k] = self.beta * self.velocity[k] + grads[k]
            params[k] = params[k] - self.lr * self.velocity[k]
        return params


def forward(params, X):
    h = np.tanh(X @ params["W1"] + params["b1"])
    return h @ params["w2"], h


def loss_and_grads(params, X, y):
    pred, h = forward(params, X)
    err = pred - y
    n = len(y)
    dpred = 2 * err / n
    dh = np.outer(dpred, params["w2"]) * (1 - h ** 2)
    grads = {"W1": X.T @ dh, "b1": dh.sum(axis=0), "w2": h.T @ dpred}
    return np.mean(err ** 2), grads


def validation_after_training(log_lr, init_params, X, y, X_val, y_val, num_steps=5):
    params = dict(init_params)
    opt = Momentum(lr=np.exp(log_lr), beta=0.8)
    for i in range(num_steps):  # noqa: B007
        train_loss, grads = loss_and_grads(params, X, y)
        params = opt.step(params, grads)
    pred, _ = forward(params, X_val)
    return np.mean((pred - y_val) ** 2)


def example_args():
    rs = np.random.RandomState(14)
    init_params = {"W1": rs.randn(3, 4) * 0.5, "b1": np.zeros(4), "w2": rs.randn(4) * 0.5}
    X, X_val = rs.randn(10, 3), rs.randn(6, 3)
    y, y_val = np.sin(X[:, 0]), np.sin(X_val[:, 0])
    return np.log(0.1), init_params, X, y, X_val, y_val


CASE = dict(f=validation_after_training, args=example_args, wrt=(0, 1))
