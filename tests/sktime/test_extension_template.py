"""ReinPatchForecaster is built by sktime's extension template.

Only sktime's private extension points are overridden (no public method of ``BaseForecaster``),
sktime's data attributes (``_y``, ``_X``) stay its placeholders, the per-instance tag is set in
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


@pytest.mark.parametrize("name", SKTIME_PUBLIC)
def test_no_public_sktime_method_is_overridden(name):
    assert name not in ReinPatchForecaster.__dict__


def test_sktime_data_attributes_stay_placeholders():
    """``_y``/``_X`` are sktime's None placeholders (remember_data is off): the forecaster keeps
    its own data."""
    forecaster = tiny()
    assert forecaster._y is None and forecaster._X is None
    y = sktime_series(sine_values(60))
    forecaster.fit(y.iloc[:50], fh=[1, 2, 3])
    forecaster.update(y.iloc[50:], update_params=False)
    assert forecaster._y is None and forecaster._X is None
    assert len(forecaster.predict()) == 3


def test_remember_data_switched_on_later_still_works():
    """sktime keeps its own copy then; the forecaster's forecasts do not depend on it."""
    y = sktime_series(sine_values(60))
    plain = tiny().fit(y.iloc[:50], fh=[1, 2]).update(y.iloc[50:], update_params=False)
    remembering = tiny().set_config(remember_data=True)
    remembering.fit(y.iloc[:50], fh=[1, 2]).update(y.iloc[50:], update_params=False)
    pd.testing.assert_series_equal(plain.predict(), remembering.predict())
    assert len(remembering._y) == 60


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
