"""Scale-out with sktime's own engines: the forecaster is shipped to joblib (loky) and dask
workers by ``evaluate`` and ``ForecastingGridSearchCV``, and scores there as it does in-process.

Each backend re-creates the forecaster from its parameters (or unpickles it) in another
process; with the same ``random_state`` every fold must give the same score to 1e-6.
"""

from __future__ import annotations

import contextlib

import numpy as np
import pandas as pd
import pytest
from sktime.forecasting.model_evaluation import evaluate
from sktime.forecasting.model_selection import ForecastingGridSearchCV
from sktime.performance_metrics.forecasting import MeanAbsoluteError, MeanSquaredError
from sktime.split import ExpandingWindowSplitter
from support import noisy_sine, sktime_forecaster, sktime_series

pytestmark = pytest.mark.timeout(600)

SCORES = ["test_MeanSquaredError", "test_MeanAbsoluteError"]


def _series() -> pd.Series:
    return sktime_series(noisy_sine(96, period=12, noise=0.1, seed=3).values()[:, 0])


def _splitter() -> ExpandingWindowSplitter:
    return ExpandingWindowSplitter(initial_window=60, step_length=12, fh=[1, 2, 3])


@pytest.fixture(scope="module")
def dask_client():
    """A one-worker ``LocalCluster`` (another process, one thread) started and closed
    here: the ``"dask"`` backend computes on the active client."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        yield client
    assert client.status == "closed" and cluster.status.name == "closed"


@contextlib.contextmanager
def _on_workers_of(backend: str, request):
    """Yield a check that the work of the block ran in other processes: the dask cluster's
    task stream holds tasks, or (loky) this process has loky worker children."""
    if backend == "dask":
        from distributed import get_task_stream

        with get_task_stream(request.getfixturevalue("dask_client")) as stream:
            yield lambda: len(stream.data) > 0
        return
    import psutil

    yield lambda: any("loky" in " ".join(child.cmdline())
                      for child in psutil.Process().children(recursive=True))


def _backend_params(backend: str | None) -> dict | None:
    return {"n_jobs": 2} if backend == "loky" else None


def _evaluate(backend: str | None) -> pd.DataFrame:
    return evaluate(sktime_forecaster(patcher="learned"), _splitter(), _series(),
                    scoring=[MeanSquaredError(), MeanAbsoluteError()], backend=backend,
                    backend_params=_backend_params(backend))


def _grid_search(backend: str | None) -> ForecastingGridSearchCV:
    search = ForecastingGridSearchCV(
        sktime_forecaster(patcher="learned"), cv=_splitter(),
        param_grid={"compression_rate": [2, 3]}, scoring=MeanSquaredError(),
        backend=backend, backend_params=_backend_params(backend))
    return search.fit(_series(), fh=[1, 2, 3])


@pytest.fixture(scope="module")
def in_process_scores() -> pd.DataFrame:
    scores = _evaluate(None)
    assert len(scores) == 3 and np.isfinite(scores[SCORES].to_numpy()).all()
    return scores


@pytest.fixture(scope="module")
def in_process_search() -> ForecastingGridSearchCV:
    return _grid_search(None)


@pytest.mark.parametrize("backend", ["loky", "dask"])
def test_evaluate_on_workers_gives_the_in_process_fold_scores(backend, in_process_scores,
                                                              request):
    with _on_workers_of(backend, request) as ran_on_workers:
        scores = _evaluate(backend)
    assert ran_on_workers()
    np.testing.assert_allclose(scores[SCORES].to_numpy(), in_process_scores[SCORES].to_numpy(),
                               rtol=0, atol=1e-6)
    pd.testing.assert_index_equal(scores.index, in_process_scores.index)


@pytest.mark.parametrize("backend", ["loky", "dask"])
def test_grid_search_on_workers_gives_the_in_process_scores_and_choice(backend,
                                                                       in_process_search,
                                                                       request):
    with _on_workers_of(backend, request) as ran_on_workers:
        search = _grid_search(backend)
    assert ran_on_workers()
    column = "mean_test_MeanSquaredError"
    expected = in_process_search.cv_results_
    assert len(expected) == 2  # both parameter values were scored
    np.testing.assert_allclose(search.cv_results_[column].to_numpy(),
                               expected[column].to_numpy(), rtol=0, atol=1e-6)
    assert search.best_params_ == in_process_search.best_params_
    # the refitted best forecaster is the in-process one: the same forecast
    np.testing.assert_allclose(search.predict().to_numpy(),
                               in_process_search.predict().to_numpy(),
                               rtol=0, atol=1e-6)
