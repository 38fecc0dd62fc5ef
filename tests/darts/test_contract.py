"""ReinPatchModel behaves like every other darts torch model."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from darts.metrics import mae
from darts.utils.likelihood_models import GaussianLikelihood, QuantileRegression
from torchmetrics import MeanAbsoluteError

from reinpatch_forecast import ReinPatchModel
from reinpatch_forecast._lightning import quiet_trainer_kwargs
from reinpatch_forecast.darts import PatchBoundaries
from reinpatch_forecast.patcher_io import save_patcher
from reinpatch_forecast.nn import LearnedPatcher


def test_importable_from_package_root():
    from reinpatch_forecast.darts import ReinPatchModel as FromSubpackage

    assert ReinPatchModel is FromSubpackage


def test_fit_single_series_and_predict_lengths(make_model, series):
    model = make_model().fit(series)
    for n in (3, 6, 15):  # < ocl, = ocl, > ocl (autoregressive)
        forecast = model.predict(n)
        assert len(forecast) == n
        assert forecast.start_time() == series.end_time() + series.freq
        assert np.isfinite(forecast.values()).all()
    # The autoregressive forecast starts with the one-shot forecast.
    np.testing.assert_allclose(model.predict(15).values()[:6], model.predict(6).values(),
                               rtol=1e-5, atol=1e-6)


def test_fit_list_of_series(make_model, make_sine):
    serieses = [make_sine(seed=0), make_sine(length=150, seed=1, period=15)]
    model = make_model().fit(serieses)
    forecasts = model.predict(6, series=serieses)
    assert [len(f) for f in forecasts] == [6, 6]
    assert forecasts[1].start_time() == serieses[1].end_time() + serieses[1].freq


def test_fit_multivariate_series(make_model, make_sine):
    series = make_sine(components=3)
    model = make_model().fit(series)
    forecast = model.predict(6)
    assert forecast.width == 3
    assert list(forecast.components) == ["c0", "c1", "c2"]
    boundaries = model.patch_boundaries(series)
    assert isinstance(boundaries, PatchBoundaries)
    assert boundaries.starts.shape == (3, 6)  # (C, N) with N = 24 / 4
    assert (boundaries.starts[:, 0] == 0).all()
    assert (np.diff(boundaries.starts, axis=1) > 0).all()
    assert len(boundaries.start_times(1)) == 6


def test_learned_model_beats_mean_forecast(make_model, series):
    train, test = series[:200], series[200:]
    model = make_model(n_epochs=8).fit(train)
    forecast = model.predict(6)
    mean_error = np.abs(test[:6].values() - train.values().mean()).mean()
    assert mae(test[:6], forecast) < 0.7 * mean_error


def test_val_series_early_stopping_and_load_best(make_model, series):
    from pytorch_lightning.callbacks import EarlyStopping

    stopper = EarlyStopping(monitor="val_loss", patience=1, min_delta=10.0, mode="min")
    model = make_model(n_epochs=20, save_checkpoints=True, model_name="es",
                       pl_trainer_kwargs=quiet_trainer_kwargs(callbacks=[stopper]),
                       force_reset=True)
    model.fit(series[:180], val_series=series[150:], load_best=True)
    # min_delta is huge, so training stops after patience + 1 epochs, well before 20.
    assert model.epochs_trained <= 3
    assert "val_loss" in model.trainer.callback_metrics
    assert np.isfinite(model.predict(6).values()).all()


def test_historical_forecasts_and_backtest(make_model, series):
    model = make_model().fit(series[:180])
    forecasts = model.historical_forecasts(
        series, start=180, forecast_horizon=6, stride=6, retrain=False, last_points_only=False,
        verbose=False,
    )
    assert len(forecasts) == 10
    assert all(len(f) == 6 for f in forecasts)
    error = model.backtest(series, start=180, forecast_horizon=6, stride=6, retrain=False,
                           metric=mae, verbose=False)
    assert np.isfinite(error) and error > 0


def test_gridsearch(make_model, series):
    base = make_model()
    best, params, score = ReinPatchModel.gridsearch(
        parameters={
            "input_chunk_length": [24], "output_chunk_length": [6], "compression_rate": [4, 8],
            "n_epochs": [1], "d_model": [16], "n_heads": [2], "n_layers": [1],
            "group_size": [2], "random_state": [0],
            "pl_trainer_kwargs": [base.trainer_params],
        },
        series=series[:200], val_series=series[200:], metric=mae,
    )
    assert params["compression_rate"] in (4, 8)
    assert np.isfinite(score)


def test_save_load_and_load_weights_give_identical_forecasts(make_model, series, tmp_path):
    model = make_model(save_checkpoints=True, model_name="saved",
                       force_reset=True).fit(series)
    expected = model.predict(9).values()
    path = tmp_path / "model.pt"
    model.save(str(path))
    loaded = ReinPatchModel.load(str(path))  # no trusted=True: the classes are registered
    np.testing.assert_array_equal(loaded.predict(9).values(), expected)

    fresh = make_model()
    fresh.load_weights(str(path))
    np.testing.assert_array_equal(fresh.predict(9, series=series).values(), expected)

    from_ckpt = ReinPatchModel.load_from_checkpoint("saved", work_dir=model.work_dir, best=False)
    np.testing.assert_array_equal(from_ckpt.predict(9, series=series).values(), expected)


def test_same_random_state_same_forecast(make_model, series):
    def forecast(seed: int) -> np.ndarray:
        model = make_model(random_state=seed).fit(series)
        return model.predict(6).values()

    first, second, other = forecast(7), forecast(7), forecast(8)
    np.testing.assert_array_equal(first, second)
    assert not np.array_equal(first, other)


@pytest.mark.parametrize("patcher", ["learned", "uniform", "random", "volatility"])
def test_every_patcher_trains_and_predicts(make_model, series, patcher):
    model = make_model(patcher=patcher).fit(series)
    forecast = model.predict(6)
    assert np.isfinite(forecast.values()).all()
    assert model.patch_boundaries().starts.shape == (1, 6)


def test_uniform_patcher_boundaries_are_regular(make_model, series):
    model = make_model(patcher="uniform").fit(series)
    np.testing.assert_array_equal(model.patch_boundaries().starts[0], [0, 4, 8, 12, 16, 20])


@pytest.mark.parametrize("as_path", [False, True])
def test_foundation_patcher_is_frozen(make_model, series, tmp_path, as_path):
    torch.manual_seed(3)
    patcher = LearnedPatcher(hidden_size=8, n_layers=2)
    before = {k: v.clone() for k, v in patcher.state_dict().items()}
    source = patcher
    if as_path:
        source = tmp_path / "patcher.pt"
        save_patcher(patcher, source)
    model = make_model(patcher=source).fit(series)
    after = model.model.network.patcher.state_dict()
    for name, value in before.items():
        assert torch.equal(after[name], value), name
    assert not model.model.network.trains_patcher
    # The model (holding the patcher as plain state) saves and loads like any other.
    path = tmp_path / "foundation_model.pt"
    model.save(str(path))
    np.testing.assert_array_equal(
        ReinPatchModel.load(str(path)).predict(6).values(), model.predict(6).values()
    )


def _coverage(model, series, start):
    forecasts = model.historical_forecasts(
        series, start=start, forecast_horizon=6, stride=6, retrain=False,
        last_points_only=False, num_samples=200, verbose=False,
    )
    inside, total = 0, 0
    for forecast in forecasts:
        actual = series.slice_intersect(forecast).values()[:, 0]
        low = forecast.quantile(0.1).values()[:, 0]
        high = forecast.quantile(0.9).values()[:, 0]
        inside += ((actual >= low) & (actual <= high)).sum()
        total += len(actual)
    return inside / total


@pytest.mark.parametrize(
    "likelihood", [QuantileRegression([0.1, 0.5, 0.9]), GaussianLikelihood()],
    ids=["quantile", "gaussian"],
)
def test_likelihoods_give_calibrated_quantiles(make_model, make_sine, likelihood):
    # Known noise: a sine plus N(0, 0.3^2); a good 80% interval covers about 80% of the points.
    series = make_sine(length=600, noise=0.3, seed=4)
    model = make_model(likelihood=likelihood, n_epochs=6, patcher="uniform",
                       optimizer_kwargs={"lr": 3e-3})
    model.fit(series[:480])
    forecast = model.predict(6, num_samples=200)
    assert forecast.n_samples == 200
    assert (forecast.quantile(0.9).values() >= forecast.quantile(0.1).values()).all()
    coverage = _coverage(model, series, start=480)
    assert 0.6 <= coverage <= 0.95, coverage


def test_learned_patcher_with_quantile_likelihood(make_model, series):
    model = make_model(likelihood=QuantileRegression([0.1, 0.5, 0.9]))
    model.fit(series)
    assert model.model.network.trains_patcher
    assert float(model.trainer.callback_metrics["train_policy_loss"]) != 0.0
    forecast = model.predict(6, num_samples=50)
    assert forecast.n_samples == 50


def test_sample_weight(make_model, series):
    weighted = make_model().fit(series, sample_weight="linear").predict(6).values()
    plain = make_model().fit(series).predict(6).values()
    assert np.isfinite(weighted).all()
    assert not np.array_equal(weighted, plain)


def test_torch_metrics_and_grpg_diagnostics_are_logged(make_model, series):
    model = make_model(torch_metrics=MeanAbsoluteError()).fit(series, val_series=series[150:])
    logged = model.trainer.callback_metrics
    for key in ("train_loss", "train_policy_loss", "train_reward", "train_advantage",
                "train_kl", "train_mean_patch_length", "train_patch_length_std",
                "train_grid_shift", "train_MeanAbsoluteError", "val_MeanAbsoluteError",
                "val_loss"):
        assert key in logged, key
    assert float(logged["train_mean_patch_length"]) == pytest.approx(4.0)
    assert float(logged["train_reward"]) < 0


def test_float64_series_gives_a_float64_forecast(make_model, series):
    series64 = series.astype(np.float64)
    model = make_model().fit(series64)
    forecast = model.predict(6, series=series64)
    assert forecast.dtype == np.float64 and model.predict(6).dtype == np.float64
    assert np.isfinite(forecast.values()).all()
    np.testing.assert_allclose(forecast.values(), model.predict(6, series=series).values(),
                               rtol=1e-6)
    # the network computes in float32: the float64 forecast is the float32 one cast up
    assert model.model.dtype == torch.float32
    np.testing.assert_array_equal(forecast.values(),
                                  model.predict(6, series=series).values().astype(np.float64))


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(compression_rate=0.5), "compression_rate must be >= 1"),
        (dict(compression_rate=100), "larger than the lookback"),
        (dict(group_size=0), "group_size must be a positive integer"),
        (dict(patcher="entropy"), "patcher must be one of"),
        (dict(policy="topk"), "no args/kwargs .*policy"),  # an ablation of the benchmarks
        (dict(kl_coef=-0.1), "kl_coef must be a finite number >= 0"),
        (dict(entropy_coef=1e-3), "no args/kwargs .*entropy_coef"),  # removed in policy v2
        (dict(d_model=10, n_heads=4), "divisible"),
        (dict(use_reversible_instance_norm=True), "normalises every series itself"),
    ],
)
def test_bad_parameters_fail_at_construction(make_model, kwargs, message):
    with pytest.raises((ValueError, FileNotFoundError), match=message):
        make_model(**kwargs)


def test_predict_and_boundaries_before_fit(make_model):
    model = make_model()
    with pytest.raises(ValueError, match="not trained yet"):
        model.patch_boundaries()
    with pytest.raises(ValueError):
        model.predict(6)


@pytest.mark.parametrize("likelihood", [None, QuantileRegression([0.1, 0.5, 0.9])],
                         ids=["point", "quantile"])
def test_the_policy_trains_with_sample_weights_and_likelihoods(make_model, series, likelihood):
    model = make_model(likelihood=likelihood)
    model.fit(series, sample_weight="linear")
    network = model.model.network
    assert network.patcher.policy_name == "density"
    logged = model.trainer.callback_metrics
    assert np.isfinite(float(logged["train_loss"]))
    assert float(logged["train_policy_loss"]) != 0.0  # the samples train the policy
    forecast = model.predict(6, num_samples=1 if likelihood is None else 20)
    assert forecast.n_timesteps == 6 and np.isfinite(forecast.values()).all()


def test_group_size_one_trains_the_policy(make_model, series):
    """The decode is the baseline, so a single sample per series gives a policy gradient."""
    model = make_model(group_size=1, n_epochs=1).fit(series)
    assert model.model.network.trains_patcher
    assert float(model.trainer.callback_metrics["train_policy_loss"]) != 0.0


def test_policy_defaults_and_resample_points_follow_the_compression_rate():
    model = ReinPatchModel(input_chunk_length=24, output_chunk_length=6, compression_rate=3.5)
    config = model.network_config
    assert (config.patcher.name, config.training.group_size, config.training.kl_coef,
            config.training.scored_share) == ("learned", 8, 0.03, 0.125)
    assert model.options.resample_points is None
    assert config.backbone.resample_points == 4  # ceil(compression_rate)
