"""Mean-variance portfolio objective: softmax weights, np.cov of returns, a risk-aversion float."""
import numpy as np


def portfolio_objective(logits, returns, risk_aversion=3.0):
    w = np.exp(logits) / np.sum(np.exp(logits))
    mu = returns.mean(axis=0)
    cov = np.cov(returns, rowvar=False)
    expected = w @ mu
    variance = w @ cov @ w
    return -(expected - 0.5 * risk_aversion * variance)


def example_args():
    rs = np.random.RandomState(45)
    return np.zeros(4), 0.01 + 0.05 * rs.randn(20, 4)


CASE = dict(f=portfolio_objective, args=example_args, wrt=0)
