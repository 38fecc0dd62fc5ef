"""``ReinPatchConfig.rollout_fraction``: only part of a batch draws GRPG groups.

The first ``Bg = ceil(f * B)`` windows draw ``G`` patchings (rewards, advantages, policy term);
the other ``Bs = B - Bg`` draw one sampled patching each and only train the backbone.
"""

from __future__ import annotations

import math

import pytest
import torch

from reinpatch_forecast.nn.network import ReinPatchConfig

from nn_support import small_config, small_network  # noqa: E402

B, L, C, H = 5, 32, 2, 6
N, N2 = 8, 3


config = small_config
network = small_network


def data(seed: int = 0, batch: int = B):
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(batch, L, C, generator=generator).cumsum(1)
    y = torch.randn(batch, H, C, generator=generator)
    return x, y


# -- configuration -----------------------------------------------------------------------------


@pytest.mark.parametrize("fraction", [0, 0.0, -0.25, 1.5, math.nan, math.inf, True, "half"])
def test_rollout_fraction_out_of_range_is_refused(fraction):
    with pytest.raises(ValueError, match="rollout_fraction must be a number with 0 < "):
        config(rollout_fraction=fraction)


@pytest.mark.parametrize(
    "fraction, batch, grouped",
    [(None, 32, 32), (1, 32, 32), (1.0, 7, 7), (0.25, 32, 8), (0.3, 10, 3), (0.5, 5, 3),
     (0.01, 5, 1), (0.999, 4, 4)],
)
def test_grouped_windows_is_the_ceiling_of_fraction_times_batch(fraction, batch, grouped):
    assert config(rollout_fraction=fraction).grouped_windows(batch) == grouped


def test_rollout_fraction_round_trips_through_to_dict():
    values = config(rollout_fraction=0.25).to_dict()
    assert values["rollout_fraction"] == 0.25
    assert ReinPatchConfig(**values).rollout_fraction == 0.25


# -- shapes ------------------------------------------------------------------------------------


@pytest.mark.parametrize("backbone_draws", [None, 1, 2])
@pytest.mark.parametrize("nr_params", [1, 2])
def test_partial_rollout_shapes(backbone_draws, nr_params):
    net = network(rollout_fraction=0.5, backbone_draws=backbone_draws, nr_params=nr_params)
    x, _ = data()
    rollout = net.rollout(x)
    grouped, singles = 3, 2  # ceil(0.5 * 5) and the rest
    assert rollout.n_grouped == grouped
    assert rollout.prediction.shape == (grouped, 4, H, C, nr_params)
    assert rollout.log_prob.shape == (grouped, 4, C)
    assert rollout.entropy.shape == (grouped, C)
    assert rollout.starts.shape == (grouped, 4, C, N)
    assert rollout.n_trained == (backbone_draws or 4)
    assert rollout.single_prediction.shape == (singles, H, C, nr_params)
    assert rollout.single_starts.shape == (singles, C, N)
    assert rollout.coarse_starts is None and rollout.single_coarse_starts is None
    for starts in (rollout.starts, rollout.single_starts):
        assert bool((starts[..., 0] == 0).all()) and bool((starts.diff(dim=-1) > 0).all())
    assert bool(torch.isfinite(rollout.prediction).all())
    assert bool(torch.isfinite(rollout.single_prediction).all())


@pytest.mark.parametrize("backbone_draws", [None, 1])
def test_partial_rollout_at_two_levels(backbone_draws):
    net = network(levels=2, compression_rate=(4, 3), rollout_fraction=0.4,
                  backbone_draws=backbone_draws)
    x, y = data()
    rollout = net.rollout(x)
    assert rollout.coarse_starts.shape == (2, 4, C, N2)
    assert rollout.single_coarse_starts.shape == (3, C, N2)
    # Nested: every coarse start of a single draw is one of its fine starts.
    fine, coarse = rollout.single_starts, rollout.single_coarse_starts
    assert bool((coarse.unsqueeze(-1) == fine.unsqueeze(-2)).any(-1).all())
    losses = net.training_losses(x, y)
    assert bool(torch.isfinite(losses.loss))


@pytest.mark.parametrize("patcher", ["uniform", "random", "volatility"])
def test_fixed_patchers_ignore_the_fraction(patcher):
    # A patcher that is not trained draws one patching for every window anyway.
    rollout = network(patcher=patcher, rollout_fraction=0.25).rollout(data()[0])
    assert rollout.prediction.shape[:2] == (B, 1) and rollout.single_prediction is None


def test_a_single_grouped_window_still_works():
    net = network(rollout_fraction=1e-3, backbone_draws=1)
    x, y = data()
    rollout = net.rollout(x)
    assert rollout.n_grouped == 1 and rollout.single_prediction.shape[0] == B - 1
    net.training_losses(x, y).loss.backward()
    assert all(p.grad is not None for p in net.patcher_parameters())


# -- f = 1 is the default behaviour ------------------------------------------------------------


@pytest.mark.parametrize("backbone_draws", [None, 1])
def test_fraction_one_is_bit_for_bit_the_default(backbone_draws):
    x, y = data()
    results = []
    for fraction in (None, 1.0):
        net = network(rollout_fraction=fraction, backbone_draws=backbone_draws)
        torch.manual_seed(7)
        losses = net.training_losses(x, y)
        losses.loss.backward()
        results.append((losses, [p.grad.clone() for p in net.parameters()]))
    (default, default_grads), (full, full_grads) = results
    for name in ("loss", "backbone_loss", "policy_loss", "mean_reward", "entropy"):
        assert torch.equal(getattr(default, name), getattr(full, name)), name
    assert all(torch.equal(a, b) for a, b in zip(default_grads, full_grads))


# -- losses and gradients ----------------------------------------------------------------------


@pytest.mark.parametrize("backbone_draws", [None, 1, 2])
def test_backbone_loss_is_the_mean_over_every_trained_forecast(backbone_draws):
    net = network(dropout=0.0, rollout_fraction=0.5, backbone_draws=backbone_draws)
    x, y = data()
    torch.manual_seed(3)
    losses = net.training_losses(x, y)
    torch.manual_seed(3)
    rollout = net.rollout(x)
    k = rollout.n_trained
    grouped = ((rollout.prediction[:, :k, ..., 0] - y[:3].unsqueeze(1)) ** 2).mean(dim=2)
    singles = ((rollout.single_prediction[..., 0] - y[3:]) ** 2).mean(dim=1)  # (Bs, C)
    expected = torch.cat([grouped.reshape(-1), singles.reshape(-1)]).mean()
    torch.testing.assert_close(losses.backbone_loss, expected)
    # The policy diagnostics cover the grouped windows only.
    torch.testing.assert_close(losses.entropy, rollout.entropy.mean())


def test_single_draws_are_the_forecasts_of_their_patchings():
    net = network(dropout=0.0, rollout_fraction=0.5, backbone_draws=2)
    x, _ = data()
    rollout = net.rollout(x)
    patcher_input, backbone_input, stats = net._normalise(x)
    rows = rollout.n_grouped * C
    starts = rollout.single_starts.reshape(-1, 1, N)  # (Bs*C, 1, N), window-major rows
    from reinpatch_forecast.nn.revin import InstanceStats

    expected = net._forecast(backbone_input[rows:], starts,
                             InstanceStats(stats.mean[rows:], stats.std[rows:]), B - 3, C)
    torch.testing.assert_close(rollout.single_prediction, expected[:, 0])


@pytest.mark.parametrize("backbone_draws", [None, 1])
def test_policy_gradient_comes_from_the_grouped_windows_only(backbone_draws):
    """Changing the windows without a group leaves the patcher's gradient unchanged."""
    x, y = data()
    other_x, other_y = x.clone(), y.clone()
    other_x[3:] = torch.randn(B - 3, L, C).cumsum(1) * 5
    other_y[3:] = torch.randn(B - 3, H, C)
    grads = []
    for inputs, targets in ((x, y), (other_x, other_y)):
        net = network(rollout_fraction=0.5, backbone_draws=backbone_draws)
        torch.manual_seed(11)
        losses = net.training_losses(inputs, targets)
        losses.loss.backward()
        grads.append([p.grad.clone() for p in net.patcher_parameters()])
        assert all(g.abs().sum() > 0 for g in grads[-1])
    for a, b in zip(*grads):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-7)


def test_single_draws_carry_no_patcher_graph():
    net = network(rollout_fraction=0.5)
    rollout = net.rollout(data()[0])
    # Only the grouped windows' log-probabilities and entropies reach the patcher.
    assert rollout.log_prob.requires_grad and rollout.log_prob.shape[0] == 3
    assert rollout.single_starts.dtype == torch.long
    assert rollout.single_prediction.requires_grad  # the backbone trains on them
