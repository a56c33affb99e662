"""GP negative log marginal likelihood with a GPy-style jitchol: try np.linalg.cholesky, on
LinAlgError retry with growing jitter in a while loop (try/except/finally, warnings.warn),
shape asserts and a progress print."""
import warnings

import numpy as np


def jitchol(A, maxtries=5):
    A = np.ascontiguousarray(A)
    try:
        return np.linalg.cholesky(A)
    except np.linalg.LinAlgError:
        diagA = np.diag(A)
        if np.any(diagA <= 0.0):
            raise np.linalg.LinAlgError("not pd: non-positive diagonal elements")  # noqa: B904
        jitter = diagA.mean() * 1e-4
        num_tries = 1
        while num_tries <= maxtries and np.isfinite(jitter):
            try:
                L = np.linalg.cholesky(A + np.eye(A.shape[0]) * jitter)
                warnings.warn("Added jitter of {:.10e}".format(jitter), RuntimeWarning)  # noqa: B028,UP032
                return L
            except np.linalg.LinAlgError:
                jitter *= 10
            finally:
                num_tries += 1
        raise np.linalg.LinAlgError("not positive definite, even with jitter.")  # noqa: B904


def nll(log_ell, log_sf, X, y):
    assert X.ndim == 2 and y.shape == (X.shape[0],), "bad shapes"
    ell, sf2 = np.exp(log_ell), np.exp(2 * log_sf)
    sq = np.sum((X[:, None, :] - X[None, :, :]) ** 2, axis=-1)
    K = sf2 * np.exp(-0.5 * sq / ell ** 2)
    L = jitchol(K)
    alpha = np.linalg.solve(L.T, np.linalg.solve(L, y))
    n = len(y)
    print("nll: ell=%.3f sf2=%.3f" % (ell, sf2))  # noqa: UP031
    return 0.5 * y @ alpha + np.sum(np.log(np.diag(L))) + 0.5 * n * np.log(2 * np.pi)


def example_args():
    rs = np.random.RandomState(5)
    X = rs.randn(6, 2)
    X[4] = X[1]                      # repeated measurements: K is singular without jitter
    X[5] = X[1]
    y = np.sin(X[:, 0]) + 0.05 * rs.randn(6)
    y[4] = y[5] = y[1]
    return np.log(1.2), np.log(0.9), X, y


CASE = dict(f=nll, args=example_args, wrt=(0, 1))
