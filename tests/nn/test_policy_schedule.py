"""The benchmarks' schedule variants (``benchmarks/variants.py``): warm-up epochs with the
backbone alone, and the KL anchor's weight held or lowered linearly; bad values fail at
construction. The package's step always trains the patcher with the constant anchor."""

from __future__ import annotations

import pytest
import torch

from nn_support import variants  # noqa: E402


class _Schedule:
    """The schedule of a variant configuration, as the darts module's epoch hook sees it."""

    def __init__(self, config):
        self.config = config

    def policy_schedule(self, epoch, n_epochs):
        return self.config.ablation.policy_schedule(epoch, n_epochs,
                                                    self.config.training.kl_coef)


def _config(**settings):
    return variants.VariantConfig(
        input_length=32, output_length=8, compression_rate=4,
        backbone=dict(d_model=16, n_heads=2, dropout=0.0),
        training=dict(group_size=3, kl_coef=0.2), ablation=settings)


def ReinPatchNetwork(config):
    return variants.VariantNetwork(config)


def test_warmup_epochs_train_the_backbone_alone():
    config = _Schedule(_config(patcher_warmup=2))
    assert config.policy_schedule(0, 6) == (False, 0.0)
    assert config.policy_schedule(1, 6) == (False, 0.0)
    assert config.policy_schedule(2, 6) == (True, 0.2)
    assert config.policy_schedule(5, 6) == (True, 0.2)


def test_linear_schedule_lowers_the_anchor_over_the_policy_epochs():
    config = _Schedule(_config(patcher_warmup=2, kl_schedule="linear"))
    weights = [config.policy_schedule(epoch, 6)[1] for epoch in range(2, 6)]
    assert weights == pytest.approx([0.2, 0.15, 0.1, 0.05])
    # Epochs beyond the plan (a fit continued) keep the anchor at 0, never below.
    assert config.policy_schedule(9, 6) == (True, 0.0)
    # Without a planned length the anchor stays at kl_coef.
    assert config.policy_schedule(3, None) == (True, 0.2)


def test_a_step_without_the_patcher_draws_no_group_and_leaves_the_patcher_untouched():
    torch.manual_seed(0)
    network = ReinPatchNetwork(_config()).train()
    x, y = torch.randn(4, 32, 1), torch.randn(4, 8, 1)
    generator_state = network.sampling_generator(x.device).get_state()
    losses = network.training_losses(x, y, train_patcher=False)
    assert losses.policy_loss.item() == 0.0
    assert torch.equal(network.sampling_generator(x.device).get_state(), generator_state)
    losses.loss.backward()
    assert all(p.grad is None or not p.grad.any() for p in network.patcher_parameters())
    assert network.backbone.head.weight.grad.abs().sum() > 0
    # The warm-up step's forecast is that of the decode (the uniform grid of a new patcher).
    with torch.no_grad():
        torch.testing.assert_close(losses.prediction.detach(), network.eval()(x))
    # The network's own epoch in the warm-up: the same step.
    torch.manual_seed(0)
    warm = ReinPatchNetwork(_config(patcher_warmup=1)).train()
    warm.schedule_epoch = (0, 3)
    assert warm.training_losses(x, y).policy_loss.item() == 0.0


def test_the_step_uses_the_given_kl_weight():
    x, y = torch.randn(4, 32, 1), torch.randn(4, 8, 1)
    results = []
    for kl_coef in (0.0, 5.0):
        torch.manual_seed(0)
        network = ReinPatchNetwork(_config()).train()
        # A moved policy, so that its KL to the reference is not 0.
        torch.nn.init.normal_(network.patcher.output.weight, std=0.5)
        torch.manual_seed(1)
        results.append(network.training_losses(x, y, kl_coef=kl_coef))
    without, strong = results
    assert strong.kl > 0
    torch.testing.assert_close(strong.policy_loss - without.policy_loss, 5.0 * strong.kl)


@pytest.mark.parametrize("bad,message", [
    (dict(patcher_warmup=-1), "patcher_warmup must be an integer >= 0"),
    (dict(patcher_warmup=1.5), "patcher_warmup must be an integer >= 0"),
    (dict(patcher_warmup=True), "patcher_warmup must be an integer >= 0"),
    (dict(kl_schedule="cosine"), "Unknown kl_schedule 'cosine'"),
])
def test_bad_schedule_settings_raise(bad, message):
    with pytest.raises(ValueError, match=message):
        _config(**bad)
