"""Integration tests of :class:`~reinpatch_forecast.sktime.ReinPatchForecaster`.

sktime's conformance suite runs in ``test_estimator_checks.py``; here: composition with sktime
tools (pipelines, tuning, evaluation), update, probabilistic forecasts, panels, pretraining,
persistence, reproducibility and the errors a user can cause.
"""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pandas as pd
import pytest
import torch
from sktime.datasets import load_airline
from sktime.forecasting.base import ForecastingHorizon
from sktime.forecasting.compose import TransformedTargetForecaster
from sktime.forecasting.model_evaluation import evaluate
from sktime.forecasting.model_selection import ForecastingGridSearchCV
from sktime.performance_metrics.forecasting import MeanAbsoluteError
from sktime.split import ExpandingWindowSplitter
from sktime.transformations.series.detrend import Deseasonalizer
from sktime.transformations.series.difference import Differencer
from sktime.utils._testing.hierarchical import _make_hierarchical

from reinpatch_forecast import ReinPatchForecaster
from reinpatch_forecast.darts import WeightEMA

TINY = dict(
    input_chunk_length=12,
    compression_rate=3,
    d_model=8,
    n_heads=1,
    n_layers=1,
    n_epochs=2,
    batch_size=64,
    resample_points=4,
)


def tiny(**params) -> ReinPatchForecaster:
    """A tiny seeded forecaster (trains in a fraction of a second)."""
    return ReinPatchForecaster(**{**TINY, "random_state": 0, **params})


@pytest.fixture(scope="module")
def airline() -> pd.Series:
    return load_airline()


def _weights(forecaster: ReinPatchForecaster) -> list[torch.Tensor]:
    module = forecaster.get_fitted_params()["model"].model
    return [p.detach().clone() for p in module.parameters()]


def _panel(n_instances: int = 3, n_timepoints: int = 40, n_columns: int = 2) -> pd.DataFrame:
    return _make_hierarchical(
        hierarchy_levels=(n_instances,),
        min_timepoints=n_timepoints,
        max_timepoints=n_timepoints,
        n_columns=n_columns,
        random_state=1,
    )


# -- composition with sktime tools ------------------------------------------------------------
@pytest.mark.parametrize(
    "transformer", [Deseasonalizer(sp=12, model="multiplicative"), Differencer(lags=1)]
)
def test_transformed_target_pipeline(airline, transformer):
    """Deseasonalised or differenced target, forecast, and back to the original scale."""
    pipe = TransformedTargetForecaster([("transform", transformer), ("forecast", tiny())])
    pipe.fit(airline, fh=[1, 2, 3])
    y_pred = pipe.predict()
    expected = ForecastingHorizon([1, 2, 3]).to_absolute_index(airline.index[-1:])
    assert y_pred.index.equals(expected)
    assert np.isfinite(y_pred.to_numpy()).all()
    assert y_pred.between(200, 900).all()  # back on the passengers scale


def test_grid_search_over_compression_rate(airline):
    cv = ExpandingWindowSplitter(fh=[1, 2, 3], initial_window=108, step_length=16)
    search = ForecastingGridSearchCV(
        tiny(n_epochs=1), cv=cv, param_grid={"compression_rate": [2, 4]}, backend=None
    )
    search.fit(airline, fh=[1, 2, 3])
    assert search.best_params_["compression_rate"] in (2, 4)
    assert len(search.cv_results_) == 2
    assert search.best_forecaster_.compression_rate == search.best_params_["compression_rate"]
    assert len(search.predict()) == 3


@pytest.mark.parametrize("strategy", ["refit", "update", "no-update_params"])
def test_evaluate_with_expanding_window(airline, strategy):
    cv = ExpandingWindowSplitter(fh=[1, 2, 3], initial_window=108, step_length=12)
    n_folds = cv.get_n_splits(airline)
    results = evaluate(
        tiny(n_epochs=1), cv, airline, strategy=strategy, scoring=MeanAbsoluteError()
    )
    assert len(results) == n_folds == 3
    assert np.isfinite(results["test_MeanAbsoluteError"]).all()


# -- update ------------------------------------------------------------------------------------
def test_update_without_params_moves_the_context_only(airline):
    """The forecast starts after the new data, depends on it, and the weights stay."""
    y_train, y_new = airline.iloc[:-6], airline.iloc[-6:]
    forecaster = tiny().fit(y_train, fh=[1, 2, 3])
    before = _weights(forecaster)
    first = forecaster.predict()

    shocked = copy.deepcopy(forecaster)
    forecaster.update(y_new, update_params=False)
    shocked.update(y_new * 2, update_params=False)
    moved, moved_shocked = forecaster.predict(), shocked.predict()

    assert moved.index[0] == y_new.index[-1] + 1
    assert not np.allclose(moved.to_numpy(), first.to_numpy())
    assert not np.allclose(moved.to_numpy(), moved_shocked.to_numpy())
    assert all(torch.equal(a, b) for a, b in zip(before, _weights(forecaster)))


def test_update_with_params_continues_training(airline):
    forecaster = tiny().fit(airline.iloc[:-6], fh=[1, 2])
    before = _weights(forecaster)
    forecaster.update(airline.iloc[-6:], update_params=True)
    after = _weights(forecaster)
    assert not all(torch.equal(a, b) for a, b in zip(before, after))
    assert forecaster.predict().index[0] == airline.index[-1] + 1


# -- probabilistic forecasts -------------------------------------------------------------------
@pytest.mark.parametrize(
    "likelihood, quantiles", [("quantile", (0.05, 0.25, 0.5, 0.75, 0.95)), ("gaussian", None)]
)
def test_predict_quantiles_monotone_and_reproducible(airline, likelihood, quantiles):
    forecaster = tiny(likelihood=likelihood, quantiles=quantiles, num_samples=100)
    assert forecaster.get_tag("capability:pred_int")
    forecaster.fit(airline, fh=[1, 2, 5])
    alpha = [0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95]
    q = forecaster.predict_quantiles(alpha=alpha)

    assert list(q.columns) == [("Number of airline passengers", a) for a in alpha]
    assert (np.diff(q.to_numpy(), axis=1) >= 0).all()
    assert (q.iloc[:, 0] < q.iloc[:, -1]).all()  # a spread, not a point
    pd.testing.assert_frame_equal(q, forecaster.predict_quantiles(alpha=alpha))

    intervals = forecaster.predict_interval(coverage=[0.5, 0.9])
    lower = intervals.xs("lower", axis=1, level=2).to_numpy()
    upper = intervals.xs("upper", axis=1, level=2).to_numpy()
    assert (lower <= upper).all()

    y_pred = forecaster.predict()
    assert y_pred.between(q.iloc[:, 0], q.iloc[:, -1]).all()


def test_point_forecaster_has_no_intervals(airline):
    forecaster = tiny()
    assert not forecaster.get_tag("capability:pred_int")
    assert ReinPatchForecaster.get_class_tag("capability:pred_int")
    forecaster.fit(airline, fh=[1, 2])
    with pytest.raises(NotImplementedError, match="likelihood='quantile'"):
        forecaster.predict_quantiles()


def test_forecasts_are_float64_for_float32_and_float64_y(airline):
    """pandas users get float64 from every predict method, whatever the dtype of ``y``."""
    results = {}
    for dtype in (np.float32, np.float64):
        forecaster = tiny(likelihood="quantile").fit(airline.astype(dtype), fh=[1, 2])
        results[dtype] = [forecaster.predict(), forecaster.predict_quantiles(),
                          forecaster.predict_interval(), forecaster.predict_var()]
        assert results[dtype][0].dtype == np.float64
        for frame in results[dtype][1:]:
            assert (frame.dtypes == np.float64).all()
    for ours32, ours64 in zip(results[np.float32], results[np.float64]):
        np.testing.assert_array_equal(np.asarray(ours32), np.asarray(ours64))


# -- panels and series handling ------------------------------------------------------------------
def test_panel_is_one_global_model():
    panel = _panel()
    forecaster = tiny().fit(panel, fh=[1, 2, 3])
    y_pred = forecaster.predict()

    assert not forecaster._is_vectorized  # one model, not one per instance
    assert forecaster.get_fitted_params()["n_series"] == 3 * 2
    assert list(y_pred.columns) == list(panel.columns)
    assert y_pred.index.names == panel.index.names
    last = panel.index.get_level_values(-1).max()
    times = pd.date_range(last, periods=4, freq="D")[1:]
    expected = pd.MultiIndex.from_product([["h0_0", "h0_1", "h0_2"], times])
    assert list(y_pred.index) == list(expected)


def test_hierarchical_and_unequal_length_panel():
    hierarchy = _make_hierarchical(
        hierarchy_levels=(2, 2),
        min_timepoints=25,
        max_timepoints=40,
        n_columns=1,
        index_type="range",
        same_cutoff=False,
        random_state=3,
    )
    forecaster = tiny().fit(hierarchy, fh=[1, 2])
    y_pred = forecaster.predict()
    # a relative fh counts from the end of each series, as sktime's own per-instance loop does
    expected = ForecastingHorizon([1, 2]).get_expected_pred_idx(y=hierarchy)
    assert y_pred.index.equals(expected)


def test_non_contiguous_fh_selects_the_right_steps():
    """fh=[2, 5] returns steps 2 and 5 of the same network's forecast of steps 1..5."""
    panel = _panel(n_instances=4, n_timepoints=30, n_columns=1)
    series = _panel(n_instances=1, n_timepoints=30, n_columns=1).droplevel(0)
    pretrained = tiny().pretrain(panel, fh=[1, 2, 3, 4, 5])
    full = pretrained.clone().fit(series, fh=[1, 2, 3, 4, 5]).predict()
    sparse = pretrained.clone().fit(series, fh=[2, 5]).predict()
    np.testing.assert_allclose(sparse.to_numpy(), full.iloc[[1, 4]].to_numpy(), rtol=1e-6)


@pytest.mark.parametrize("columns", [["sales", "price"], [0, 1]])
def test_columns_and_index_come_back(columns):
    index = pd.period_range("2001-01", periods=30, freq="M")
    rng = np.random.default_rng(0)
    y = pd.DataFrame(rng.normal(size=(30, 2)).cumsum(axis=0), index=index, columns=columns)
    y_pred = tiny().fit(y, fh=[1, 3]).predict()
    assert list(y_pred.columns) == columns
    assert list(y_pred.index) == [pd.Period("2003-07", "M"), pd.Period("2003-09", "M")]


def test_series_in_series_out(airline):
    y_pred = tiny().fit(airline, fh=[1, 2]).predict()
    assert isinstance(y_pred, pd.Series)
    assert y_pred.name == airline.name


# -- pretraining ----------------------------------------------------------------------------------
def test_pretrain_then_fit_fine_tunes_a_copy():
    panel = _panel(n_instances=4, n_timepoints=30, n_columns=1)
    y = _panel(n_instances=1, n_timepoints=30, n_columns=3).droplevel(0)  # 3 columns: still fine
    forecaster = tiny().pretrain(panel, fh=[1, 2, 3])
    assert forecaster.state == "pretrained"
    pretrained_weights = [p.detach().clone() for p in
                          forecaster.pretrained_model_.model.model.parameters()]

    forecaster.fit(y, fh=[1, 2, 3])
    y_pred = forecaster.predict()
    assert y_pred.shape == (3, 3)
    assert "pretrained_model_" in forecaster.get_pretrained_params()
    assert "model" in forecaster.get_fitted_params()
    # fit fine-tuned a copy: the pretrained weights are untouched, the fitted ones moved
    unchanged = forecaster.pretrained_model_.model.model.parameters()
    assert all(torch.equal(a, b) for a, b in zip(pretrained_weights, unchanged))
    assert not all(torch.equal(a, b) for a, b in zip(pretrained_weights, _weights(forecaster)))
    # from scratch, the same seed gives another model
    scratch = tiny().fit(y, fh=[1, 2, 3]).predict()
    assert not np.allclose(scratch.to_numpy(), y_pred.to_numpy())


# -- persistence and reproducibility -----------------------------------------------------------
@pytest.mark.parametrize("likelihood", [None, "quantile"])
def test_pickle_and_deepcopy_keep_the_trained_weights(airline, likelihood):
    forecaster = tiny(likelihood=likelihood, num_samples=50).fit(airline, fh=[1, 2, 3])
    y_pred = forecaster.predict()
    for twin in (pickle.loads(pickle.dumps(forecaster)), copy.deepcopy(forecaster)):
        assert twin.get_fitted_params()["model"].model is not None
        pd.testing.assert_series_equal(twin.predict(), y_pred)
        if likelihood is not None:
            pd.testing.assert_frame_equal(
                twin.predict_quantiles(alpha=[0.1, 0.9]),
                forecaster.predict_quantiles(alpha=[0.1, 0.9]),
            )


def test_pretrained_state_survives_pickle_and_clone():
    panel = _panel(n_instances=3, n_timepoints=30, n_columns=1)
    y = panel.loc["h0_0"]
    forecaster = tiny().pretrain(panel, fh=[1, 2])
    reference = copy.deepcopy(forecaster).fit(y, fh=[1, 2]).predict()
    for twin in (pickle.loads(pickle.dumps(forecaster)), forecaster.clone()):
        assert twin.state == "pretrained"
        pd.testing.assert_frame_equal(twin.fit(y, fh=[1, 2]).predict(), reference)


def test_same_random_state_same_forecast(airline):
    first = tiny(random_state=7, patcher="learned", group_size=2).fit(airline, fh=[1, 2, 3])
    second = tiny(random_state=7, patcher="learned", group_size=2).fit(airline, fh=[1, 2, 3])
    other = tiny(random_state=8, patcher="learned", group_size=2).fit(airline, fh=[1, 2, 3])
    pd.testing.assert_series_equal(first.predict(), second.predict())
    assert not np.allclose(first.predict().to_numpy(), other.predict().to_numpy())


def test_fitted_params_expose_the_darts_model(airline):
    from reinpatch_forecast import ReinPatchModel

    forecaster = tiny().fit(airline, fh=[1, 2, 3])
    params = forecaster.get_fitted_params()
    assert isinstance(params["model"], ReinPatchModel)
    assert params["horizon"] == 3
    assert params["model"].output_chunk_length == 3
    boundaries = params["model"].patch_boundaries()  # of the training series' last window
    assert boundaries.n_patches == 4  # ceil(12 / 3)


# -- errors ----------------------------------------------------------------------------------------
def test_error_horizon_longer_than_fitted():
    panel = _panel(n_instances=3, n_timepoints=30, n_columns=1)
    forecaster = tiny().pretrain(panel, fh=[1, 2, 3])
    with pytest.raises(ValueError, match="pretrained network forecasts 3 steps"):
        forecaster.fit(panel.loc["h0_0"], fh=[1, 2, 3, 4, 5])


def test_error_fh_in_predict_differs_from_fit(airline):
    forecaster = tiny().fit(airline, fh=[1, 2])
    with pytest.raises(ValueError, match="different forecasting horizon"):
        forecaster.predict(fh=[1, 2, 3])


def test_error_series_shorter_than_lookback_plus_horizon(airline):
    with pytest.raises(ValueError, match=r"has 14 time steps, but training needs at least 15"):
        tiny().fit(airline.iloc[:14], fh=[1, 2, 3])


def test_error_missing_values(airline):
    y = airline.copy()
    y.iloc[50] = np.nan
    with pytest.raises(ValueError, match="missing"):
        tiny().fit(y, fh=[1, 2])


def test_error_pretrain_without_fh():
    with pytest.raises(ValueError, match="pretrain needs fh"):
        tiny().pretrain(_panel(n_instances=2, n_timepoints=30, n_columns=1))


@pytest.mark.parametrize(
    "params, match",
    [
        ({"likelihood": "poisson"}, "likelihood must be"),
        ({"quantiles": (0.1, 0.9)}, "only with likelihood='quantile'"),
        ({"likelihood": "quantile", "quantiles": (0.0, 0.5)}, "strictly between 0 and 1"),
        ({"patcher": "learned", "group_size": 0}, "group_size must be a positive integer"),
        ({"kl_coef": -1.0}, "kl_coef must be a finite number >= 0"),
    ],
)
def test_error_invalid_parameters_at_construction(params, match):
    with pytest.raises(ValueError, match=match):
        ReinPatchForecaster(**params)


def test_a_default_fit_runs_its_epochs_at_a_constant_rate_and_keeps_the_weight_average(
        airline):
    """sktime's fit has no validation data: it runs ``n_epochs`` at darts' constant rate, and
    the network it predicts with is the average of its weights, not the last step's."""
    sizes = {k: v for k, v in TINY.items() if k != "n_epochs"}
    forecaster = ReinPatchForecaster(**sizes, random_state=0).fit(airline, fh=[1, 2])
    model = forecaster.get_fitted_params()["model"]
    assert model.trainer.current_epoch == forecaster.n_epochs
    assert model.trainer.lr_scheduler_configs == []
    (average,) = [c for c in model.trainer.callbacks if isinstance(c, WeightEMA)]
    assert average.decay == forecaster.ema_decay
    plain = ReinPatchForecaster(**sizes, random_state=0, ema_decay=None).fit(airline, fh=[1, 2])
    averaged, last = (f.get_fitted_params()["model"].model.state_dict()
                      for f in (forecaster, plain))
    assert any(not torch.equal(averaged[name], last[name]) for name in averaged)


def test_removed_grpg_options_are_not_parameters():
    params = ReinPatchForecaster().get_params()
    for removed in ("backbone_draws", "rollout_fraction", "entropy_coef", "scale_rewards",
                    "uniform_prior", "policy", "readout", "readout_skip", "kl_schedule",
                    "patcher_warmup", "sample_loss_weight"):
        assert removed not in params
        with pytest.raises(TypeError, match=removed):
            ReinPatchForecaster(**{removed: 1})


def test_grpg_options_reach_the_darts_model(airline):
    forecaster = tiny(kl_coef=0.2, group_size=2).fit(airline, fh=[1, 2])
    model = forecaster.get_fitted_params()["model"]
    network = model.model.network
    assert network.patcher.policy_name == "density"
    assert network.config.training.kl_coef == 0.2 and network.config.training.group_size == 2
    assert np.isfinite(forecaster.predict().to_numpy()).all()


def test_a_given_patcher_keeps_its_settings(airline, tmp_path):
    from reinpatch_forecast.patcher_io import save_patcher
    from reinpatch_forecast.nn import LearnedPatcher

    torch.manual_seed(0)
    path = tmp_path / "density.pt"
    save_patcher(LearnedPatcher(hidden_size=8, n_layers=1, density_sigma=1.0), path)
    zero_shot = tiny(patcher=str(path), n_epochs=1).fit(airline, fh=[1, 2])
    config = zero_shot.get_fitted_params()["model"].model.network.config
    assert (config.patcher.hidden_size, config.patcher.density_sigma) == (8, 1.0)


# -- foundation patcher and two levels ---------------------------------------------------------
def test_shipped_foundation_patcher_zero_shot_and_as_init(airline):
    from reinpatch_forecast.patcher_io import load_pretrained_patcher

    shipped = [p.detach().clone() for p in load_pretrained_patcher().parameters()]
    zero_shot = tiny(patcher="pretrained", n_epochs=1).fit(airline, fh=[1, 2, 3])
    network = zero_shot.get_fitted_params()["model"].model.network
    assert not network.trains_patcher
    assert all(torch.equal(a, b) for a, b in zip(shipped, network.patcher.parameters()))
    assert np.isfinite(zero_shot.predict().to_numpy()).all()

    warm = tiny(patcher_init="pretrained", group_size=2, n_epochs=1).fit(airline, fh=[1, 2])
    network = warm.get_fitted_params()["model"].model.network
    assert network.trains_patcher
    assert not all(torch.equal(a, b) for a, b in zip(shipped, network.patcher.parameters()))
    assert warm.get_params()["patcher_init"] == "pretrained"  # stays a plain, cloneable value


def test_two_level_forecaster_clone_keeps_the_pair(airline):
    from sklearn.base import clone

    forecaster = tiny(levels=2, compression_rate=(3, 2), patcher="uniform")
    assert clone(forecaster).get_params()["compression_rate"] == (3, 2)
    forecaster.fit(airline, fh=[1, 2])
    assert np.isfinite(forecaster.predict().to_numpy()).all()
