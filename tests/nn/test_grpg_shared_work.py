"""The GRPG step's shared work and its scored series.

What does not depend on the patching (the normalisation, the local features, the per-step
skip, the covariate paths) is computed per window, not per patching, and shared by the decode
and the samples. These tests check that the step gives the losses, forecasts and gradients of
computing everything per patching, for one and two levels, covariates and the at-most budget,
and that only the scored rows (a share of the batch's rows) draw samples and reach the policy.
"""

from __future__ import annotations

import pytest
import torch

from reinpatch_forecast.errors import ReinPatchInputError
from reinpatch_forecast.nn import Covariates, ReinPatchConfig, ReinPatchNetwork
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
    net = small_network(dropout=0.0, scored_share=1.0, **settings).train()
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
    # scored rows b * C + c, each its own series: (R*(1+G), H, 1, Q) -> (B, 1+G, H, C, Q)
    scored = recorder.forecasts.reshape(B, C, -1, H, alone.shape[-1]).permute(0, 2, 3, 1, 4)
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
    """With ``scored_share = 0.3`` and 4 windows of 2 channels, the first 3 of the 8 rows are
    scored (one window and a half: rows, not windows): samples exist for those rows only, the
    scored forecasts are theirs, and changing the other rows moves the backbone loss but
    neither the policy loss nor its gradient."""
    settings = SETTINGS[name]
    net = small_network(dropout=0.0, scored_share=0.3, group_size=3, **settings).train()
    assert net.scored_rows(B * C) == 3
    recorder = Recorder(net, monkeypatch)
    x, y, covariates = data(settings, batch=B)
    net._generators.clear()
    losses = net.training_losses(x, y, sample_loss=recorder.sample_loss,
                                 covariates=covariates)
    assert recorder.decoded.starts.shape[:2] == (B * C, 1)
    assert recorder.samples.starts.shape[:2] == (3, 3)
    assert recorder.forecasts.shape[0] == 3 * (1 + 3)
    grads = torch.autograd.grad(losses.policy_loss, net.patcher_parameters())

    changed = x.clone()
    changed[2:] = changed[2:] * 3.0 + 1.0  # windows 2 and 3: rows 4 to 7
    changed[1, :, 1] = changed[1, :, 1] * 3.0 + 1.0  # row 3 (window 1, channel 1)
    net._generators.clear()  # the same sampling noise as the first step
    moved = net.training_losses(changed, y, sample_loss=recorder.sample_loss,
                                covariates=covariates)
    assert not torch.allclose(moved.backbone_loss, losses.backbone_loss)
    torch.testing.assert_close(moved.policy_loss, losses.policy_loss)
    for a, b in zip(grads, torch.autograd.grad(moved.policy_loss, net.patcher_parameters())):
        torch.testing.assert_close(a, b)


def test_the_scored_rows_are_the_same_share_for_any_channels_and_batch():
    """A share of the rows, whatever splits them into windows and channels: one series, seven
    channels and a panel of one-channel windows score the same share of a batch's rows."""
    net = small_network(scored_share=0.125)
    for rows in (32, 32 * 7, 64, 256 * 321):
        assert net.scored_rows(rows) == rows // 8
    assert net.scored_rows(7 * 4) == 4  # rounded up
    assert net.scored_rows(3) == 1  # at least one row
    assert small_network(scored_share=0.1).scored_rows(70) == 7  # no float round-up
    assert small_network(scored_share=1.0).scored_rows(5) == 5


def test_one_channel_and_seven_channels_score_the_same_share_in_a_step(monkeypatch):
    """Through the training step: the samples drawn are the same share of the rows for a
    batch of one-channel windows and one of seven-channel windows."""
    drawn = {}
    for channels in (1, 7):
        net = small_network(n_channels=channels, scored_share=0.25, group_size=2)
        recorder = Recorder(net, monkeypatch)
        generator = torch.Generator().manual_seed(0)
        x = torch.randn(8, L, channels, generator=generator).cumsum(1)
        net.training_losses(x, torch.randn(8, H, channels, generator=generator))
        drawn[channels] = recorder.samples.starts.shape[0] / recorder.decoded.starts.shape[0]
    assert drawn == {1: 0.25, 7: 0.25}


def test_explore_gives_every_field_of_the_decode_for_every_row():
    """The decode :meth:`LearnedPatcher.explore` returns has one row per series in every
    field; the sampled rows' KL carries the gradient the policy loss reads, the others none."""
    net = small_network(scored_share=0.25, patcher_options={"density_sigma": 0.5})
    patcher_input = net._normalise(torch.randn(4, L, C).cumsum(1))[0]  # (8, L)
    decoded, samples = net._explore(patcher_input, 3, 2)
    for value in (decoded.starts, decoded.log_prob, decoded.kl, decoded.entropy):
        assert value.shape[0] == 8
    assert samples.starts.shape[:2] == (2, 3) and samples.log_prob.shape == (2, 3)
    with torch.no_grad():
        whole, _ = net._explore(patcher_input, 3, 8)
    for name in ("starts", "log_prob", "kl", "entropy"):
        torch.testing.assert_close(getattr(decoded, name), getattr(whole, name))
    gradient = torch.autograd.grad(decoded.kl.sum(), net.patcher_parameters(),
                                   allow_unused=True)
    assert any(g is not None for g in gradient)


@pytest.mark.parametrize("value", [0, 0.0, -0.5, 1.5, True, "0.1", float("nan")])
def test_scored_share_must_be_in_the_unit_interval(value):
    with pytest.raises(ReinPatchInputError, match="scored_share"):
        ReinPatchConfig(input_length=32, output_length=6, training={"scored_share": value})
    with pytest.raises(ReinPatchInputError, match="scored_share"):
        small_config(scored_share=value)


def test_a_saved_config_with_a_scored_series_count_still_builds():
    """Configurations saved before the share carry a count of series: they build (with the
    default share, and a warning saying what replaced the count)."""
    with pytest.warns(FutureWarning):
        config = ReinPatchConfig(input_length=32, output_length=6,
                                 training={"group_size": 4, "scored_series": 32})
    assert config.training.group_size == 4
    assert config.training.scored_share == ReinPatchConfig(32, 6).training.scored_share


def test_a_network_that_predicted_under_inference_mode_then_trains():
    """What the density policy keeps between calls (its cells) is built as ordinary tensors,
    so a training step after a prediction under ``torch.inference_mode`` (darts' predict, then
    another fit) can save them for backward."""
    torch.manual_seed(0)
    config = ReinPatchConfig(input_length=48, output_length=8, compression_rate=8,
                             backbone=dict(d_model=16, n_heads=2, dropout=0.0))
    network = ReinPatchNetwork(config)
    x, y = torch.randn(4, 48, 2), torch.randn(4, 8, 2)
    with torch.inference_mode():
        network.eval()(x)
    losses = network.train().training_losses(x, y)
    losses.loss.backward()
    assert network.patcher.output.weight.grad.abs().sum() > 0
