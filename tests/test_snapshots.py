"""Snapshots of generated source: a change in generated code shows up in review.

Set SRCGRAD_UPDATE_SNAPSHOTS=1 to rewrite them.  Each generated module must also run in a
fresh interpreter with only NumPy imported (it defines every helper it uses).
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import snapshot_functions as fns

import srcgrad

HERE = pathlib.Path(__file__).parent / "snapshots"
rng = np.random.default_rng(0)
CASES = {
    "mlp_loss": (fns.mlp_loss, 0, lambda: (
        {"W1": rng.normal(size=(3, 4)), "b1": np.zeros(4), "W2": rng.normal(size=(4, 1)),
         "b2": np.zeros(1)}, rng.normal(size=(8, 3)), rng.normal(size=(8, 1)))),
    "logistic_regression": (fns.logistic_regression, (0, 1), lambda: (
        rng.normal(size=3), 0.1, rng.normal(size=(8, 3)), (rng.random(8) > 0.5) * 1.0)),
    "softmax_cross_entropy": (fns.softmax_cross_entropy, 0, lambda: (
        rng.normal(size=(3, 4)), rng.normal(size=(8, 3)), np.eye(4)[rng.integers(0, 4, 8)])),
    "rnn_states": (fns.rnn_states, (1, 2), lambda: (
        np.zeros((2, 4)), rng.normal(size=(4, 4)) * 0.5, rng.normal(size=(3, 4)),
        rng.normal(size=(5, 2, 3)))),
    "prefix_sums": (fns.prefix_sums, (0, 1), lambda: (rng.normal(size=6), 0.9)),
}


def _source(name):
    fn, wrt, make = CASES[name]
    g = srcgrad.grad(fn, wrt=wrt, strict=True)
    args = make()
    g(*args)                                  # specialises pytree arguments
    return g.source, g, args


@pytest.mark.parametrize("name", sorted(CASES))
def test_generated_source_matches_the_snapshot(name):
    source, _, _ = _source(name)
    path = HERE / f"{name}.py"
    if os.environ.get("SRCGRAD_UPDATE_SNAPSHOTS") or not path.exists():
        path.write_text(source)
    assert source == path.read_text()


@pytest.mark.parametrize("name", sorted(CASES))
def test_generated_source_is_deterministic(name):
    assert _source(name)[0] == _source(name)[0]


@pytest.mark.parametrize("name", sorted(CASES))
def test_generated_source_runs_alone_in_a_fresh_interpreter(name, tmp_path):
    source, g, args = _source(name)
    expected = g(*args)
    import pickle
    fn_name = f"{CASES[name][0].__name__}_grad"
    (tmp_path / "args.pkl").write_bytes(pickle.dumps(args))
    (tmp_path / "generated.py").write_text(source)
    script = textwrap.dedent(f"""
        import pickle, sys
        import numpy as np
        sys.path.insert(0, {str(tmp_path)!r})
        import generated
        args = pickle.load(open({str(tmp_path / 'args.pkl')!r}, "rb"))
        out = generated.{fn_name}(*args)
        pickle.dump(out, open({str(tmp_path / 'out.pkl')!r}, "wb"))
        assert "srcgrad" not in sys.modules
        """)
    subprocess.run([sys.executable, "-c", script], check=True, cwd=tmp_path,
                   env={**os.environ, "PYTHONPATH": ""})
    got = pickle.loads((tmp_path / "out.pkl").read_bytes())
    flat = lambda t: [np.asarray(v) for v in (t.values() if isinstance(t, dict) else  # noqa: E731
                                              t if isinstance(t, tuple) else [t])]
    for a, b in zip(flat(got), flat(expected)):
        np.testing.assert_allclose(a, b)
