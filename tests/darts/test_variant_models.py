"""The benchmarks' policy and readout variants as darts models (``benchmarks/variants.py``):
they train through the package's darts module and GRPG step, keep the darts contract (save,
load, load_weights, load_from_checkpoint, the same seed giving the same forecast, sample
weights and likelihoods), and an offset patcher that keeps the grid trains as uniform."""

from __future__ import annotations

import functools
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from darts.utils.likelihood_models import QuantileRegression
from support import SMALL_DARTS

from reinpatch_forecast._lightning import quiet_trainer_kwargs

from test_grpg_step import step_and_network_losses  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import variants  # noqa: E402


def _variant(work_dir, **overrides):
    return variants.make_model(**{**SMALL_DARTS, "work_dir": str(work_dir),
                                  "pl_trainer_kwargs": quiet_trainer_kwargs(), **overrides})


@pytest.fixture
def make_variant(tmp_path):
    return functools.partial(_variant, tmp_path)


@pytest.mark.parametrize("policy", ["offset", "topk"])
def test_save_load_and_load_weights_give_identical_forecasts(make_variant, series, tmp_path,
                                                             policy):
    model = make_variant(policy=policy, save_checkpoints=True, model_name="saved",
                         force_reset=True).fit(series)
    assert isinstance(model, variants.VariantModel)
    expected = model.predict(9).values()
    path = tmp_path / "model.pt"
    model.save(str(path))
    loaded = variants.VariantModel.load(str(path))
    np.testing.assert_array_equal(loaded.predict(9).values(), expected)
    fresh = make_variant(policy=policy)
    fresh.load_weights(str(path))
    np.testing.assert_array_equal(fresh.predict(9, series=series).values(), expected)
    from_ckpt = variants.VariantModel.load_from_checkpoint("saved", work_dir=model.work_dir,
                                                           best=False)
    np.testing.assert_array_equal(from_ckpt.predict(9, series=series).values(), expected)


@pytest.mark.parametrize("policy", ["offset", "topk"])
def test_same_random_state_same_forecast(make_variant, series, policy):
    def forecast(seed: int) -> np.ndarray:
        return make_variant(policy=policy, random_state=seed).fit(series).predict(6).values()

    first, second, other = forecast(7), forecast(7), forecast(8)
    np.testing.assert_array_equal(first, second)
    assert not np.array_equal(first, other)


@pytest.mark.parametrize("policy", ["offset", "topk"])
@pytest.mark.parametrize("likelihood", [None, QuantileRegression([0.1, 0.5, 0.9])],
                         ids=["point", "quantile"])
def test_every_policy_trains_with_sample_weights_and_likelihoods(make_variant, series,
                                                                 likelihood, policy):
    model = make_variant(policy=policy, likelihood=likelihood)
    model.fit(series, sample_weight="linear")
    network = model.model.network
    assert network.config.ablation.policy == policy and network.patcher.policy_name == policy
    logged = model.trainer.callback_metrics
    assert np.isfinite(float(logged["train_loss"]))
    assert float(logged["train_policy_loss"]) != 0.0  # the samples train the policy
    forecast = model.predict(6, num_samples=1 if likelihood is None else 20)
    assert forecast.n_timesteps == 6 and np.isfinite(forecast.values()).all()


@pytest.mark.parametrize("policy,readout", [("density", "profile"), ("offset", "copy"),
                                            ("topk", "interpolate"), ("density", "flatten")])
def test_darts_training_step_is_the_network_step(make_variant, series, monkeypatch, policy,
                                                 readout):
    """Same seed and batch: the module's training_step returns the loss of the variant
    network's training_losses with darts' loss (MSE)."""
    model = make_variant(policy=policy, readout=readout, dropout=0.2, n_epochs=1)
    model.fit(series)
    darts_loss, logged, losses = step_and_network_losses(model, series, monkeypatch)
    assert torch.equal(darts_loss, losses.loss)
    assert torch.equal(logged["train_loss"], losses.backbone_loss)
    assert logged["train_policy_loss"] == losses.policy_loss.detach()


def test_an_offset_patcher_that_keeps_the_grid_trains_exactly_as_uniform(make_variant, make_sine):
    """With the patcher's learning rate at 0 the offset decode stays the uniform grid: the
    forecasts are those of uniform patches, bit for bit. A top-k patcher differs."""
    series = make_sine(length=300, noise=0.3)
    settings = dict(dropout=0.2, n_epochs=2)
    uniform = make_variant(patcher="uniform", **settings).fit(series).predict(6).values()
    offset = make_variant(policy="offset", patcher_lr=0.0, **settings).fit(series)
    assert np.array_equal(offset.predict(6).values(), uniform)
    topk = make_variant(policy="topk", patcher_lr=0.0, **settings).fit(series)
    assert not np.array_equal(topk.predict(6).values(), uniform)
