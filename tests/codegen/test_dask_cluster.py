"""backend="dask" on a real cluster: a LocalCluster of 2 worker processes with a small memory
limit, as users start one.  The example trains out of core there; gradients computed on the
cluster equal the NumPy backend's; results are lazy and evaluated in one graph."""

from __future__ import annotations

import collections
import importlib.util
import pathlib

import numpy as np
import pytest

import srcgrad

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("dask.distributed")
from dask.utils import key_split  # noqa: E402

EXAMPLE = pathlib.Path(__file__).parents[2] / "examples" / "dask_training.py"
MEMORY_LIMIT = 192 * 2 ** 20


@pytest.fixture(scope="module")
def example():
    """The example as a module.  It is not put in ``sys.modules``: the workers cannot import
    it, so its functions travel to them by value (cloudpickle), as ``__main__``'s do."""
    spec = importlib.util.spec_from_file_location("dask_training_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def cluster():
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                                  memory_limit=MEMORY_LIMIT, dashboard_address=None) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def client(cluster):
    with distributed.Client(cluster) as client:
        yield client


@pytest.fixture(scope="module")
def data(example, client, tmp_path_factory):
    """A small dataset written by the example's code, read lazily in 4 chunks of rows, and the
    same data as NumPy arrays."""
    folder = str(tmp_path_factory.mktemp("dask_data"))
    rows, features, chunk_rows = 4000, 5, 1000
    example.write_dataset(client, folder, rows, features, chunk_rows)
    X, y = example.read_dataset(folder, rows, features, chunk_rows)
    loaded = [np.concatenate([np.load(f"{folder}/{name}/{i}.npy") for i in range(4)])
              for name in ("X", "y")]
    return X, y, *loaded


def parameters(example, features):
    rng = np.random.default_rng(3)
    return {"logistic": (example.logistic_loss, rng.normal(0.0, 0.5, features)),
            "mlp": (example.mlp_loss, example.mlp_init(features, 3))}


def addresses(client):
    return sorted(client.scheduler_info()["workers"])


def test_example_trains_both_models_out_of_core_without_losing_a_worker(example, cluster,
                                                                          client):
    before = addresses(client)
    report = example.main(["--address", cluster.scheduler_address, "--rows", "1000000",
                           "--features", "32", "--hidden", "4", "--chunk-rows", "25000",
                           "--steps", "3", "--quiet"])
    assert report["memory_limit"] == MEMORY_LIMIT
    assert report["data_bytes"] > 1.25 * MEMORY_LIMIT
    for name in ("logistic", "mlp"):
        losses = report["losses"][name]
        assert len(losses) == 3 and all(np.isfinite(losses)), name
        assert all(b < a for a, b in zip(losses, losses[1:])), (name, losses)
        assert losses[-1] < 0.95 * losses[0], (name, losses)
    assert len(before) == 2 and addresses(client) == before
    assert sorted(report["workers_before"]) == sorted(report["workers_after"]) == before


@pytest.mark.parametrize("model", ["logistic", "mlp"])
def test_gradients_on_the_cluster_equal_the_numpy_backend(example, client, data, model):
    X, y, X_np, y_np = data
    loss, params = parameters(example, X_np.shape[1])[model]
    value, grads = srcgrad.value_and_grad(loss, backend="dask", strict=True)(params, X, y)
    expected_value, expected = srcgrad.value_and_grad(loss, strict=True)(params, X_np, y_np)
    leaves = list(grads.values()) if isinstance(grads, dict) else [grads]
    with distributed.get_task_stream(client) as stream:
        got_value, *got = dask.compute(value, *leaves)
    expected = list(expected.values()) if isinstance(expected, dict) else [expected]
    np.testing.assert_allclose(got_value, expected_value, rtol=1e-12)
    for g, e in zip(got, expected, strict=True):
        assert g.shape == e.shape
        np.testing.assert_allclose(g, e, rtol=1e-10, atol=1e-14)
    # One graph, run on the workers: each chunk of X and y is read once and the forward
    # (X @ w per chunk) runs once, shared by the value and every gradient.
    tasks = collections.Counter(key_split(task["key"]) for task in stream.data)
    assert {task["worker"] for task in stream.data} <= set(addresses(client))
    assert tasks["load"] == 2 * X.numblocks[0]
    if model == "mlp":
        assert tasks["tanh"] == X.numblocks[0]


def test_results_are_lazy_until_computed(example, client, data):
    X, y, X_np, y_np = data
    loss, params = parameters(example, X_np.shape[1])["mlp"]
    step = srcgrad.value_and_grad(loss, backend="dask", strict=True)
    with distributed.get_task_stream(client) as stream:
        value, grads = step(params, X, y)
    assert stream.data == []
    assert isinstance(value, da.Array) and value.shape == ()
    for name, g in grads.items():
        assert isinstance(g, da.Array) and g.shape == np.shape(params[name]), name


def test_auto_picks_dask_for_dask_arrays(example, client, data):
    X, y, X_np, y_np = data
    loss, w = parameters(example, X_np.shape[1])["logistic"]
    value, g = srcgrad.value_and_grad(loss, backend="auto", strict=True)(w, X, y)
    assert isinstance(value, da.Array) and isinstance(g, da.Array)
    expected_value, expected = srcgrad.value_and_grad(loss, strict=True)(w, X_np, y_np)
    got_value, got = dask.compute(value, g)
    np.testing.assert_allclose(got_value, expected_value, rtol=1e-12)
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-14)


SWEEP_EVERY = 13
"""On the cluster, every 13th case of the parity catalogue (rule table, control flow, lists,
pytrees, control flow on Dask values): the in-process sweep (tests/sweeps/test_dask_parity.py) runs
them all; here their graphs run on the workers."""


def test_a_sample_of_the_parity_sweep_runs_on_the_cluster(client, tmp_path):
    from dask_cases import DASK_CASES, arguments, dask_mismatch
    from parity_cases import CATALOGUE, run
    names = [n for n in {**CATALOGUE, **DASK_CASES} if not n.startswith("random:")]
    ran = 0
    for name in names[::SWEEP_EVERY]:
        case = {**CATALOGUE, **DASK_CASES}[name](tmp_path)
        want = run(case, "numpy")
        if want.error is not None:
            continue
        try:
            got = srcgrad.grad(case.fn, wrt=case.wrt, strict=True, backend="dask")(
                *arguments(case, "dask"))
        except srcgrad.CompileError as exc:
            assert not str(exc).startswith("internal error"), (name, exc)
            continue
        except Exception as exc:  # noqa: BLE001 - allowed if the function raises it too
            with pytest.raises(type(exc)):
                case.fn(*arguments(case, "dask"))
            continue
        (computed,) = dask.compute(got)                 # on the workers
        assert dask_mismatch(computed, want.results[0]) is None, name
        ran += 1
    assert ran >= 20, ran
