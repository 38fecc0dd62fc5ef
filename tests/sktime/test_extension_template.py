"""ReinPatchForecaster is built by sktime's extension template.

Only sktime's extension points are overridden (no public method of ``BaseForecaster``), sktime's
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


@pytest.mark.parametrize("name", SKTIME_PUBLIC)
def test_no_public_sktime_method_is_overridden(name):
    assert name not in ReinPatchForecaster.__dict__


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
    assert overridden <= EXTENSION_POINTS, overridden - EXTENSION_POINTS


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
