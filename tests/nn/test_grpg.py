"""Tests of :mod:`reinpatch_forecast.nn.grpg`: self-critical advantages and the policy loss."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from reinpatch_forecast.nn.grpg import policy_loss, self_critical_advantages

SAMPLES = torch.tensor([[1.0, 2.0, 3.0], [4.0, 4.0, 4.0]])
DECODE = torch.tensor([2.0, 4.0])
DIFFERENCES = [[-1.0, 0.0, 1.0], [0.0, 0.0, 0.0]]


def test_advantage_is_sample_minus_decode_over_the_batch_std():
    """By hand: differences -1 0 1 / 0 0 0, population std of all six sqrt(2/6)."""
    scale = math.sqrt(2 / 6)
    expected = torch.tensor([[d / scale for d in row] for row in DIFFERENCES])
    torch.testing.assert_close(self_critical_advantages(SAMPLES, DECODE, eps=0.0), expected)


def test_a_group_tied_with_its_decode_gets_zero_while_others_do_not():
    advantages = self_critical_advantages(SAMPLES, DECODE)
    assert torch.equal(advantages[1], torch.zeros(3))
    assert bool((advantages[0] != 0).any())


@pytest.mark.parametrize("value", [0.0, -3.7, 1e6 + 0.1])
def test_every_sample_tied_gives_exactly_zero(value):
    """No signal, no step: exactly zero (not rounding noise divided by eps)."""
    rewards = torch.full((3, 5), value)
    assert torch.equal(self_critical_advantages(rewards, rewards[:, 0]), torch.zeros(3, 5))


def test_noise_is_not_blown_up_per_group():
    """A row whose samples differ from the decode by 1e-6 stays tiny next to a row with real
    differences (a per-group std would give both unit-size advantages)."""
    samples = torch.tensor([[1e-6, -1e-6], [1.0, -1.0]])
    advantages = self_critical_advantages(samples, torch.zeros(2))
    assert advantages[0].abs().max() < 1e-5 and advantages[1].abs().min() > 0.5


def test_advantages_are_detached():
    samples = torch.randn(4, 3, requires_grad=True)
    decode = torch.randn(4, requires_grad=True)
    assert not self_critical_advantages(samples, decode).requires_grad


@settings(max_examples=30, deadline=None)
@given(rows=st.integers(1, 6), group=st.integers(1, 6), seed=st.integers(0, 1000))
def test_scaled_advantages_have_unit_batch_std(rows, group, seed):
    if rows * group == 1:  # one advantage: no spread to scale by, and it is zero
        assert torch.equal(self_critical_advantages(torch.ones(1, 1), torch.zeros(1)),
                           torch.zeros(1, 1))
        return
    generator = torch.Generator().manual_seed(seed)
    samples = torch.randn(rows, group, generator=generator)
    advantages = self_critical_advantages(samples, torch.randn(rows, generator=generator))
    assert advantages.std(unbiased=False).item() == pytest.approx(1.0, rel=1e-4)


def test_policy_loss_value_and_kl_term():
    advantages = torch.tensor([[1.0, -1.0]])
    log_prob = torch.tensor([[-0.5, -2.0]], requires_grad=True)
    kl = torch.tensor([0.3, 0.1], requires_grad=True)
    result = policy_loss(advantages, log_prob, kl, kl_coef=0.5)
    expected = -(1.0 * -0.5 + -1.0 * -2.0) / 2 + 0.5 * 0.2
    assert result.loss.item() == pytest.approx(expected)
    assert result.kl.item() == pytest.approx(0.2) and not result.kl.requires_grad
    result.loss.backward()
    torch.testing.assert_close(log_prob.grad, torch.tensor([[-0.5, 0.5]]))
    torch.testing.assert_close(kl.grad, torch.tensor([0.25, 0.25]))


def test_policy_gradient_raises_the_better_sample():
    """A step on the loss makes the sample with the positive advantage more likely."""
    logits = torch.zeros(1, 2, requires_grad=True)
    log_p = torch.log_softmax(logits, dim=-1)  # two samples: choice 0 and choice 1
    advantages = self_critical_advantages(torch.tensor([[1.0, -1.0]]), torch.zeros(1))
    policy_loss(advantages, log_p, torch.zeros(1)).loss.backward()
    with torch.no_grad():
        after = torch.softmax(logits - 0.1 * logits.grad, dim=-1)
    assert after[0, 0] > 0.5
