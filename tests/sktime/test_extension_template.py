"""ReinPatchForecaster is built by sktime's extension template.

Only sktime's extension points are overridden (no public method of ``BaseForecaster`` but the
four probabilistic ones, which only add a check before sktime's own method runs), sktime's
data attributes (``_y``, ``_X``) are sktime's alone, the per-instance tag is set in
``__dynamic_tags__``, and each check of the sktime face has one message.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from support import sine_values, sktime_series
from support import sktime_forecaster as tiny
from sktime.forecasting.base import BaseForecaster
from sktime.utils._testing.hierarchical import _make_hierarchical

from reinpatch_forecast import ReinPatchForecaster

#: The public methods of sktime's forecaster that the template says not to override; a class
#: method that the template asks for (``get_test_params``) is the exception.
SKTIME_PUBLIC = sorted(
    name for name in dir(BaseForecaster)
    if not name.startswith("_") and callable(getattr(BaseForecaster, name))
    and name != "get_test_params"
)


def test_the_listed_public_methods_are_sktime_methods():
    for name in ("fit", "predict", "update", "pretrain", "predict_quantiles",
                 "predict_interval", "predict_var", "predict_proba", "fit_predict",
                 "update_predict", "get_fitted_params", "set_tags", "clone", "reset"):
        assert name in SKTIME_PUBLIC


#: The public methods that check for a likelihood before sktime's own method runs: sktime 1.2
#: raises its generic error in them before any extension point.
LIKELIHOOD_CHECKS = ("predict_interval", "predict_quantiles", "predict_var", "predict_proba")


@pytest.mark.parametrize("name", SKTIME_PUBLIC)
def test_no_public_sktime_method_is_overridden(name):
    if name in LIKELIHOOD_CHECKS:
        assert name in ReinPatchForecaster.__dict__  # the check; its result is tested below
    else:
        assert name not in ReinPatchForecaster.__dict__


@pytest.fixture(scope="module")
def probabilistic() -> ReinPatchForecaster:
    y = sktime_series(sine_values(60))
    return tiny(likelihood="gaussian").fit(y, fh=[1, 2])


@pytest.mark.parametrize("name", LIKELIHOOD_CHECKS)
def test_the_likelihood_checks_return_sktimes_result(probabilistic, name):
    ours = getattr(probabilistic, name)()
    sktimes = getattr(BaseForecaster, name)(probabilistic)
    if name == "predict_proba":
        ours, sktimes = ours.mean(), sktimes.mean()
    pd.testing.assert_frame_equal(ours, sktimes)


@pytest.mark.parametrize("name, what", [
    ("predict_interval", "prediction intervals"), ("predict_quantiles", "quantile predictions"),
    ("predict_var", "variance predictions"), ("predict_proba", "fully probabilistic predictions"),
])
def test_probabilistic_methods_without_a_likelihood_say_what_to_pass(name, what):
    message = (rf"ReinPatchForecaster with likelihood=None does not have the capability to "
               rf"return {what}: .* Pass a likelihood and fit again: likelihood='quantile' .* "
               r"or likelihood='gaussian'")
    unfitted = tiny()
    with pytest.raises(NotImplementedError, match=message):  # before fit: raised first
        getattr(unfitted, name)(fh=[1, 2])
    fitted = tiny().fit(sktime_series(sine_values(60)), fh=[1, 2])
    with pytest.raises(NotImplementedError, match=message):
        getattr(fitted, name)()
    assert not fitted.get_tag("capability:pred_int")
    assert ReinPatchForecaster.get_class_tag("capability:pred_int")


#: sktime's extension points a forecaster implements (the template's "implement" list), the
#: configuration hooks of its base classes, and ``_check_X_y``: sktime 1.2 has no extension point
#: before its input checks (see the forecaster).
EXTENSION_POINTS = {
    "_fit", "_predict", "_update", "_predict_quantiles", "_predict_interval", "_predict_var",
    "_predict_proba", "_pretrain", "_pretrain_update", "_get_fitted_params", "get_test_params",
    "__post_init__", "__dynamic_tags__", "_tags", "_check_X_y",
}


def test_only_extension_points_override_the_base_classes():
    bases = [cls for cls in ReinPatchForecaster.__mro__[1:] if cls is not object]
    overridden = {name for name in ReinPatchForecaster.__dict__
                  if name not in ("__module__", "__doc__", "__init__", "__dict__", "__weakref__")
                  and any(name in cls.__dict__ for cls in bases)}
    allowed = EXTENSION_POINTS | set(LIKELIHOOD_CHECKS)
    assert overridden <= allowed, overridden - allowed


def test_forecasts_do_not_depend_on_sktimes_copy_of_the_data():
    """sktime keeps ``_y`` itself (config ``remember_data``); switched off, ``_y`` stays its
    placeholder and the forecasts are the same: the forecaster reads its own ``_cur_y``."""
    y = sktime_series(sine_values(60))
    remembering = tiny().fit(y.iloc[:50], fh=[1, 2]).update(y.iloc[50:], update_params=False)
    assert len(remembering._y) == 60
    plain = tiny().set_config(remember_data=False)
    plain.fit(y.iloc[:50], fh=[1, 2]).update(y.iloc[50:], update_params=False)
    assert plain._y is None and plain._X is None
    pd.testing.assert_series_equal(plain.predict(), remembering.predict())
    assert plain.predict().index[0] == y.index[-1] + 1


def test_pred_int_tag_is_dynamic():
    assert ReinPatchForecaster.get_class_tag("capability:pred_int")
    assert not tiny().get_tag("capability:pred_int")
    probabilistic = tiny(likelihood="gaussian")
    assert probabilistic.get_tag("capability:pred_int")
    assert not probabilistic.clone().set_params(likelihood=None).get_tag("capability:pred_int")
    assert tiny().set_params(likelihood="quantile").get_tag("capability:pred_int")


def _panel(length: int = 40) -> pd.DataFrame:
    return _make_hierarchical(hierarchy_levels=(2,), min_timepoints=length,
                              max_timepoints=length, n_columns=1, random_state=0)


def test_more_pretraining_with_a_longer_fh_says_the_one_message():
    forecaster = tiny()
    forecaster.pretrain(_panel(), fh=[1, 2, 3])
    with pytest.raises(ValueError, match=r"fh reaches 5 steps ahead, but the pretrained network "
                       r"forecasts 3 steps \(the largest fh step given to pretrain\)\. Use fh "
                       r"steps up to 3, or pretrain a new forecaster with a longer fh\."):
        forecaster.pretrain(_panel(), fh=[1, 2, 3, 4, 5])


def test_non_numeric_y_is_explained_in_fit_predict_and_update():
    y = sktime_series(sine_values(60)).to_frame()
    text = y.assign(label=["a", "b"] * 30)
    with pytest.raises(TypeError, match=r"y has non-numeric column\(s\) 'label' \(str\)\. "
                       r"Every column must hold numbers \(booleans count as 0 / 1\)"):
        tiny().fit_predict(text, fh=[1, 2])
    forecaster = tiny().fit(y.iloc[:50], fh=[1, 2])
    with pytest.raises(TypeError, match=r"y has non-numeric column\(s\) 'label' \(str\)\. "
                       r"Every column must hold numbers \(booleans count as 0 / 1\)"):
        forecaster.update(text.iloc[50:])
    assert np.isfinite(forecaster.predict().to_numpy()).all()
