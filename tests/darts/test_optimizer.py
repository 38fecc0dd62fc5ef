"""The optimizer: darts' ``optimizer_cls`` over two parameter groups (backbone and patcher) and
darts' learning-rate scheduler block, settings included."""

from __future__ import annotations

import pytest
import torch
from support import TINY_DARTS


def _group_ids(optimizer) -> list[set[int]]:
    return [{id(p) for p in group["params"]} for group in optimizer.param_groups]


def test_the_patcher_trains_in_its_own_group_at_6x_the_rate(make_model, series):
    model = make_model(TINY_DARTS, optimizer_kwargs={"lr": 2e-3},
                       lr_scheduler_cls=None).fit(series)
    (optimizer,) = model.trainer.optimizers
    assert isinstance(optimizer, torch.optim.Adam)
    network = model.model.network
    assert _group_ids(optimizer) == [{id(p) for p in network.backbone_parameters()},
                                     {id(p) for p in network.patcher_parameters()}]
    assert [group["lr"] for group in optimizer.param_groups] == pytest.approx([2e-3, 12e-3])


def test_a_scheduler_steps_both_groups_with_darts_settings(make_model, series):
    model = make_model(TINY_DARTS, n_epochs=2, optimizer_kwargs={"lr": 1e-3}, patcher_lr=4e-3,
                       optimizer_cls=torch.optim.SGD,
                       lr_scheduler_cls=torch.optim.lr_scheduler.StepLR,
                       lr_scheduler_kwargs={"step_size": 1, "gamma": 0.5, "frequency": 2})
    model.fit(series)
    (optimizer,) = model.trainer.optimizers
    assert isinstance(optimizer, torch.optim.SGD)
    (config,) = model.trainer.lr_scheduler_configs
    assert isinstance(config.scheduler, torch.optim.lr_scheduler.StepLR)
    # darts' defaults, but the frequency given in lr_scheduler_kwargs
    assert (config.interval, config.frequency, config.monitor) == ("epoch", 2, "val_loss")
    # two epochs, one scheduler step (every second epoch): both rates halved once
    assert [group["lr"] for group in optimizer.param_groups] == pytest.approx([5e-4, 2e-3])


def test_by_default_both_rates_stay_constant(make_model, series):
    model = make_model(TINY_DARTS, n_epochs=2, optimizer_kwargs={"lr": 1e-3}).fit(series)
    assert model.trainer.lr_scheduler_configs == []
    (optimizer,) = model.trainer.optimizers
    assert [group["lr"] for group in optimizer.param_groups] == pytest.approx([1e-3, 6e-3])


def test_a_frozen_patcher_has_no_group(make_model, series):
    model = make_model(TINY_DARTS, patcher="pretrained").fit(series)
    (optimizer,) = model.trainer.optimizers
    assert len(optimizer.param_groups) == 1
