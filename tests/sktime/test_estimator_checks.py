"""sktime's API conformance suite, one pytest item per check."""

from __future__ import annotations

from sktime.utils.estimator_checks import check_estimator, parametrize_with_checks

from reinpatch_forecast import ReinPatchForecaster


@parametrize_with_checks(ReinPatchForecaster)
def test_sktime_api_conformance(obj, test_name):
    """Every fixture of every sktime check passes; failures are raised, not collected."""
    check_estimator(obj, tests_to_run=test_name, raise_exceptions=True, verbose=False)
