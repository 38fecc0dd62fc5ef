"""The at-most token budget: the density policy also picks how many of the ``N`` slots a
patching uses. Log-probabilities and starts against brute force, a new patcher decodes the
full uniform grid, unused slots change nothing the backbone reads, a GRPG step trains the
budget head, and bad combinations fail at construction."""

from __future__ import annotations

import math
from collections import Counter

import pytest
import torch
from scipy import stats

from reinpatch_forecast.nn import LearnedPatcher, ReinPatchConfig, ReinPatchNetwork
from reinpatch_forecast.nn.backbone import Backbone
from reinpatch_forecast.nn.grid import uniform_starts
from reinpatch_forecast.nn.policies import BUDGET_SHARES, budget_counts
from reinpatch_forecast.nn.readout import StepReadout
from reinpatch_forecast.nn.segments import patch_lengths

from nn_support import small_learned  # noqa: E402
from test_policies import brute_force_quantiles  # noqa: E402


def _fixed_scores(patcher, fine: torch.Tensor, shares: torch.Tensor, monkeypatch) -> None:
    """Every row scored with ``fine`` ``(L,)`` and budget-share scores ``shares`` ``(S,)``."""
    monkeypatch.setattr(patcher, "_scores", lambda x: (fine.expand(x.shape[0], -1), None,
                                                       shares.expand(x.shape[0], -1)))


def test_budget_counts_use_a_share_of_the_slots():
    assert budget_counts(12).tolist() == [12, 9, 6, 3]
    assert budget_counts(3).tolist() == [3, 3, 2, 1]
    assert budget_counts(1).tolist() == [1, 1, 1, 1]
    assert len(BUDGET_SHARES) == 4 and BUDGET_SHARES[0] == 1.0


@pytest.mark.parametrize("length, n_patches", [(96, 12), (100, 13), (40, 5)])
def test_a_new_at_most_patcher_decodes_the_full_uniform_grid(length, n_patches):
    patcher = small_learned(at_most=True)
    decoded = patcher.decode(torch.randn(3, length), n_patches)
    assert torch.equal(decoded.starts[:, 0], uniform_starts(length, n_patches).expand(3, -1))


@pytest.mark.parametrize("length, n_patches, knots", [(96, 12, 2), (100, 13, 3)])
def test_at_most_log_prob_and_starts_match_brute_force(monkeypatch, length, n_patches, knots):
    """Reconstruct each draw's action from the seeded noise and its share from the slots it
    uses: the log-probability is the Gaussian log-density (scipy) plus the share's log-softmax,
    the starts are the quantiles ``j / n`` (a plain loop) padded with ``L``; the shares are
    drawn with the softmax's frequencies."""
    sigma, group, rows = 0.7, 6, 2
    patcher = small_learned(density_sigma=sigma, density_knots=knots, at_most=True)
    torch.manual_seed(3)
    scores = torch.randn(length)
    shares = torch.tensor([0.3, -0.2, 0.5, 0.1])
    _fixed_scores(patcher, scores, shares, monkeypatch)
    _, _, steps = patcher.policy._cells(length, n_patches, torch.device("cpu"))
    mean = steps.means(scores[None])[0].double()  # (K,)
    torch.manual_seed(11)
    patching = patcher.sample(torch.zeros(rows, length), n_patches, group)
    torch.manual_seed(11)
    half = torch.randn(rows, group // 2, mean.shape[0])
    noise = torch.cat([half, -half], dim=1).double()
    log_share = torch.log_softmax(shares.double(), dim=0)
    counts = budget_counts(n_patches).tolist()
    shortest = min(2, int(patch_lengths(uniform_starts(length, n_patches), length).min()))
    for r in range(rows):
        for g in range(group):
            action = mean + sigma * noise[r, g]
            starts = patching.starts[r, g].tolist()
            used = sum(s < length for s in starts)
            share = counts.index(used)
            expected = (stats.norm.logpdf(action.numpy(), mean.numpy(), sigma).sum()
                        + log_share[share].item())
            assert patching.log_prob[r, g].item() == pytest.approx(expected, rel=1e-4)
            inner = brute_force_quantiles(action.tolist(), length, used, knots, shortest,
                                          cells_of=n_patches)
            assert starts == inner + [length] * (n_patches - used)
    probabilities = log_share.exp()
    kl_share = (probabilities * (log_share + math.log(len(BUDGET_SHARES)))).sum()
    kl = (mean**2).sum() / (2 * sigma**2) + kl_share
    assert patching.kl[0].item() == pytest.approx(kl.item(), rel=1e-5)

    # Frequencies of the shares over many draws.
    torch.manual_seed(5)
    many = patcher.sample(torch.zeros(1, length), n_patches, 4000)
    used = (many.starts[0] < length).sum(dim=-1).tolist()
    frequency = Counter(counts.index(u) for u in used)
    for share, p in enumerate(probabilities.tolist()):
        assert frequency[share] / 4000 == pytest.approx(p, abs=0.03)


def test_unused_slots_change_no_step_feature():
    """Starts ``[0, 6, 12, L, L]`` read the same step features as ``[0, 6, 12]``, whatever the
    unused tokens hold."""
    torch.manual_seed(0)
    readout = StepReadout(d_model=8, width=3)
    tokens = torch.randn(1, 5, 8)
    padded = readout(tokens, torch.tensor([[0, 6, 12, 36, 36]]), 36)
    exact = readout(tokens[:, :3], torch.tensor([[0, 6, 12]]), 36)
    torch.testing.assert_close(padded, exact)


def test_the_backbone_ignores_unused_slots():
    """A variable-token backbone with five slots, two unused, forecasts as the same weights
    with three exact slots: attention masks the empty tokens and no step reads them."""
    settings = dict(input_length=36, output_length=6,
                    backbone=dict(d_model=16, n_heads=2, dropout=0.0, resample_points=4))
    torch.manual_seed(0)
    variable = Backbone(ReinPatchConfig(compression_rate=7.5, budget="at_most",
                                        **settings)).eval()  # 5 slots
    exact = Backbone(ReinPatchConfig(compression_rate=12, **settings)).eval()  # 3 patches
    exact.load_state_dict(variable.state_dict())
    x = torch.randn(2, 36)
    padded = variable(x, torch.tensor([[0, 6, 12, 36, 36]]).expand(2, 1, -1).contiguous())
    reference = exact(x, torch.tensor([[0, 6, 12]]).expand(2, 1, -1).contiguous())
    torch.testing.assert_close(padded, reference)


def test_a_grpg_step_trains_the_budget_head_and_uses_fewer_tokens_when_sampled():
    torch.manual_seed(0)
    config = ReinPatchConfig(input_length=48, output_length=8, compression_rate=4,
                             backbone=dict(d_model=16, n_heads=2, dropout=0.0),
                             training=dict(group_size=8), budget="at_most")
    network = ReinPatchNetwork(config).train()
    x, y = torch.randn(6, 48, 2), torch.randn(6, 8, 2)
    losses = network.training_losses(x, y)
    assert torch.isfinite(losses.loss)
    losses.loss.backward()
    assert network.patcher.count_output.weight.grad.abs().sum() > 0
    _, samples = network._explore(network._normalise(x)[0], 8)
    used = (samples.starts < 48).sum(dim=-1)  # (R, G)
    assert set(used.unique().tolist()) > {12}  # the budget itself and fewer
    assert network.eval()(x).shape == (6, 8, 2, 1)


@pytest.mark.parametrize("bad, message", [
    (dict(budget="fewer"), "Unknown budget 'fewer'"),
    (dict(budget="at_most", patcher="uniform"), "patcher='uniform'"),
    (dict(budget="at_most", levels=2, compression_rate=(4, 2)), "levels=2"),
])
def test_bad_budget_settings_raise(bad, message):
    with pytest.raises(ValueError, match=message):
        ReinPatchConfig(input_length=48, output_length=8, **{"compression_rate": 4, **bad})


def test_a_given_patcher_must_fit_the_budget():
    config = ReinPatchConfig(input_length=48, output_length=8, compression_rate=4)
    with pytest.raises(ValueError, match="pass budget='at_most'"):
        ReinPatchNetwork(config, patcher=LearnedPatcher(at_most=True))


def test_an_at_most_patcher_needs_one_level():
    with pytest.raises(ValueError, match="levels=2"):
        LearnedPatcher(levels=2, at_most=True)
