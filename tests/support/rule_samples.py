"""One sample call per differentiable primitive of the rule table, and PyTorch's equivalent.

``SAMPLES[name]`` is ``(inputs, params)``: float64 inputs are differentiated, others (masks,
indices) pass through.  Points sit away from kinks and inside each function's domain.
``test_rules.py`` fails for a primitive with rules but no sample, so a new rule is tested the
moment it is added.
"""

from __future__ import annotations

import numpy as np

rng = np.random.default_rng(1234)


def r(*shape, lo=-1.0, hi=1.0):
    return rng.uniform(lo, hi, shape)


def pos(*shape):
    return r(*shape, lo=0.5, hi=2.0)


def away(*shape):
    """Values away from 0 and from integers (for abs, sign, floor and friends)."""
    return rng.choice([-1, 1], shape) * (rng.integers(0, 3, shape) + r(*shape, lo=0.2, hi=0.8))


_perm = np.argsort(r(3, 4), axis=1)[:, :2]

SAMPLES: dict[str, tuple[list, dict]] = {
    # helpers
    "sum_to": ([r(2, 3, 4)], {"shape": (3, 1)}),
    "unreduce": ([r(2, 4)], {"shape": (2, 3, 4), "axis": 1, "keepdims": False}),
    "unindex": ([r(3, 2)], {"index": (np.array([0, 2, 2]), slice(1, 3)), "shape": (4, 3)}),
    "index_put": ([r(4, 3), r(2)], {"index": (slice(1, 3), 0)}),
    "matmul_lhs_grad": ([r(2, 4), r(3, 4)], {"a_shape": (2, 3)}),
    "matmul_rhs_grad": ([r(5, 2, 4), r(5, 2, 3)], {"b_shape": (3, 4)}),
    "cast": ([r(3)], {"dtype": np.float64}),
    "getitem": ([r(4, 3)], {"index": (np.array([1, 1, 3]), slice(None, 2))}),
    "take_along": ([r(3, 4)], {"indices": _perm, "axis": 1, "keepdims": True}),
    "untake_along": ([r(3, 2)], {"indices": _perm, "axis": 1, "shape": (3, 4)}),
    "overwrite": ([r(2, 3), r(3)], {}),
    "to_device": ([r(3)], {"device": "cpu", "source": "cpu"}),
    "item": ([r(1, 1)], {}),
    "match_tangent": ([r(3), np.zeros((2, 3), dtype=np.int64)], {}),   # x: only its form
    # constructors carrying a value (runtime/rules/constructors.py)
    "to_float": ([np.array(0.37)], {}), "cast_to": ([r(3)], {"dtype": np.float64}),
    "to_scalar": ([r(3)], {"dtype": np.float64}),
    "full_of": ([r(3)], {"shape": (2, 3)}),
    "linspace_of": ([r(3), r(2, 1)], {"num": 4, "endpoint": True, "axis": -1}),
    # unary
    "negative": ([r(3, 2)], {}), "positive": ([r(3)], {}), "exp": ([r(3, 2)], {}),
    "exp2": ([r(4)], {}), "expm1": ([r(4)], {}), "log": ([pos(3, 2)], {}), "log2": ([pos(4)], {}),
    "log10": ([pos(4)], {}), "log1p": ([pos(4)], {}), "sqrt": ([pos(3, 2)], {}),
    "cbrt": ([pos(4)], {}), "square": ([r(4)], {}), "reciprocal": ([pos(4)], {}),
    "absolute": ([away(5)], {}), "fabs": ([away(5)], {}), "sin": ([r(3, 2)], {}),
    "cos": ([r(3, 2)], {}), "tan": ([r(4)], {}), "arcsin": ([r(4, lo=-0.8, hi=0.8)], {}),
    "arccos": ([r(4, lo=-0.8, hi=0.8)], {}), "arctan": ([r(4)], {}), "sinh": ([r(4)], {}),
    "cosh": ([r(4)], {}), "tanh": ([r(3, 2)], {}), "arcsinh": ([r(4)], {}),
    "arccosh": ([r(4, lo=1.5, hi=3.0)], {}), "arctanh": ([r(4, lo=-0.8, hi=0.8)], {}),
    "deg2rad": ([r(4)], {}), "rad2deg": ([r(4)], {}), "sigmoid": ([r(3, 2, lo=-4, hi=4)], {}),
    "relu": ([away(6)], {}), "sign": ([away(5)], {}), "floor": ([away(5)], {}),
    "ceil": ([away(5)], {}), "trunc": ([away(5)], {}), "rint": ([away(5)], {}),
    # binary (with broadcasting)
    "add": ([r(2, 3), r(3)], {}), "subtract": ([r(2, 3), r(2, 1)], {}),
    "multiply": ([r(2, 3), r(1, 3)], {}), "divide": ([r(2, 3), pos(3)], {}),
    "power": ([pos(2, 3), r(3)], {}), "pow_scalar": ([pos(2, 3)], {"p": 3}),
    "rsub": ([r(3)], {"other": 2.0}), "maximum": ([away(2, 3), away(3)], {}),
    "minimum": ([away(2, 3), away(3)], {}), "arctan2": ([r(2, 3), pos(3)], {}),
    "hypot": ([r(2, 3), pos(3)], {}), "logaddexp": ([r(2, 3), r(3)], {}),
    "logaddexp2": ([r(2, 3), r(3)], {}), "remainder": ([r(4, lo=0.1, hi=0.9) + 2, pos(4) + 0.3],
                                                       {}),
    "fmod": ([r(4, lo=0.1, hi=0.9) + 2, pos(4) + 0.3], {}),
    "where": ([np.array([[True, False, True]]), r(2, 3), r(3)], {}),
    "clip": ([away(6)], {"a_min": -1.0, "a_max": 1.0}),
    # reductions
    "sum": ([r(2, 3, 4)], {"axis": (0, 2), "keepdims": False}),
    "mean": ([r(2, 3, 4)], {"axis": 1, "keepdims": True}),
    "prod": ([pos(2, 3)], {"axis": 1}), "max": ([r(3, 4)], {"axis": 0}),
    "min": ([r(3, 4)], {"axis": -1, "keepdims": True}), "var": ([r(3, 4)], {"axis": 1, "ddof": 1}),
    "std": ([r(3, 4)], {"ddof": 0}), "cumsum": ([r(3, 4)], {"axis": 1}),
    "logsumexp": ([r(3, 4)], {"axis": 1}), "softmax": ([r(3, 4)], {"axis": 1}),
    "log_softmax": ([r(3, 4)], {"axis": -1}),
    # linear algebra
    "matmul": ([r(2, 3, 4), r(4, 2)], {}), "dot": ([r(3, 4), r(4)], {}),
    "tensordot": ([r(2, 3, 4), r(4, 3, 5)], {"axes": ([1, 2], [1, 0])}),
    "outer": ([r(3), r(2, 2)], {}), "trace": ([r(3, 3)], {}),
    "einsum": ([r(2, 3), r(3, 4), r(4)], {"subscripts": "ij,jk,k->i"}),
    "solve": ([r(3, 3) + 3 * np.eye(3), r(3, 2)], {}), "inv": ([r(3, 3) + 3 * np.eye(3)], {}),
    "det": ([r(2, 3, 3) + 2 * np.eye(3)], {}), "norm": ([r(3, 4)], {"axis": 1}),
    # shape
    "reshape": ([r(2, 6)], {"shape": (3, 4)}), "ravel": ([r(2, 3)], {}),
    "squeeze": ([r(2, 1, 3)], {"axis": 1}), "expand_dims": ([r(2, 3)], {"axis": 0}),
    "transpose": ([r(2, 3, 4)], {"axes": (2, 0, 1)}),
    "swapaxes": ([r(2, 3, 4)], {"axis1": 0, "axis2": 2}),
    "moveaxis": ([r(2, 3, 4)], {"source": 0, "destination": -1}),
    "broadcast_to": ([r(3, 1)], {"shape": (2, 3, 4)}), "flip": ([r(3, 4)], {"axis": 1}),
    "roll": ([r(3, 4)], {"shift": 2, "axis": 1}), "tril": ([r(3, 3)], {"k": 0}),
    "triu": ([r(3, 3)], {"k": 1}), "tile": ([r(2, 3)], {"reps": (2, 1, 2)}),
    "repeat": ([r(2, 3)], {"repeats": 2, "axis": 1}), "copy": ([r(3)], {}),
    "take": ([r(3, 4)], {"indices": np.array([0, 3, 3]), "axis": 1}),
    "concatenate": ([r(2, 3), r(1, 3), r(4, 3)], {"axis": 0}),
    "stack": ([r(2, 3), r(2, 3)], {"axis": -1}),
    # list family: one input, a Python list of arrays
    "stack_list": ([[r(2, 3), r(2, 3), r(2, 3)]], {"axis": 1}),
    "array_list": ([[r(2, 3), r(2, 3), r(2, 3)]], {}),
    "concatenate_list": ([[r(2, 3), r(1, 3), r(4, 3)]], {"axis": 0}),
    "sum_list": ([[r(2, 3), r(3), r(2, 3)]], {}),
    # neural-network family
    "mse_loss": ([r(3, 4), r(3, 4)], {"reduction": "mean"}),
    "binary_cross_entropy_with_logits": ([r(3, 4, lo=-3, hi=3), r(3, 4, lo=0, hi=1)],
                                         {"reduction": "sum"}),
    "nll_loss": ([r(4, 3, lo=-3, hi=0)], {"target": np.array([0, 2, -100, 1]),
                                          "reduction": "mean"}),
    "nll_loss_grad": ([r(4)], {"target": np.array([0, 2, -100, 1]), "shape": (4, 3),
                               "reduction": "none"}),
    "addmm": ([r(4), r(2, 3), r(3, 4)], {}),
    "normal_cdf": ([r(3, 4, lo=-3, hi=3)], {}),
    "binary_cross_entropy": ([r(3, 4, lo=0.05, hi=0.95), r(3, 4, lo=0, hi=1)],
                             {"reduction": "mean"}),
    "gelu": ([r(3, 4, lo=-3, hi=3)], {"approximate": "none"}),
    "softplus": ([away(8) * 3], {"beta": 2.0, "threshold": 4.0}),
    "leaky_relu": ([away(6)], {"negative_slope": 0.1}),
}

# Products, diagonals, norms and factorizations (own generator: the samples above keep theirs).
_la = np.random.default_rng(4321)


def _m(*shape):
    return _la.uniform(-1.0, 1.0, shape)


def _spd(n, batch=()):
    """A matrix whose lower triangle (all cholesky and eigh read) is far from singular."""
    return _m(*batch, n, n) * 0.3 + 2.0 * np.eye(n)


SAMPLES.update({
    "inner": ([_m(2, 3), _m(4, 3)], {}), "vdot": ([_m(2, 3), _m(3, 2)], {}),
    "kron": ([_m(2, 3), _m(3, 2)], {}), "cross": ([_m(4, 3), _m(3)], {}),
    "convolve": ([_m(5), _m(3)], {"mode": "same"}),
    "correlate": ([_m(3), _m(6)], {"mode": "full"}),
    "polyval": ([_m(4), _m(3)], {}),
    "diagonal": ([_m(3, 2, 4)], {"offset": 1, "axis1": 2, "axis2": 0}),
    "diag": ([_m(3, 4)], {"k": -1}), "diagflat": ([_m(2, 2)], {"k": 1}),
    "cholesky": ([_spd(3)], {}), "eigh_values": ([_m(2, 3, 3)], {"UPLO": "U"}),
    "eigh_vectors": ([_m(3, 3)], {}), "svd_u": ([_m(4, 3)], {}), "svd_s": ([_m(2, 3, 4)], {}),
    "svd_vh": ([_m(3, 4)], {}), "qr_q": ([_m(4, 3)], {}), "qr_r": ([_m(3, 4)], {}),
    "slogdet_logabsdet": ([_m(2, 3, 3)], {}), "pinv": ([_m(4, 3)], {}),
    "lstsq_solution": ([_m(5, 3), _m(5, 2)], {"rcond": None}),
    "lstsq_residuals": ([_m(5, 3), _m(5)], {}), "lstsq_sv": ([_m(5, 3), _m(5)], {}),
    "matrix_power": ([_m(3, 3)], {"n": 3}),
    "multi_dot": ([_m(3), _m(3, 4), _m(4, 2)], {}),
    "eigvalsh": ([_m(3, 3)], {"UPLO": "L"}), "svdvals": ([_m(2, 4, 3)], {}),
    "linalg_matmul": ([_m(2, 3, 4), _m(4, 2)], {}),
    "linalg_tensordot": ([_m(2, 3), _m(3, 4)], {"axes": 1}),
    "linalg_outer": ([_m(3), _m(2)], {}), "linalg_vecdot": ([_m(2, 3), _m(3)], {"axis": -1}),
    "linalg_cross": ([_m(2, 3), _m(3)], {}), "linalg_trace": ([_m(2, 3, 4)], {"offset": 1}),
    "linalg_diagonal": ([_m(2, 3, 4)], {"offset": -1}),
    "linalg_matrix_transpose": ([_m(2, 3, 4)], {}),
    "linalg_matrix_norm": ([_m(2, 3, 4)], {"ord": "nuc"}),
    "linalg_vector_norm": ([_m(2, 3, 4)], {"ord": 3, "axis": (0, 2)}),
    "vecdot": ([_m(2, 3), _m(3)], {}), "matrix_transpose": ([_m(2, 3, 4)], {}),
})

# Shapes, statistics, sorting, NaN-aware reductions and scipy.special (own generator).
_cv = np.random.default_rng(2468)


def _c(*shape, lo=-1.0, hi=1.0):
    return _cv.uniform(lo, hi, shape)


def _with_nan(*shape):
    x = _c(*shape)
    x.reshape(-1)[::5] = np.nan
    return x


SAMPLES.update({
    "fmax": ([np.array([[0.3, np.nan, -0.2], [0.5, 0.1, 0.8]]),
              np.array([0.1, 0.4, np.nan])], {}),
    "fmin": ([np.array([[0.3, np.nan, -0.2], [0.5, 0.1, 0.8]]),
              np.array([0.1, 0.4, np.nan])], {}),
    "sinc": ([np.array([0.0, 0.3, -1.4, 2.2])], {}),
    "nan_to_num": ([np.array([0.3, np.nan, np.inf, -np.inf, -0.7])],
                   {"nan": 1.5, "posinf": 2.0, "neginf": -3.0}),
    "ptp": ([_c(3, 4)], {"axis": 1, "keepdims": True}),
    "cumprod": ([np.array([[0.5, -1.2, 0.0, 2.0], [1.1, 0.7, -0.3, 0.9]])], {"axis": 1}),
    "nanmax": ([_with_nan(3, 4)], {"axis": 0}), "nanmin": ([_with_nan(3, 4)], {}),
    "nansum": ([_with_nan(3, 4)], {"axis": 1}),
    "nanmean": ([_with_nan(3, 4)], {"axis": 0, "keepdims": True}),
    "nanvar": ([_with_nan(3, 4)], {"axis": 1, "ddof": 1}),
    "nanstd": ([_with_nan(3, 4)], {"axis": 0}),
    "nanprod": ([_with_nan(3, 4)], {"axis": 1}),
    "nancumsum": ([_with_nan(3, 4)], {"axis": 0}),
    "atleast_1d": ([np.array(0.4)], {}), "atleast_2d": ([_c(3)], {}),
    "atleast_3d": ([_c(2, 3)], {}),
    "split_piece": ([_c(3, 7)], {"sections": 3, "axis": 1, "k": 0, "even": False}),
    "joined": ([_c(3), _c(3), _c(3)], {"how": "column_stack"}),
    "joined_rows": ([_c(3, 2, 4)], {"how": "hstack"}),
    # Python's math functions (runtime/rules/elementwise.py): of 0-d arrays, inside domains
    **{f"math_{name}": ([np.array(v) for v in values], {}) for name, values in {
        "exp": (0.3,), "log": (1.7,), "sqrt": (2.2,), "sin": (0.4,), "cos": (0.4,),
        "tan": (0.4,), "tanh": (0.4,), "sinh": (0.4,), "cosh": (0.4,), "asin": (0.3,),
        "acos": (0.3,), "atan": (0.6,), "atan2": (0.6, -1.3), "hypot": (0.6, -1.3),
        "log1p": (0.7,), "expm1": (0.7,), "log10": (1.7,), "log2": (1.7,), "fabs": (-0.6,),
        "pow": (1.7, 1.3), "asinh": (0.4,), "acosh": (1.6,), "atanh": (0.4,),
        "erf": (0.3,), "erfc": (0.3,), "lgamma": (1.7,), "gamma": (1.7,)}.items()},
    # sampling, windows, transforms, triangular solves (interpolation, spectral, triangular)
    "interp": ([np.array([-0.2, 0.1, 0.45, 0.8, 1.3]), np.array([0.0, 0.3, 0.6, 1.0]), _c(4)],
               {}),
    "trapezoid_x": ([_c(3, 4), np.array([0.0, 0.2, 0.7, 1.0])], {"axis": 1}),
    "trapezoid_dx": ([_c(3, 4), _c(3, 1)], {"axis": 1}),
    "vander": ([_c(4)], {"N": 3}),
    "sliding_window_view": ([_c(4, 5)], {"window_shape": (2, 3)}),
    "fft": ([_c(6)], {"n": 5, "norm": "ortho"}), "ifft": ([_c(3, 4)], {"axis": 0}),
    "rfft": ([_c(6)], {"n": 8}), "irfft": ([_c(5)], {"n": 7, "norm": "forward"}),
    "fftn": ([_c(2, 3, 4)], {"s": (3, 5), "axes": (0, 2)}), "fft2": ([_c(3, 4)], {}),
    "ifftn": ([_c(3, 4)], {"norm": "ortho"}), "ifft2": ([_c(2, 3, 4)], {"s": (2, 5)}),
    "rfftn": ([_c(3, 4)], {"s": (4, 6), "axes": (0, 1)}), "rfft2": ([_c(3, 5)], {}),
    "irfftn": ([_c(3, 4)], {"axes": (0, 1), "norm": "forward"}),
    "irfft2": ([_c(3, 4)], {"s": (4, 5)}),
    "solve_triangular": ([_c(4, 4) + 3.0 * np.eye(4), _c(4, 2)], {"lower": True, "trans": 1}),
    "cho_factor_c": ([_c(3, 3) * 0.3 + 2.0 * np.eye(3)], {"lower": False}),
    "real": ([_c(3, 2)], {}), "imag": ([_c(4)], {}), "conjugate": ([_c(2, 3)], {}),
    "angle": ([_c(5)], {"deg": True}),
    "diff": ([_c(3, 5)], {"n": 2, "axis": 1, "prepend": 0.5}),
    "pad": ([_c(3, 4)], {"pad_width": ((1, 2), (3, 1)), "mode": "reflect"}),
    "rot90": ([_c(2, 3, 4)], {"k": 3, "axes": (2, 0)}),
    "fliplr": ([_c(3, 4)], {}), "flipud": ([_c(3, 4)], {}),
    "rollaxis": ([_c(2, 3, 4)], {"axis": 2, "start": 1}),
    "sort": ([_c(3, 4)], {"axis": 0}),
    "partition": ([_c(3, 5)], {"kth": 2, "axis": 1}),
    "median": ([_c(3, 6)], {"axis": 1}), "quantile": ([_c(5, 4)], {"q": 0.3, "axis": 0}),
    "percentile": ([_c(7)], {"q": 40.0}),
    "take_along_axis": ([_c(3, 4), np.array([[0, 0], [3, 1], [2, 2]])], {"axis": 1}),
    "scatter_along": ([_c(3, 2), np.array([[0, 0], [3, 1], [2, 2]])],
                      {"axis": 1, "shape": (3, 4)}),
    "weighted_average": ([_c(3, 4), _c(4, lo=0.5, hi=2.0)], {"axis": 1}),
    "cov": ([_c(3, 5)], {"ddof": 0}), "corrcoef": ([_c(5, 3)], {"rowvar": False}),
    "gradient": ([_c(4, 5)], {"axis": 1, "edge_order": 2}),
    "vector_gradient": ([_c(6)], {"edge_order": 1}),
    "erf": ([_c(4)], {}), "erfc": ([_c(4)], {}), "gammaln": ([_c(4, lo=0.5, hi=3.0)], {}),
    "digamma": ([_c(4, lo=0.5, hi=3.0)], {}),
    "polygamma": ([_c(4, lo=0.5, hi=3.0)], {"n": 1}),
    "logit": ([_c(4, lo=0.1, hi=0.9)], {}),
})

# scipy.special's Bessel and gamma-family ufuncs, scipy.stats, scipy.signal (own generator;
# an integer order or shape parameter is not differentiated: its rule refuses).
_sp = np.random.default_rng(1357)


def _s(*shape, lo=0.5, hi=3.0):
    return _sp.uniform(lo, hi, shape)


_ORDERS = np.array([[0], [1], [3]])
SAMPLES.update({
    **{name: ([_s(4, lo=0.5, hi=6.0)], {}) for name in (
        "j0", "j1", "y0", "y1", "i0", "i1", "k0", "k1", "k0e", "k1e")},
    "i0e": ([_s(4, lo=-3.0, hi=3.0)], {}), "i1e": ([_s(4, lo=-3.0, hi=3.0)], {}),
    **{name: ([_ORDERS, _s(3, 4, lo=0.5, hi=6.0)], {}) for name in (
        "jv", "yv", "yn", "iv", "ive", "kv", "kve")},
    "gamma": ([_s(4)], {}), "rgamma": ([_s(4)], {}),
    "erfinv": ([_s(4, lo=-0.9, hi=0.9)], {}), "erfcinv": ([_s(4, lo=0.1, hi=1.9)], {}),
    "ndtr": ([_s(4, lo=-2.0, hi=2.0)], {}), "log_ndtr": ([_s(4, lo=-6.0, hi=2.0)], {}),
    "ndtri": ([_s(4, lo=0.1, hi=0.9)], {}),
    "beta": ([_s(3, 1), _s(4)], {}), "betaln": ([_s(3, 1), _s(4)], {}),
    "xlogy": ([_s(3, 4, lo=-1.0, hi=1.0), _s(4)], {}),
    "gammainc": ([np.array([1, 2, 4]), _s(3)], {}),
    "gammaincc": ([np.array([1, 2, 4]), _s(3)], {}),
    "betainc": ([np.array([1, 2, 4]), np.array([2, 1, 3]), _s(3, lo=0.1, hi=0.9)], {}),
    "multigammaln": ([_s(4, lo=2.0, hi=5.0)], {"d": 3}),
    "logsumexp_b": ([_s(3, 4, lo=-1.0, hi=1.0), _s(1, 4)], {"axis": 0, "keepdims": False}),
    "continuous": ([_s(3, 4, lo=-2.0, hi=2.0), _s(4, lo=2.5, hi=5.0), _s(3, 1, lo=-1.0, hi=1.0),
                    _s(3, 1)], {"dist": "t", "method": "logpdf"}),
    "poisson": ([np.array([0, 1, 3, 2]), _s(4)], {"method": "logpmf"}),
    "dirichlet": ([np.array([0.25, 0.25, 0.5], dtype=np.float32), _s(3, lo=1.2, hi=3.0)],
                  {"method": "logpdf"}),     # x: on the simplex, not perturbed
    "signal_convolve": ([_s(4, 3, lo=-1.0, hi=1.0), _s(2, 2, lo=-1.0, hi=1.0)],
                        {"mode": "same", "method": "auto"}),
})

# scipy.special's entropy family, scipy.linalg's solves and factorizations, scipy.signal's
# correlations (own generator).
# SciPy's eigh (LAPACK's syevr) picks eigenvector signs that flip under perturbations of
# 1e-6 for most matrices of size 3 and up: finite differences of its eigenvectors are only
# meaningful for a 2x2 matrix (programs use sign-free quantities: v * v, v @ diag(w) @ v.T).
_sl = np.random.default_rng(97531)


def _m(*shape):
    return _sl.uniform(-1.0, 1.0, shape)


def _spd(n):
    a = _m(n, n)
    return a @ a.T + n * np.eye(n) + 0.2 * _m(n, n)


SAMPLES.update({
    "xlog1py": ([_s(3, 4, lo=-1.0, hi=1.0), _s(4, lo=-0.5, hi=2.0)], {}),
    "entr": ([_s(4)], {}), "rel_entr": ([_s(4), _s(4)], {}), "kl_div": ([_s(3, 4), _s(4)], {}),
    "log_expit": ([_s(4, lo=-5.0, hi=5.0)], {}),
    "special_expm1": ([_s(4, lo=-2.0, hi=2.0)], {}), "special_log1p": ([_s(4)], {}),
    "boxcox": ([_s(4), _s(4, lo=-1.0, hi=2.0)], {}),
    "logsumexp_signed": ([_m(3, 4), np.array([[1.0, -2.0, 0.5, 0.1]])], {"axis": 1,
                                                                       "keepdims": False}),
    "scipy_solve": ([_spd(3), _m(3, 2)], {"assume_a": "pos", "lower": False}),
    "scipy_inv": ([_m(3, 3) + 2.0 * np.eye(3)], {"assume_a": None, "lower": False}),
    "scipy_det": ([_m(3, 3)], {}),
    "scipy_cholesky": ([_spd(3)], {"upper": True}),
    "scipy_norm": ([_m(3, 4)], {"ord": None, "axis": 1, "keepdims": False}),
    "scipy_pinv": ([_m(4, 3)], {"atol": None, "rtol": None}),
    "scipy_expm": ([0.5 * _m(3, 3)], {}),
    "scipy_block_diag": ([_m(2, 3), _m(2), _m(1, 1)], {}),
    "scipy_eigh_values": ([_spd(3)], {"lower": True}),
    "scipy_eigh_vectors": ([_spd(2)], {"lower": False}),
    "scipy_svd_u": ([_m(4, 3)], {"full_matrices": False}),
    "scipy_svd_s": ([_m(3, 4)], {"full_matrices": False}),
    "scipy_svd_vh": ([_m(4, 3)], {"full_matrices": False}),
    "scipy_qr_q": ([_m(4, 3)], {"mode": "economic"}),
    "scipy_qr_r": ([_m(3, 4)], {"mode": "full"}),
    "scipy_lstsq_x": ([_m(5, 3), _m(5, 2)], {"rcond": None}),
    "scipy_lstsq_residues": ([_m(5, 3), _m(5, 2)], {"rcond": None}),
    "scipy_lstsq_s": ([_m(5, 3), _m(5)], {"rcond": None}),
    "signal_correlation": ([_m(4, 3), _m(2, 2)], {"fn": "correlate2d", "mode": "same"}),
    "scipy_lu_factor_lu": ([_m(4, 4)], {}),
    "scipy_lu_solve": ([np.triu(_m(3, 3)) + 2.0 * np.eye(3) + np.tril(_m(3, 3), -1),
                        np.array([2, 2, 2], dtype=np.int32), _m(3, 2)], {}),
})

# Primitives that forward rules use, so that they are differentiated again (own generator).
_fw = np.random.default_rng(8642)


def _f(*shape):
    return _fw.uniform(-1.0, 1.0, shape)


SAMPLES.update({
    "prod_others": ([_fw.uniform(0.5, 1.5, (3, 4))], {"axis": 1}),
    "det_gradient": ([_f(2, 3, 3) * 0.3 + 2.0 * np.eye(3)], {}),
    "logdet_gradient": ([_f(3, 3) * 0.3 + 2.0 * np.eye(3)], {}),
    "as_columns": ([_f(4, 3), np.zeros(3, dtype=np.int64)], {}),        # b: only its rank
    "from_columns": ([_f(4, 3, 1), np.zeros(3, dtype=np.int64)], {}),
    "norm_direction": ([_f(3, 4)], {"ord": 3, "axis": 1}),
    "weights_along": ([_f(4), np.zeros((3, 4), dtype=np.int64)], {"axis": 1}),   # a: its shape
})


def _coverage_torch(t):
    return {
        "fmax": t.fmax, "fmin": t.fmin, "sinc": t.sinc,
        "nan_to_num": lambda x, nan, posinf, neginf: t.nan_to_num(x, nan=nan, posinf=posinf,
                                                                  neginf=neginf),
        "ptp": lambda x, axis, keepdims: x.amax(axis, keepdim=keepdims)
        - x.amin(axis, keepdim=keepdims),
        "cumprod": lambda x, axis: t.cumprod(x, axis),
        "nansum": lambda x, axis: t.nansum(x, axis),
        "nanmean": lambda x, axis, keepdims: t.nanmean(x, axis, keepdim=keepdims),
        "atleast_1d": t.atleast_1d, "atleast_2d": t.atleast_2d, "atleast_3d": t.atleast_3d,
        "joined": lambda *xs, how: t.column_stack(xs),
        "joined_rows": lambda x, how: t.hstack(tuple(x)),
        "real": t.real, "conjugate": t.conj,
        "rot90": lambda x, k, axes: t.rot90(x, k, axes), "fliplr": t.fliplr,
        "flipud": t.flipud, "sort": lambda x, axis: t.sort(x, axis).values,
        "quantile": lambda a, q, axis: t.quantile(a, q, dim=axis),
        "percentile": lambda a, q: t.quantile(a, q / 100.0),
        "take_along_axis": lambda x, indices, axis: t.take_along_dim(
            x, t.as_tensor(indices), axis),
        "cov": lambda m, ddof: t.cov(m, correction=ddof),
        "corrcoef": lambda x, rowvar: t.corrcoef(x.T),
        "gradient": lambda f, axis, edge_order: t.gradient(f, dim=axis,
                                                          edge_order=edge_order)[0],
        "vector_gradient": lambda f, edge_order: t.gradient(f, edge_order=edge_order)[0],
        "erf": t.special.erf, "erfc": t.special.erfc, "gammaln": t.special.gammaln,
        "digamma": t.special.digamma, "logit": t.special.logit,
    }


# Rules that use a helper without rules of its own: no second derivative yet.
NO_SECOND_ORDER: dict[str, str] = {}


def _torch_equivalents():
    import torch
    import torch.nn.functional as F
    t = torch
    return {
        "negative": t.neg, "exp": t.exp, "exp2": t.exp2, "expm1": t.expm1, "log": t.log,
        "log2": t.log2, "log10": t.log10, "log1p": t.log1p, "sqrt": t.sqrt,
        "square": t.square, "reciprocal": t.reciprocal, "absolute": t.abs, "sin": t.sin,
        "cos": t.cos, "tan": t.tan, "arcsin": t.asin, "arccos": t.acos, "arctan": t.atan,
        "sinh": t.sinh, "cosh": t.cosh, "tanh": t.tanh, "arcsinh": t.asinh,
        "arccosh": t.acosh, "arctanh": t.atanh, "deg2rad": t.deg2rad, "rad2deg": t.rad2deg,
        "sigmoid": t.sigmoid, "relu": t.relu, "sign": t.sign, "floor": t.floor,
        "ceil": t.ceil, "trunc": t.trunc, "rint": t.round, "add": t.add, "subtract": t.sub,
        "multiply": t.mul, "divide": t.div, "power": t.pow,
        "pow_scalar": lambda x, p: x ** p, "rsub": lambda x, other: other - x,
        "maximum": t.maximum, "minimum": t.minimum, "arctan2": t.atan2, "hypot": t.hypot,
        "logaddexp": t.logaddexp, "logaddexp2": t.logaddexp2, "remainder": t.remainder,
        "fmod": t.fmod, "where": lambda c, x, y: t.where(c, x, y),
        "clip": lambda x, a_min, a_max: t.clamp(x, a_min, a_max),
        "sum": lambda x, axis, keepdims: x.sum(axis, keepdim=keepdims),
        "mean": lambda x, axis, keepdims: x.mean(axis, keepdim=keepdims),
        "prod": lambda x, axis: x.prod(axis), "max": lambda x, axis: x.amax(axis),
        "min": lambda x, axis, keepdims: x.amin(axis, keepdim=keepdims),
        "var": lambda x, axis, ddof: x.var(axis, correction=ddof),
        "std": lambda x, ddof: x.std(correction=ddof),
        "cumsum": lambda x, axis: x.cumsum(axis), "logsumexp": lambda x, axis: x.logsumexp(axis),
        "softmax": lambda x, axis: x.softmax(axis),
        "log_softmax": lambda x, axis: x.log_softmax(axis), "matmul": t.matmul,
        "dot": t.matmul, "tensordot": lambda a, b, axes: t.tensordot(a, b, dims=axes),
        "outer": lambda a, b: t.outer(a, b.reshape(-1)), "trace": t.trace,
        "einsum": lambda *ops, subscripts: t.einsum(subscripts, *ops),
        "solve": t.linalg.solve, "inv": t.linalg.inv, "det": t.linalg.det,
        "norm": lambda x, axis: t.linalg.vector_norm(x, dim=axis),
        "reshape": lambda x, shape: x.reshape(shape), "ravel": lambda x: x.reshape(-1),
        "squeeze": lambda x, axis: x.squeeze(axis), "expand_dims": lambda x, axis: x.unsqueeze(0),
        "transpose": lambda x, axes: x.permute(axes),
        "swapaxes": lambda x, axis1, axis2: x.transpose(axis1, axis2),
        "moveaxis": lambda x, source, destination: t.movedim(x, source, destination),
        "broadcast_to": lambda x, shape: x.expand(shape), "flip": lambda x, axis: x.flip(axis),
        "roll": lambda x, shift, axis: x.roll(shift, axis), "tril": lambda x, k: x.tril(k),
        "triu": lambda x, k: x.triu(k), "tile": lambda x, reps: t.tile(x, reps),
        "repeat": lambda x, repeats, axis: x.repeat_interleave(repeats, axis),
        "copy": t.clone, "concatenate": lambda *xs, axis: t.cat(xs, axis),
        "stack": lambda *xs, axis: t.stack(xs, axis),
        "stack_list": lambda xs, axis: t.stack(xs, axis),
        "array_list": lambda xs: t.stack(xs, 0),
        "concatenate_list": lambda xs, axis: t.cat(xs, axis), "sum_list": sum,
        "mse_loss": lambda x, y, reduction: F.mse_loss(x, y, reduction=reduction),
        "binary_cross_entropy_with_logits": lambda x, y, reduction:
            F.binary_cross_entropy_with_logits(x, y, reduction=reduction),
        "nll_loss": lambda x, target, reduction: F.nll_loss(x, t.as_tensor(target),
                                                             reduction=reduction),
        "addmm": t.addmm,
        "normal_cdf": lambda x: t.special.ndtr(x),
        "binary_cross_entropy": lambda x, target, reduction: F.binary_cross_entropy(
            x, target, reduction=reduction),
        "gelu": lambda x, approximate: F.gelu(x, approximate=approximate),
        "softplus": lambda x, beta, threshold: F.softplus(x, beta=beta, threshold=threshold),
        "leaky_relu": lambda x, negative_slope: F.leaky_relu(x, negative_slope),
        "inner": t.inner, "kron": t.kron,
        "cross": lambda a, b: t.linalg.cross(*t.broadcast_tensors(a, b)),
        "diagonal": lambda x, offset, axis1, axis2: t.diagonal(x, offset, axis1, axis2),
        "diag": lambda x, k: t.diag(x, k), "svd_s": t.linalg.svdvals, "pinv": t.linalg.pinv,
        "matrix_power": lambda x, n: t.linalg.matrix_power(x, n),
        "slogdet_logabsdet": lambda x: t.linalg.slogdet(x)[1],
        "multi_dot": lambda *xs: t.linalg.multi_dot(xs),
    }


def torch_equivalents():
    try:
        import torch
        return {**_torch_equivalents(), **_coverage_torch(torch)}
    except ImportError:
        return {}
