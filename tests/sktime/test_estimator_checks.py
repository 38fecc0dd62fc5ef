"""sktime's API conformance suite, one pytest item per check.

Every check runs on every test instance of ``get_test_params``, with two groups of fixtures left
out (``check_estimator``'s ``fixtures_to_exclude``), each a repeat of kept fixtures that make the
same calls on the forecaster:

- ``test_update_predict_predicted_index`` with ``initial_window=5``: sktime's splitter starts
  later on the same test series; ``initial_window=1`` makes the same ``update``/``predict``
  calls, and more of them.
- ``test_predict_time_index`` on the point forecaster (instance 1): the probabilistic one
  (instance 0) fits and predicts on every index and horizon type as well, and also checks the
  index of its intervals and quantiles. (Both instances run ``test_predict_time_index_with_X``:
  they take ``X`` as different covariates.)
"""

from __future__ import annotations

import itertools

from sktime.forecasting.tests._config import TEST_FHS, TEST_OOS_FHS, TEST_STEP_LENGTHS_INT
from sktime.forecasting.tests.test_all_forecasters import index_fh_comb_names
from sktime.utils.estimator_checks import check_estimator, parametrize_with_checks

from reinpatch_forecast import ReinPatchForecaster

COLUMNS = ("y:1cols", "y:2cols")
UPDATE_MODES = ("update_params=True",
                *(f"update_params=False-step={step}" for step in TEST_STEP_LENGTHS_INT))


def _update_predict_fixtures(initial_window: int) -> set[str]:
    """Fixture names of ``test_update_predict_predicted_index`` at one ``initial_window``
    (0 or 1: the index into sktime's ``TEST_WINDOW_LENGTHS_INT = [1, 5]``)."""
    return {f"test_update_predict_predicted_index[ReinPatchForecaster-{instance}-{columns}-"
            f"{mode}-{initial_window}-fh={fh}]"
            for instance, columns, mode, fh in itertools.product(
                (0, 1), COLUMNS, UPDATE_MODES, TEST_OOS_FHS)}


def _time_index_fixtures(instance: int) -> set[str]:
    """Fixture names of ``test_predict_time_index`` for one test instance."""
    return {f"test_predict_time_index[ReinPatchForecaster-{instance}-{columns}-fh={fh}-{comb}]"
            for columns, fh, comb in itertools.product(COLUMNS, TEST_FHS, index_fh_comb_names)}


LEFT_OUT = _update_predict_fixtures(1) | _time_index_fixtures(1)
#: Kept fixtures named the same way: they must be among the ones sktime runs, or the names above
#: no longer match sktime's and nothing is left out.
KEPT = {"test_update_predict_predicted_index": _update_predict_fixtures(0),
        "test_predict_time_index": _time_index_fixtures(0)}


@parametrize_with_checks(ReinPatchForecaster)
def test_sktime_api_conformance(obj, test_name):
    """Every kept fixture of every sktime check passes; failures are raised, not collected."""
    results = check_estimator(obj, tests_to_run=test_name, fixtures_to_exclude=sorted(LEFT_OUT),
                              raise_exceptions=True, verbose=False)
    assert results and not LEFT_OUT & set(results)
    assert KEPT.get(test_name, set()) <= set(results)
