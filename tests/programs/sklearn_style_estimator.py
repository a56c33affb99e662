"""An sklearn-style estimator: BaseEstimator-like get_params/set_params over __init__'s
signature via inspect, check_X_y validation with np.asarray, a _loss_grad-free `_loss` method,
alpha/l1_ratio elastic-net penalty and fit_intercept handled by centering."""
import inspect

import numpy as np


class BaseEstimator:
    @classmethod
    def _get_param_names(cls):
        init_signature = inspect.signature(cls.__init__)
        return sorted(p.name for p in init_signature.parameters.values()
                      if p.name != "self" and p.kind != p.VAR_KEYWORD)

    def get_params(self, deep=True):
        return {key: getattr(self, key) for key in self._get_param_names()}

    def set_params(self, **params):
        valid_params = self.get_params(deep=True)
        for key, value in params.items():
            if key not in valid_params:
                raise ValueError("Invalid parameter %s for estimator %s." % (key, self))  # noqa: UP031
            setattr(self, key, value)
        return self


def check_X_y(X, y):
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError("Expected 2D array, got %dD array instead" % X.ndim)  # noqa: UP031
    if X.shape[0] != y.shape[0]:
        raise ValueError("Found input variables with inconsistent numbers of samples")
    return X, y


class ElasticNetRegressor(BaseEstimator):
    def __init__(self, alpha=1.0, l1_ratio=0.5, fit_intercept=True):
        self.alpha = alpha
        self.l1_ratio = l1_ratio
        self.fit_intercept = fit_intercept

    def _loss(self, coef, X, y):
        X, y = check_X_y(X, y)
        if self.fit_intercept:
            X = X - X.mean(axis=0)
            y = y - y.mean()
        n_samples = X.shape[0]
        resid = y - X @ coef
        l1 = self.alpha * self.l1_ratio * np.sum(np.sqrt(coef ** 2 + 1e-8))
        l2 = 0.5 * self.alpha * (1 - self.l1_ratio) * np.dot(coef, coef)
        return 0.5 / n_samples * np.dot(resid, resid) + l1 + l2


def objective(coef, X, y):
    est = ElasticNetRegressor().set_params(alpha=0.1, l1_ratio=0.7)
    return est._loss(coef, X, y)


def example_args():
    rs = np.random.RandomState(42)
    X = rs.randn(12, 4).tolist()
    y = list(rs.randn(12))
    return rs.randn(4), X, y


CASE = dict(f=objective, args=example_args, wrt=0)
