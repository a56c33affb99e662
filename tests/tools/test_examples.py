"""The examples run and do what they say."""

from __future__ import annotations

import pathlib
import runpy
import sys

EXAMPLES = pathlib.Path(__file__).parents[2] / "examples"
sys.path.insert(0, str(EXAMPLES))


def test_projectile_drag_is_fitted_through_the_compiled_loop():
    import projectile
    drag, errors = projectile.fit(target_drag=0.05, verbose=False)
    assert abs(drag - 0.05) < 1e-6 and errors[-1] < 1e-10


def test_classifier_loss_falls():
    import train_classifier
    losses = train_classifier.train(steps=60, verbose=False)
    assert losses[-1] < losses[0] / 2


def test_quickstart_runs(capsys):
    runpy.run_path(str(EXAMPLES / "quickstart.py"), run_name="quickstart")
    assert "def loss_grad" in capsys.readouterr().out


def test_sequence_model_learns_through_lists():
    import sequence_model
    losses = sequence_model.train(steps=60, verbose=False)
    assert losses[-1] < losses[0] / 5


def test_newton_converges_quadratically_on_compiled_hessians_and_hvps():
    import newton
    import numpy as np
    start = np.linspace(0.1, 0.4, 6)
    for method in (newton.newton, newton.truncated_newton):
        norms = method(start, pull=0.5, steps=5, verbose=False)
        assert norms[1] < norms[0] ** 1.5 and norms[2] < norms[1] ** 1.5 and norms[-1] < 1e-12
