"""Tests of :mod:`reinpatch_forecast.nn.grpg`: group-relative advantages and the policy loss."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from reinpatch_forecast.nn.grpg import SCALE_REWARDS, group_advantages, policy_loss

REWARDS = torch.tensor(
    [
        [1.0, 2.0, 3.0, 6.0],  # mean 3, centred -2 -1 0 3, population std sqrt(3.5)
        [4.0, 4.0, 4.0, 4.0],  # tied
        [-1.0, 1.0, -1.0, 1.0],  # mean 0, std 1
    ]
)
CENTRED = [[-2.0, -1.0, 0.0, 3.0], [0.0, 0.0, 0.0, 0.0], [-1.0, 1.0, -1.0, 1.0]]


def test_scale_none_only_centres():
    """'none': reward minus the group mean, by hand."""
    assert group_advantages(REWARDS, "none").tolist() == CENTRED


def test_scale_group_divides_by_each_groups_std():
    """'group': centred / (population std of the group + eps), by hand."""
    sd0 = math.sqrt((4 + 1 + 0 + 9) / 4)
    expected = torch.tensor([[c / sd0 for c in CENTRED[0]], CENTRED[1], CENTRED[2]])
    torch.testing.assert_close(group_advantages(REWARDS, "group", eps=0.0), expected)
    eps = 0.5
    expected_eps = torch.tensor(
        [[c / (sd0 + eps) for c in CENTRED[0]], CENTRED[1], [c / (1 + eps) for c in CENTRED[2]]]
    )
    torch.testing.assert_close(group_advantages(REWARDS, "group", eps=eps), expected_eps)
    # the default is "group" with a small eps
    torch.testing.assert_close(group_advantages(REWARDS), expected, rtol=1e-5, atol=1e-5)


def test_scale_batch_divides_by_the_std_of_all_centred_rewards():
    """'batch': centred / population std of all 12 centred rewards (tied rows included)."""
    sd = math.sqrt(sum(c * c for row in CENTRED for c in row) / 12)  # sqrt(18 / 12)
    assert sd == pytest.approx(math.sqrt(1.5))
    expected = torch.tensor([[c / sd for c in row] for row in CENTRED])
    torch.testing.assert_close(group_advantages(REWARDS, "batch", eps=0.0), expected)


@pytest.mark.parametrize("scale", SCALE_REWARDS)
@pytest.mark.parametrize("value", [0.0, 0.1, -3.7, 1e6 + 0.1, 1e-20])
def test_tied_group_gets_exactly_zero_advantages(scale, value):
    """All rewards equal: exactly zero, even when the float mean does not equal the value."""
    rewards = torch.cat([torch.full((1, 7), value), torch.tensor([[0.0, 1, 2, 3, 4, 5, 6]])])
    advantages = group_advantages(rewards, scale)
    assert torch.equal(advantages[0], torch.zeros(7))
    assert bool((advantages[1] != 0).any())


def test_unknown_scale_raises():
    """An unknown scale is refused, naming the valid ones."""
    with pytest.raises(ValueError, match="group.*batch.*none"):
        group_advantages(REWARDS, "std")
    with pytest.raises(ValueError, match="'std'"):
        policy_loss(REWARDS, torch.zeros(3, 4), torch.zeros(3), scale="std")


def test_advantages_are_detached():
    """Advantages carry no gradient back into the rewards."""
    rewards = REWARDS.clone().requires_grad_(True)
    for scale in SCALE_REWARDS:
        assert not group_advantages(rewards, scale).requires_grad


@settings(max_examples=40, deadline=None, derandomize=True, database=None)
@given(
    st.integers(1, 5),
    st.integers(2, 8),
    st.floats(-1e3, 1e3),
    st.floats(1e-2, 1e3),
    st.integers(0, 2**31 - 1),
)
def test_group_advantages_are_standardised(rows, group, shift, scale, seed):
    """'group': each group has mean 0 and std 1; shifting or scaling the rewards is a no-op."""
    rewards = torch.randn(rows, group, generator=torch.Generator().manual_seed(seed),
                          dtype=torch.float64)
    base = group_advantages(rewards, "group", eps=0.0)
    torch.testing.assert_close(base.mean(1), torch.zeros(rows, dtype=torch.float64))
    torch.testing.assert_close(base.std(1, unbiased=False), torch.ones(rows, dtype=torch.float64))
    moved = group_advantages(rewards * scale + shift, "group", eps=0.0)
    torch.testing.assert_close(moved, base, rtol=1e-6, atol=1e-6)


def test_policy_loss_value_and_diagnostics():
    """loss = -mean(A * log p) - coef * mean(entropy); diagnostics as documented."""
    rewards = torch.tensor([[1.0, 0.0], [2.0, 2.0]])
    log_prob = torch.tensor([[-1.0, -3.0], [-0.5, -0.7]])
    entropy = torch.tensor([2.0, 4.0])
    out = policy_loss(rewards, log_prob, entropy, entropy_coef=0.1, scale="none")
    # advantages: [[0.5, -0.5], [0, 0]]
    expected = -((0.5 * -1.0) + (-0.5 * -3.0)) / 4 - 0.1 * 3.0
    assert out.loss.item() == pytest.approx(expected)
    assert out.mean_reward.item() == pytest.approx(1.25)
    assert out.advantage_std.item() == pytest.approx(math.sqrt(0.5**2 * 2 / 4))
    assert out.entropy.item() == pytest.approx(3.0)
    tied = policy_loss(torch.ones(3, 4), torch.randn(3, 4), torch.zeros(3))
    assert tied.loss.item() == 0.0 and tied.advantage_std.item() == 0.0


@pytest.mark.parametrize("scale", SCALE_REWARDS)
def test_policy_loss_gradient_favours_the_better_draw(scale):
    """Raising the log-prob of the better draw lowers the loss; of the worse one, raises it."""
    rewards = torch.tensor([[-0.2, -1.5, -0.9]])  # draw 0 is best, draw 1 worst
    log_prob = torch.tensor([[-2.0, -2.0, -2.0]], requires_grad=True)
    entropy = torch.tensor([1.0], requires_grad=True)
    out = policy_loss(rewards, log_prob, entropy, entropy_coef=0.01, scale=scale)
    out.loss.backward()
    grad = log_prob.grad[0]
    assert grad[0] < 0 < grad[1]
    assert entropy.grad.item() == pytest.approx(-0.01)  # the entropy bonus lowers the loss
    # a finite step in the direction the gradient points
    with torch.no_grad():
        better = log_prob.clone()
        better[0, 0] += 0.1
        worse = log_prob.clone()
        worse[0, 1] += 0.1
    loss_better = policy_loss(rewards, better, entropy, 0.01, scale).loss
    loss_worse = policy_loss(rewards, worse, entropy, 0.01, scale).loss
    assert loss_better < out.loss < loss_worse
    # rewards never receive a gradient
    rewards_leaf = rewards.clone().requires_grad_(True)
    policy_loss(rewards_leaf, log_prob, entropy, 0.0, scale).loss.backward()
    assert rewards_leaf.grad is None
