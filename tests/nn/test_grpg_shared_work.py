"""The GRPG step's shared work and its scored series.

What does not depend on the patching (the normalisation, the local features, the per-step
skip, the covariate paths) is computed per window, not per patching, and shared by the decode
and the samples. These tests check that the step gives the losses, forecasts and gradients of
computing everything per patching, for one and two levels, covariates and the at-most budget,
and that only the scored series draw samples and reach the policy.
"""

from __future__ import annotations

import pytest
import torch

from reinpatch_forecast.errors import ReinPatchInputError
from reinpatch_forecast.nn import Covariates, ReinPatchConfig
from reinpatch_forecast.nn.segments import segment_mean

from nn_support import small_config, small_network  # noqa: E402

B, L, C, H = 4, 32, 2, 6

SETTINGS = {
    "one level": {},
    "two levels": {"levels": 2, "compression_rate": (4, 2)},
    "at most": {"budget": "at_most"},
    "covariates": {"n_past_covariates": 2, "n_future_covariates": 1, "n_static_covariates": 1},
}


def data(settings: dict, seed: int = 0, batch: int = B):
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(batch, L, C, generator=generator).cumsum(1)
    y = torch.randn(batch, H, C, generator=generator)
    covariates = None
    if "n_past_covariates" in settings:
        covariates = Covariates(past=torch.randn(batch, L, 2, generator=generator),
                                future=torch.randn(batch, H, 1, generator=generator),
                                static=torch.randn(batch, C, 1, generator=generator))
    return x, y, covariates


class Recorder:
    """Keeps the patchings the patcher draws and the forecasts the group is scored on."""

    def __init__(self, net, monkeypatch):
        explore = net.patcher.explore

        def recording(*args, **kwargs):
            self.decoded, self.samples = explore(*args, **kwargs)
            return self.decoded, self.samples

        monkeypatch.setattr(net.patcher, "explore", recording)

    def sample_loss(self, prediction, target):
        self.forecasts = prediction
        return (prediction[..., 0] - target) ** 2


def _alone(net, x, starts, coarse, covariates):
    """Forecasts ``(B, G, H, C, Q)`` of every patching computed on its own: the normalisation,
    local features, skip and covariate paths recomputed for each one."""
    batch, group = x.shape[0], starts.shape[1]
    rows = None if covariates is None else covariates.rows(C)
    out = []
    for g in range(group):
        _, backbone_input, stats = net._normalise(x)
        out.append(net._forecast(backbone_input, starts[:, g:g + 1], stats, batch, C,
                                 coarse_starts=None if coarse is None else coarse[:, g:g + 1],
                                 covariates=rows))  # (B, 1, H, C, Q); local computed inside
    return torch.cat(out, dim=1)


@pytest.mark.parametrize("name", list(SETTINGS))
def test_shared_work_gives_the_per_patching_forecasts_losses_and_gradients(name, monkeypatch):
    settings = SETTINGS[name]
    net = small_network(dropout=0.0, **settings).train()
    recorder = Recorder(net, monkeypatch)
    x, y, covariates = data(settings)
    losses = net.training_losses(x, y, sample_loss=recorder.sample_loss,
                                 covariates=covariates)
    decoded, samples = recorder.decoded, recorder.samples
    coarse = None
    if decoded.coarse_starts is not None:
        coarse = torch.cat([decoded.coarse_starts, samples.coarse_starts], dim=1)
    starts = torch.cat([decoded.starts, samples.starts], dim=1)  # (R, 1+G, N)
    with torch.no_grad():
        alone = _alone(net, x, starts, coarse, covariates)  # (B, 1+G, H, C, Q)
    scored = recorder.forecasts.reshape(alone.shape)
    torch.testing.assert_close(scored, alone, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(losses.prediction.detach(), alone[:, 0], rtol=1e-5, atol=1e-5)

    parameters = net.backbone_parameters()
    shared = torch.autograd.grad(losses.backbone_loss, parameters, allow_unused=True)
    decode_alone = _alone(net, x, decoded.starts, decoded.coarse_starts, covariates)[:, 0]
    separate = torch.autograd.grad(((decode_alone[..., 0] - y) ** 2).mean(), parameters,
                                   allow_unused=True)
    for a, b in zip(shared, separate):
        assert (a is None) == (b is None)
        if a is not None:
            torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-6)


def test_local_out_on_patch_means_and_in_the_skip_is_local_out_on_every_step():
    """``local_out`` applied to the N patch means, and folded into the skip projection, equals
    ``local_out`` applied to every step first (values and gradients)."""
    net = small_network(dropout=0.0)
    backbone = net.backbone
    local = torch.randn(5, L, 16, requires_grad=True)
    starts = torch.tensor([0, 3, 9, 12, 20, 21, 25, 30]).expand(5, 2, -1).contiguous()
    out = backbone.tokeniser.local_out
    fast = backbone.tokeniser.local_tokens(local, starts).sum() + backbone.skip_features(
        local).square().sum()
    slow = segment_mean(out(local), starts).sum() + backbone.skip_projection(
        out(local)).square().sum()
    torch.testing.assert_close(fast, slow, rtol=1e-5, atol=1e-4)
    weights = [local, out.weight, out.bias, backbone.skip_projection.weight]
    for a, b in zip(torch.autograd.grad(fast, weights), torch.autograd.grad(slow, weights)):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("name", ["one level", "two levels", "covariates"])
def test_only_the_scored_series_draw_samples_and_reach_the_policy(name, monkeypatch):
    """With ``scored_series = 3`` and 2 channels, the first 2 windows (4 series) are scored:
    samples exist for those rows only, the scored forecasts are theirs, and changing the
    other windows moves the backbone loss but neither the policy loss nor its gradient."""
    settings = SETTINGS[name]
    net = small_network(dropout=0.0, scored_series=3, group_size=3, **settings).train()
    assert net.scored_windows(B, C) == 2
    recorder = Recorder(net, monkeypatch)
    x, y, covariates = data(settings, batch=B)
    net._generators.clear()
    losses = net.training_losses(x, y, sample_loss=recorder.sample_loss,
                                 covariates=covariates)
    assert recorder.decoded.starts.shape[:2] == (B * C, 1)
    assert recorder.samples.starts.shape[:2] == (2 * C, 3)
    assert recorder.forecasts.shape[0] == 2 * (1 + 3)
    grads = torch.autograd.grad(losses.policy_loss, net.patcher_parameters())

    changed = x.clone()
    changed[2:] = changed[2:] * 3.0 + 1.0
    net._generators.clear()  # the same sampling noise as the first step
    moved = net.training_losses(changed, y, sample_loss=recorder.sample_loss,
                                covariates=covariates)
    assert not torch.allclose(moved.backbone_loss, losses.backbone_loss)
    torch.testing.assert_close(moved.policy_loss, losses.policy_loss)
    for a, b in zip(grads, torch.autograd.grad(moved.policy_loss, net.patcher_parameters())):
        torch.testing.assert_close(a, b)


def test_scored_windows_cover_the_series_asked_for():
    net = small_network(scored_series=16)
    assert net.scored_windows(32, 7) == 3  # 21 series
    assert net.scored_windows(32, 1) == 16
    assert net.scored_windows(4, 7) == 3
    assert net.scored_windows(2, 7) == 2  # a small batch is scored whole
    assert net.scored_windows(8, 321) == 1


@pytest.mark.parametrize("value", [0, -3, 2.5, True, "16"])
def test_scored_series_must_be_a_positive_integer(value):
    with pytest.raises(ReinPatchInputError, match="scored_series"):
        ReinPatchConfig(input_length=32, output_length=6, training={"scored_series": value})
    with pytest.raises(ReinPatchInputError, match="scored_series"):
        small_config(scored_series=value)
