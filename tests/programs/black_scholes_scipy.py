"""Black-Scholes implied-volatility fit with scipy.stats.norm.cdf on arrays of strikes and
maturities, vectorised, with a vega-weighted squared error."""
import numpy as np
from scipy.stats import norm


def bs_call(S, K, T, r, sigma):
    d1 = (np.log(S / K) + (r + 0.5 * sigma ** 2) * T) / (sigma * np.sqrt(T))
    d2 = d1 - sigma * np.sqrt(T)
    return S * norm.cdf(d1) - K * np.exp(-r * T) * norm.cdf(d2)


def bs_vega(S, K, T, r, sigma):
    d1 = (np.log(S / K) + (r + 0.5 * sigma ** 2) * T) / (sigma * np.sqrt(T))
    return S * norm.pdf(d1) * np.sqrt(T)


def smile_loss(params, S, K, T, r, market):
    a, b, c = params
    m = np.log(K / S)
    sigma = a + b * m + c * m ** 2
    model = bs_call(S, K, T, r, sigma)
    w = 1.0 / (bs_vega(S, K, T, r, sigma) + 1e-3)
    return np.sum(w * (model - market) ** 2)


def example_args():
    S = 100.0
    K = np.array([80.0, 90.0, 100.0, 110.0, 120.0, 95.0, 105.0])
    T = np.array([0.25, 0.25, 0.5, 0.5, 1.0, 1.0, 0.75])
    market = np.array([21.0, 12.1, 6.3, 2.6, 5.9, 13.2, 8.0])
    return np.array([0.22, -0.1, 0.3]), S, K, T, 0.01, market


CASE = dict(f=smile_loss, args=example_args, wrt=0)
