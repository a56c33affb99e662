"""A training loss that logs: print with f-strings, logging.info("loss %s", v), a verbose flag."""
import logging

import numpy as np

logger = logging.getLogger(__name__)


def loss(w, X, y, verbose=True):
    pred = X @ w
    mse = np.mean((pred - y) ** 2)
    reg = 0.01 * np.sum(w ** 2)
    total = mse + reg
    if verbose:
        print(f"mse={mse:.4f} reg={reg:.4f} |w|={np.linalg.norm(w):.3f}")
        logging.info("loss %s", total)
        logger.debug("weights: %s", w)
    return total


def example_args():
    rs = np.random.RandomState(29)
    return rs.randn(4), rs.randn(9, 4), rs.randn(9)


CASE = dict(f=loss, args=example_args, wrt=0)
