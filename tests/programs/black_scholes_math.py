"""Black-Scholes calibration on Python floats with math.log, math.erf, math.exp."""
import math

import numpy as np


def norm_cdf(x):
    return 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))


def call_price(S, K, T, r, sigma):
    d1 = (math.log(S / K) + (r + 0.5 * sigma ** 2) * T) / (sigma * math.sqrt(T))
    d2 = d1 - sigma * math.sqrt(T)
    return S * norm_cdf(d1) - K * math.exp(-r * T) * norm_cdf(d2)


def calibration_loss(sigma, S, strikes, T, r, market_prices):
    err = 0.0
    for K, p in zip(strikes, market_prices):
        err += (call_price(S, K, T, r, sigma) - p) ** 2
    return err


def example_args():
    return 0.25, 100.0, [90.0, 100.0, 110.0], 0.5, 0.01, np.array([12.5, 6.0, 2.4])


CASE = dict(f=calibration_loss, args=example_args, wrt=0)
