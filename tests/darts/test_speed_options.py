"""ReinPatchModel's options that make a GRPG step cheaper: backbone_draws and rollout_fraction."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from darts.utils.likelihood_models.torch import QuantileRegression

from reinpatch_forecast import ReinPatchModel


@pytest.mark.parametrize("likelihood", [None, QuantileRegression([0.1, 0.5, 0.9])],
                         ids=["point", "quantile"])
def test_rollout_fraction_with_one_backbone_draw_fits_and_predicts(
    make_model, series, likelihood
):
    model = make_model(group_size=4, backbone_draws=1, rollout_fraction=0.5,
                       likelihood=likelihood)
    model.fit(series, sample_weight="linear")
    network = model.model.network
    assert network.config.rollout_fraction == 0.5 and network.config.backbone_draws == 1
    logged = model.trainer.callback_metrics
    assert np.isfinite(float(logged["train_loss"]))
    assert float(logged["train_policy_loss"]) != 0.0  # the grouped windows train the policy
    forecast = model.predict(6, num_samples=1 if likelihood is None else 20)
    assert forecast.n_timesteps == 6 and np.isfinite(forecast.values()).all()


def test_fitted_model_rollout_splits_the_batch(make_model, series):
    """The fitted network groups the first ceil(f * B) windows and draws once for the rest."""
    model = make_model(group_size=4, backbone_draws=2, rollout_fraction=0.25, n_epochs=1)
    model.fit(series)
    module = model.model
    x = torch.randn(8, 24, 1)
    torch.manual_seed(0)
    rollout = module.network.rollout(x)
    assert rollout.n_grouped == 2 and rollout.single_prediction.shape == (6, 6, 1, 1)
    assert rollout.prediction.shape == (2, 4, 6, 1, 1)


@pytest.mark.parametrize("fraction", [0, 1.5, -1.0])
def test_rollout_fraction_is_validated_at_construction(fraction):
    with pytest.raises(ValueError, match="rollout_fraction must be a number with 0 < "):
        ReinPatchModel(input_chunk_length=24, output_chunk_length=6, rollout_fraction=fraction)
