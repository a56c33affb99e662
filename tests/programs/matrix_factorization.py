"""Collaborative filtering: a loop over (user, item, rating) triples, err = r - U[i] @ V[j]."""
import numpy as np


def mf_loss(U, V, ratings, lam=0.05):
    total = 0.0
    for i, j, r in ratings:
        err = r - U[i] @ V[j]
        total += err ** 2
    total += lam * (np.sum(U ** 2) + np.sum(V ** 2))
    return total / len(ratings)


def example_args():
    rs = np.random.RandomState(40)
    ratings = [(0, 0, 5.0), (0, 2, 3.0), (1, 1, 4.0), (2, 0, 1.0), (2, 3, 2.0), (3, 2, 5.0)]
    return 0.5 * rs.randn(4, 2), 0.5 * rs.randn(4, 2), ratings


CASE = dict(f=mf_loss, args=example_args, wrt=(0, 1))
