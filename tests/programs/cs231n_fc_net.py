"""CS231n FullyConnectedNet: layer_utils helpers returning (out, cache), self.params['W%d' % i],
a dropout_param dict and layernorm, loss() computing the softmax data loss plus L2."""
import numpy as np

# ruff: noqa: UP004, UP031


def affine_forward(x, w, b):
    out = x.reshape(x.shape[0], -1).dot(w) + b
    cache = (x, w, b)
    return out, cache


def relu_forward(x):
    out = np.maximum(0, x)
    cache = x
    return out, cache


def layernorm_forward(x, gamma, beta, ln_param):
    eps = ln_param.get("eps", 1e-5)
    mu = x.mean(axis=1, keepdims=True)
    var = x.var(axis=1, keepdims=True)
    xhat = (x - mu) / np.sqrt(var + eps)
    out = gamma * xhat + beta
    cache = (xhat, gamma, var, eps)
    return out, cache


def dropout_forward(x, dropout_param):
    p, mode = dropout_param["p"], dropout_param["mode"]
    if "seed" in dropout_param:
        np.random.seed(dropout_param["seed"])
    mask = None
    if mode == "train":
        mask = (np.random.rand(*x.shape) < p) / p
        out = x * mask
    elif mode == "test":
        out = x
    cache = (dropout_param, mask)
    out = out.astype(x.dtype, copy=False)
    return out, cache


def affine_ln_relu_forward(x, w, b, gamma, beta, ln_param):
    a, fc_cache = affine_forward(x, w, b)
    an, ln_cache = layernorm_forward(a, gamma, beta, ln_param)
    out, relu_cache = relu_forward(an)
    cache = (fc_cache, ln_cache, relu_cache)
    return out, cache


def softmax_loss(x, y):
    shifted_logits = x - np.max(x, axis=1, keepdims=True)
    Z = np.sum(np.exp(shifted_logits), axis=1, keepdims=True)
    log_probs = shifted_logits - np.log(Z)
    N = x.shape[0]
    loss = -np.sum(log_probs[np.arange(N), y]) / N
    return loss


class FullyConnectedNet(object):
    def __init__(self, hidden_dims, input_dim, num_classes, dropout=1, normalization=None,
                 reg=0.0, weights=None, seed=None):
        self.normalization = normalization
        self.use_dropout = dropout != 1
        self.reg = reg
        self.num_layers = 1 + len(hidden_dims)
        self.params = {}
        for i in range(self.num_layers):
            self.params["W%d" % (i + 1)] = weights["W%d" % (i + 1)]
            self.params["b%d" % (i + 1)] = weights["b%d" % (i + 1)]
            if normalization == "layernorm" and i < self.num_layers - 1:
                self.params["gamma%d" % (i + 1)] = weights["gamma%d" % (i + 1)]
                self.params["beta%d" % (i + 1)] = weights["beta%d" % (i + 1)]
        self.dropout_param = {}
        if self.use_dropout:
            self.dropout_param = {"mode": "train", "p": dropout}
            if seed is not None:
                self.dropout_param["seed"] = seed
        self.ln_params = []
        if self.normalization == "layernorm":
            self.ln_params = [{} for i in range(self.num_layers - 1)]

    def loss(self, X, y=None):
        mode = "test" if y is None else "train"
        if self.use_dropout:
            self.dropout_param["mode"] = mode
        caches = []
        out = X
        for i in range(self.num_layers - 1):
            W, b = self.params["W%d" % (i + 1)], self.params["b%d" % (i + 1)]
            if self.normalization == "layernorm":
                gamma = self.params["gamma%d" % (i + 1)]
                beta = self.params["beta%d" % (i + 1)]
                out, cache = affine_ln_relu_forward(out, W, b, gamma, beta, self.ln_params[i])
            else:
                out, cache = affine_forward(out, W, b)
                out, _ = relu_forward(out)
            caches.append(cache)
            if self.use_dropout:
                out, do_cache = dropout_forward(out, self.dropout_param)
        W, b = self.params["W%d" % self.num_layers], self.params["b%d" % self.num_layers]
        scores, cache = affine_forward(out, W, b)
        if mode == "test":
            return scores
        loss = softmax_loss(scores, y)
        for i in range(self.num_layers):
            W = self.params["W%d" % (i + 1)]
            loss += 0.5 * self.reg * np.sum(W * W)
        return loss


def training_loss(weights, X, y):
    model = FullyConnectedNet([6, 5], input_dim=4, num_classes=3, dropout=0.8,
                              normalization="layernorm", reg=0.1, weights=weights, seed=231)
    return model.loss(X, y)


def example_args():
    rs = np.random.RandomState(231)
    dims = [4, 6, 5, 3]
    weights = {}
    for i in range(3):
        weights["W%d" % (i + 1)] = rs.randn(dims[i], dims[i + 1]) * 0.5
        weights["b%d" % (i + 1)] = np.zeros(dims[i + 1])
        if i < 2:
            weights["gamma%d" % (i + 1)] = np.ones(dims[i + 1])
            weights["beta%d" % (i + 1)] = np.zeros(dims[i + 1])
    X = rs.randn(7, 2, 2)
    y = rs.randint(3, size=7)
    return weights, X, y


CASE = dict(f=training_loss, args=example_args, wrt=0)
