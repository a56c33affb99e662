"""Snapshots of higher-order generated source: ``jvp``, ``hessian`` and ``grad(grad(f))``.

Set SRCGRAD_UPDATE_SNAPSHOTS=1 to rewrite them.  A reviewer should recognise the derivative:
the jvp carries each value's tangent beside it (``z`` and ``z_dot``), the Hessian is the
reverse-mode code of that jvp's directional derivative, under the user's own lines.
"""

from __future__ import annotations

import os
import pathlib
import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import snapshot_functions as fns

import srcgrad

HERE = pathlib.Path(__file__).parent / "snapshots"
X = np.array([0.3, -0.8, 1.1, 0.5])


def _jvp():
    j = srcgrad.jvp(fns.energy, strict=True)
    return j.source, "energy_jvp", (X, np.ones(4)), j((X,), (np.ones(4),))


def _hessian():
    h = srcgrad.hessian(fns.energy, strict=True)
    return h.source, "energy_hessian", (X,), h(X)


def _grad_grad():
    g = srcgrad.grad(srcgrad.grad(fns.cubic, strict=True), strict=True)
    return g.source, "cubic_grad_grad", (0.7,), g(0.7)


CASES = {"energy_jvp": _jvp, "energy_hessian": _hessian, "cubic_grad_grad": _grad_grad}


@pytest.mark.parametrize("name", sorted(CASES))
def test_higher_order_source_matches_the_snapshot(name):
    source = CASES[name]()[0]
    path = HERE / f"{name}.py"
    if os.environ.get("SRCGRAD_UPDATE_SNAPSHOTS") or not path.exists():
        path.write_text(source)
    assert source == path.read_text()


@pytest.mark.parametrize("name", sorted(CASES))
def test_higher_order_source_is_deterministic(name):
    assert CASES[name]()[0] == CASES[name]()[0]


@pytest.mark.parametrize("name", sorted(CASES))
def test_higher_order_source_runs_alone_with_numpy_only(name, tmp_path):
    source, function, args, expected = CASES[name]()
    (tmp_path / "generated.py").write_text(source)
    (tmp_path / "args.pkl").write_bytes(pickle.dumps(args))
    script = textwrap.dedent(f"""
        import pickle, sys
        sys.path.insert(0, {str(tmp_path)!r})
        import generated
        args = pickle.load(open("args.pkl", "rb"))
        out = generated.{function}(*args)
        if isinstance(out, tuple) and callable(out[-1]):      # a vjp: (value, backward)
            out = out[0]
        pickle.dump(out, open("out.pkl", "wb"))
        assert "srcgrad" not in sys.modules
        """)
    subprocess.run([sys.executable, "-c", script], check=True, cwd=tmp_path,
                   env={**os.environ, "PYTHONPATH": ""})
    got = pickle.loads((tmp_path / "out.pkl").read_bytes())
    if expected is not None:
        for a, b in zip(np.atleast_1d(np.asarray(got, dtype=object)),
                        np.atleast_1d(np.asarray(expected, dtype=object))):
            np.testing.assert_allclose(np.asarray(a, dtype=float), np.asarray(b, dtype=float))
