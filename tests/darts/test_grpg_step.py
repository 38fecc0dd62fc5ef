"""The darts module runs the network's GRPG step (one step, written once), and a learned patcher
that keeps the uniform grid trains exactly as uniform patches (common random numbers)."""

from __future__ import annotations

import numpy as np
import torch
from darts.utils.data.torch_datasets.utils import TorchTrainingBatch


def _batch(series, length: int = 24, horizon: int = 6, windows: int = 8) -> TorchTrainingBatch:
    values = torch.as_tensor(series.values(copy=False), dtype=torch.float32)  # (T, 1)
    starts = torch.arange(windows) * 7
    past = torch.stack([values[s:s + length] for s in starts.tolist()])  # (B, L, C)
    future = torch.stack([values[s + length:s + length + horizon] for s in starts.tolist()])
    return TorchTrainingBatch(past_target=past, past_covariates=None,
                              historic_future_covariates=None, future_covariates=None,
                              static_covariates=None, sample_weight=None, future_target=future)


def step_and_network_losses(model, series, monkeypatch):
    """The fitted model's training_step on a fixed batch, what it logged, and the network's
    training_losses with darts' loss (MSE) on the same batch and seed."""
    module = model.model.train()
    logged = {}
    monkeypatch.setattr(module, "log", lambda name, value, **kw: logged.__setitem__(name, value))
    monkeypatch.setattr(module, "log_dict", lambda values, **kw: logged.update(values))
    monkeypatch.setattr(module, "_update_metrics", lambda *args: None)
    batch = _batch(series)
    module.network._generators.clear()  # the patcher's sampling restarts from its seed
    torch.manual_seed(3)
    darts_loss = module.training_step(batch, 0)
    module.network._generators.clear()
    torch.manual_seed(3)
    losses = module.network.training_losses(
        batch.past_target, batch.future_target,
        backbone_loss=lambda prediction, target: ((prediction[..., 0] - target) ** 2).mean(),
    )
    return darts_loss, logged, losses


def test_darts_training_step_is_the_network_step(make_model, series, monkeypatch):
    """Same seed and batch: the module's training_step returns the loss of
    ReinPatchNetwork.training_losses with darts' loss (MSE), and logs nothing else."""
    model = make_model(dropout=0.2, n_epochs=1)
    model.fit(series)
    darts_loss, logged, losses = step_and_network_losses(model, series, monkeypatch)
    assert torch.equal(darts_loss, losses.loss)
    assert torch.equal(logged["train_loss"], losses.backbone_loss)
    assert logged["train_policy_loss"] == losses.policy_loss.detach()
    assert logged["train_grid_shift"] == losses.grid_shift


def test_a_patcher_that_keeps_the_grid_trains_exactly_as_uniform(make_model, make_sine):
    """With the patcher's learning rate at 0 the decode stays the uniform grid; the backbone,
    the data order and the dropout masks are those of the uniform model of the same seed, so
    the forecasts are identical, bit for bit (a top-k patcher, not on the grid, differs:
    tests/darts/test_variant_models.py)."""
    series = make_sine(length=300, noise=0.3)
    settings = dict(dropout=0.2, n_epochs=2)
    uniform = make_model(patcher="uniform", **settings).fit(series).predict(6).values()
    learned = make_model(patcher_lr=0.0, **settings).fit(series)
    assert np.array_equal(learned.predict(6).values(), uniform)
