"""Snapshots of generated source: a change in generated code shows up in review.

Set SRCGRAD_UPDATE_SNAPSHOTS=1 to rewrite them.  Each generated module must also run in a
fresh interpreter with only NumPy imported (it defines every helper it uses).  The fused
snapshots (``FUSED``) are ``backend="numba"`` modules specialised for the shapes of a first
call, one loop per fused region; they run alone jitted by numba and with
``NUMBA_DISABLE_JIT=1``.
"""

from __future__ import annotations

import ast
import json
import os
import pathlib
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import snapshot_functions as fns
from parity_cases import kernels

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


FUSED = {
    "elementwise_chain_numba": (fns.elementwise_chain, lambda: (
        np.random.default_rng(1).normal(size=4096),)),     # vectorised math: 4096+
    "row_logsumexp_numba": (fns.row_logsumexp, lambda: (
        np.random.default_rng(2).normal(size=(64, 64)),)),
}


@pytest.fixture(scope="module")
def kernel_files(tmp_path_factory):
    """A private SRCGRAD_CACHE_DIR: the specialised modules' files and numba's cache."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SRCGRAD_CACHE_DIR", str(tmp_path_factory.mktemp("kernels")))
        yield


def _fused(name):
    """The specialised source after the second call (which ran it), the arguments and that
    call's result."""
    fn, make = FUSED[name]
    g = srcgrad.grad(fn, backend="numba", strict=True)
    args = make()
    g(*args)                                  # generic; learns the shapes
    result = g(*args)                         # the fused module
    return list(g.sources.values())[-1], args, result


@pytest.mark.parametrize("name", sorted(FUSED))
def test_fused_source_matches_the_snapshot(name, kernel_files):
    source = _fused(name)[0]
    path = HERE / f"{name}.py"
    if os.environ.get("SRCGRAD_UPDATE_SNAPSHOTS") or not path.exists():
        path.write_text(source)
    assert source == path.read_text()
    loops = [sum(isinstance(st, ast.For) for st in k.body) for k in kernels(source)]
    assert loops and set(loops) == {1}                     # a loop nest a kernel


@pytest.mark.parametrize("name", sorted(FUSED))
def test_fused_source_is_deterministic(name, kernel_files):
    assert _fused(name)[0] == _fused(name)[0]


@pytest.mark.parametrize("jit", ["numba", "NUMBA_DISABLE_JIT=1"])
@pytest.mark.parametrize("name", sorted(FUSED))
def test_fused_source_runs_alone_in_a_fresh_interpreter(name, jit, tmp_path, kernel_files):
    import pickle
    pytest.importorskip("numba")
    source, args, expected = _fused(name)
    (tmp_path / "args.pkl").write_bytes(pickle.dumps(args))
    (tmp_path / "generated.py").write_text(source)
    script = textwrap.dedent(f"""
        import json, pickle, sys
        sys.path.insert(0, {str(tmp_path)!r})
        import generated
        args = pickle.load(open("args.pkl", "rb"))
        out = generated.{FUSED[name][0].__name__}_grad(*args)
        pickle.dump(out, open("out.pkl", "wb"))
        assert "srcgrad" not in sys.modules and "numba" in sys.modules
        kernels = [getattr(generated, k) for k in {[k.name for k in kernels(source)]!r}]
        print(json.dumps([len(getattr(k, "signatures", ())) for k in kernels]))
        """)
    env = {**os.environ, "PYTHONPATH": ""}
    if jit != "numba":
        env["NUMBA_DISABLE_JIT"] = "1"
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    signatures = json.loads(done.stdout)        # compiled by numba, or left as Python
    assert signatures and (all(signatures) if jit == "numba" else not any(signatures))
    np.testing.assert_allclose(pickle.loads((tmp_path / "out.pkl").read_bytes()), expected,
                               rtol=1e-13)
