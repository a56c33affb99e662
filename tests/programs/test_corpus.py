"""The corpus of realistic programs (``tests/programs/*.py``) through srcgrad.

Each program is differentiated in strict and default mode and checked against central finite
differences (and autograd or JAX where they run); ``harness.py`` says how.  One test per
program asserts it is never WRONG, internal or mutated (a bug: marked xfail, strict, with the
bug described, until it is fixed); ``test_outcomes_match_expected_table`` compares every
program's outcome with ``EXPECTED``, so any change (a program that now compiles, or no longer
does) shows up.  ``python -m tests.programs.report`` prints the table.
"""

from __future__ import annotations

import functools
import importlib.util
import sys
from pathlib import Path

import pytest


def _load_harness():
    name = "srcgrad_corpus_harness"             # tests/ is not a package: import by path
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name("harness.py"))
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


harness = _load_harness()
NAMES = harness.program_names()

BUGS = {
    "errstate_entropy": "NaN gradient: np.where's unselected branch t*log(t/p) at t=0 gives "
                        "0*inf (compiled and eager; autograd and JAX do the same)",
}

EXPECTED = {
    "attention": "compiled",
    "autoencoder_subclassed": "compiled",
    "autograd_param_list": "compiled",
    "autograd_unpack_generator": "fallback-correct",
    "bbvi_bayesian_regression": "compiled",
    "black_scholes_math": "compiled",
    "black_scholes_scipy": "compiled",
    "bnn_black_box_svi": "fallback-correct",
    "bound_method_model": "compiled",
    "burgers_upwind": "compiled",
    "callbacks_activation": "compiled",
    "cartpole_sim": "fallback-correct",
    "char_rnn": "compiled",
    "cholesky_jitter_retry": "fallback-correct",
    "conv_naive_loops": "compiled",
    "conv_sliding_window": "compiled",
    "cs231n_batchnorm": "fallback-correct",
    "cs231n_conv_im2col": "compiled",
    "cs231n_fc_net": "fallback-correct",
    "cs231n_rnn_forward": "compiled",
    "cs231n_two_layer": "compiled",
    "ctmc_expm_likelihood": "refused",
    "dataclass_config": "compiled",
    "dataclass_params": "compiled",
    "deq_fixed_point": "compiled",
    "dropout_training": "compiled",
    "einsum_ellipsis_bilinear": "compiled",
    "errstate_entropy": "WRONG",
    "fft_spectral_loss": "fallback-correct",
    "fir_filter_convolve": "compiled",
    "fluidsim_project": "compiled",
    "functional_map_zip_partial": "compiled",
    "gan_generator": "compiled",
    "global_constants": "compiled",
    "global_random_seed": "compiled",
    "gmm": "compiled",
    "gmm_em_logsumexp": "compiled",
    "gp_kernel_algebra": "fallback-correct",
    "gp_regression": "compiled",
    "gp_solve_triangular": "compiled",
    "gru_class": "compiled",
    "hawkes_process_loglik": "compiled",
    "heat_equation": "compiled",
    "hmm_forward": "compiled",
    "hmm_scaled": "compiled",
    "huber_piecewise": "compiled",
    "hyperparam_dict": "compiled",
    "input_checks": "compiled",
    "interp_trapezoid": "compiled",
    "ising_roll_energy": "compiled",
    "kalman_filter": "compiled",
    "kalman_smoother_rts": "fallback-correct",
    "keras_style_sequential": "fallback-correct",
    "kron_tensordot_kernel": "compiled",
    "lasso_proximal": "compiled",
    "lennard_jones_triu": "compiled",
    "local_aliases": "compiled",
    "logging_and_prints": "compiled",
    "logistic_regression": "compiled",
    "lorenz_rk4": "compiled",
    "lstm": "compiled",
    "maml_inner_sgd": "compiled",
    "masked_attention_where": "fallback-correct",
    "matrix_factorization": "compiled",
    "maxpool_naive": "compiled",
    "maxpool_reshape": "compiled",
    "minibatch_generator_epoch": "fallback-correct",
    "mixture_density_network": "compiled",
    "mlp_layer_classes": "compiled",
    "multihead_attention": "compiled",
    "namedtuple_params": "compiled",
    "namedtuple_unpacked": "compiled",
    "nbody_potential": "compiled",
    "ndenumerate_grid": "refused",
    "negbin_maxlike": "compiled",
    "nested_closures": "compiled",
    "neural_ode_euler": "compiled",
    "nielsen_network": "compiled",
    "numpy_ml_layers": "fallback-correct",
    "odeint_pendulum": "fallback-correct",
    "optimizer_unrolled_momentum": "fallback-correct",
    "planar_flow_generator": "compiled",
    "poisson_glm_gammaln": "compiled",
    "polyfit_vander": "compiled",
    "polyval_spline_fit": "refused",
    "portfolio_markowitz": "compiled",
    "ppo_clipped_objective": "compiled",
    "projectile_drag": "compiled",
    "property_parametrization": "fallback-correct",
    "reinforce_policy_gradient": "compiled",
    "resnet_sequential": "compiled",
    "ridge_hyperparameter": "compiled",
    "robust_median_regression": "fallback-correct",
    "rosenbrock_scipy_optimize": "compiled",
    "simulator_class": "fallback-correct",
    "sin_taylor_while": "compiled",
    "sklearn_style_estimator": "fallback-correct",
    "sliced_wasserstein_sort": "compiled",
    "soft_kmeans": "compiled",
    "softmax_regression_onehot": "compiled",
    "spectral_eigh": "compiled",
    "spring_chain_verlet": "compiled",
    "stable_fluids_diffusion": "compiled",
    "stick_breaking_cumprod": "compiled",
    "survival_cumsum": "compiled",
    "torch_style_module": "fallback-correct",
    "transformer_block": "compiled",
    "triplet_embedding": "compiled",
    "tsne_kl_divergence": "compiled",
    "vae": "compiled",
    "weights_parser_rnn": "fallback-correct",
    "word2vec_negative_sampling": "compiled",
}


@functools.cache
def result(name: str):
    return harness.run_program(name)


@pytest.mark.parametrize("name", [
    pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=BUGS[n])) if n in BUGS else n
    for n in NAMES])
def test_program_is_sound(name):
    r = result(name)
    assert r.outcome not in ("WRONG", "internal", "mutated"), (
        f"{name}: {r.outcome}\n  strict: {r.strict.status} {r.strict.message}\n"
        f"  default: {r.default.status} {r.default.message}")


def test_outcomes_match_expected_table():
    got = {n: result(n).outcome for n in NAMES}
    changed = {n: (EXPECTED.get(n), got.get(n)) for n in set(got) | set(EXPECTED)
               if EXPECTED.get(n) != got.get(n)}
    assert not changed, "outcomes changed (expected, got): " + ", ".join(
        f"{n}: {old} -> {new}" for n, (old, new) in sorted(changed.items()))


def test_every_bug_is_in_the_table():
    assert set(BUGS) <= set(EXPECTED)
    assert all(EXPECTED[n] in ("WRONG", "internal", "mutated") for n in BUGS)


def test_readme_states_the_table():
    """README's "What is supported" gives the corpus's numbers: they are the table's."""
    import re
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    found = re.search(r"corpus of (\d+) realistic programs.*?Today (\d+) compile strict, (\d+) "
                      r"get the right\s+gradient in default mode, (\d+) (?:are|is) refused", readme,
                      re.S)
    assert found, "README no longer states the corpus table"
    outcomes = list(EXPECTED.values())
    compiled = outcomes.count("compiled")
    assert tuple(map(int, found.groups())) == (
        len(EXPECTED), compiled, compiled + outcomes.count("fallback-correct"),
        outcomes.count("refused"))
