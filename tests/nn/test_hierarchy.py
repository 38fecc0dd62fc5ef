"""Tests of two-level (hierarchical) patching: patchers, segment helpers, backbone and network.

The two-level policy draws the fine starts (the density policy), then the coarse starts as
categorical offsets of the uniform grid on the fine-token axis of the same draw (checked against
a plain loop in ``test_policies.py``); its log-probability is the sum over the two levels.
"""

from __future__ import annotations


import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from reinpatch_forecast.nn import policy_loss
from reinpatch_forecast.nn.network import ReinPatchConfig, ReinPatchNetwork
from reinpatch_forecast.nn.patchers import (
    PATCHER_NAMES,
    LearnedPatcher,
    RandomPatcher,
    UniformPatcher,
    VolatilityPatcher,
    make_patcher,
    uniform_starts,
)
from reinpatch_forecast.nn.policies import coarse_offsets
from reinpatch_forecast.nn.segments import (
    coarse_token_budget,
    coarse_token_starts,
    patch_lengths,
    pool_tokens,
)

from nn_support import SETTINGS, small_backbone, small_config  # noqa: E402
from nn_support import make as _make  # noqa: E402
from nn_support import small_learned as _small_learned  # noqa: E402


# -- helpers -------------------------------------------------------------------------------------


def small_learned(levels: int = 2, **kwargs) -> LearnedPatcher:
    return _small_learned(levels, **kwargs)


def make(name: str, levels: int = 2):
    return _make(name, levels)


def with_fixed_level_logits(patcher, fine, coarse, monkeypatch) -> None:
    """Make ``patcher.level_logits`` return ``fine`` and ``coarse`` ``(L,)`` for every row."""
    monkeypatch.setattr(
        patcher, "level_logits",
        lambda x: (fine.expand(x.shape[0], -1), coarse.expand(x.shape[0], -1)),
    )


def assert_nested(patching, rows, group, length, n_patches, n_coarse):
    """Both levels are well formed, exact budgets, and the coarse starts are fine starts."""
    starts, coarse = patching.starts, patching.coarse_starts
    assert starts.shape == (rows, group, n_patches) and starts.dtype == torch.long
    assert coarse is not None
    assert coarse.shape == (rows, group, n_coarse) and coarse.dtype == torch.long
    for level in (starts, coarse):
        assert bool((level[..., 0] == 0).all())  # start 0 at both levels
        assert bool((level.diff(dim=-1) > 0).all())  # sorted and unique
        assert bool(((level >= 0) & (level < length)).all())
    assert bool((patch_lengths(starts, length).sum(-1) == length).all())
    # nesting, for every row and every draw: each coarse start equals some fine start
    assert bool((coarse.unsqueeze(-1) == starts.unsqueeze(-2)).any(-1).all())
    assert patching.log_prob.shape == (rows, group)
    assert patching.entropy.shape == (rows,)
    assert bool(torch.isfinite(patching.log_prob).all())
    assert bool(torch.isfinite(patching.entropy).all())


# -- segment helpers -----------------------------------------------------------------------------


def nested_starts(rows: int, length: int, n_patches: int, n_coarse: int, seed: int = 0):
    """Random nested patchings ``(rows, N1)``, ``(rows, N2)`` built by a loop."""
    generator = torch.Generator().manual_seed(seed)
    fine = torch.zeros(rows, n_patches, dtype=torch.long)
    coarse = torch.zeros(rows, n_coarse, dtype=torch.long)
    for r in range(rows):
        chosen = torch.sort(torch.randperm(length - 1, generator=generator)[: n_patches - 1] + 1)
        fine[r, 1:] = chosen.values
        pick = torch.randperm(n_patches - 1, generator=generator)[: n_coarse - 1]
        coarse[r, 1:] = torch.sort(fine[r, 1:][pick]).values
    return fine, coarse


@SETTINGS
@given(length=st.integers(2, 60), data=st.data())
def test_coarse_token_starts_and_pooling_match_loops(length, data):
    """Token starts index the coarse starts among the fine ones; a pooled token is the plain
    mean of the fine tokens of its coarse patch (both against loops)."""
    n_patches = data.draw(st.integers(1, length))
    n_coarse = data.draw(st.integers(1, n_patches))
    fine, coarse = nested_starts(3, length, n_patches, n_coarse, seed=length)
    token_starts = coarse_token_starts(fine, coarse)
    tokens = torch.randn(3, n_patches, 5, dtype=torch.float64)
    pooled = pool_tokens(tokens, token_starts)
    assert pooled.shape == (3, n_coarse, 5)
    for r in range(3):
        coarse_of_fine = [sum(c <= s for c in coarse[r].tolist()) - 1 for s in fine[r].tolist()]
        assert token_starts[r].tolist() == [fine[r].tolist().index(c) for c in coarse[r].tolist()]
        for i in range(n_coarse):
            members = [j for j in range(n_patches) if coarse_of_fine[j] == i]
            torch.testing.assert_close(pooled[r, i], tokens[r, members].mean(0))


def test_coarse_token_budget_and_errors():
    """N2 = ceil(N1 / R2); R2 outside [1, N1] is refused with a message saying what to use."""
    assert coarse_token_budget(24, 4) == 6
    assert coarse_token_budget(25, 4) == 7
    assert coarse_token_budget(5, 5) == 1
    assert coarse_token_budget(5, 1) == 5
    with pytest.raises(ValueError, match=r"R2 <= 5"):
        coarse_token_budget(5, 6)
    for bad in (0.5, float("nan"), True, "4"):
        with pytest.raises(ValueError, match=r"R2 must be a finite number >= 1"):
            coarse_token_budget(5, bad)


# -- every patcher at two levels ----------------------------------------------------------------


@SETTINGS
@given(name=st.sampled_from(PATCHER_NAMES), length=st.integers(2, 80), data=st.data())
def test_every_patcher_nests_both_levels(name, length, data):
    """sample and decode: exact budgets, sorted, unique, 0 at both levels, coarse in fine."""
    n_patches = data.draw(st.integers(1, length))
    n_coarse = data.draw(st.integers(1, n_patches))
    rows = data.draw(st.integers(1, 3))
    group = data.draw(st.integers(1, 4))
    patcher = make(name)
    torch.manual_seed(length)
    x = torch.randn(rows, length)
    sampled = patcher.sample(x, n_patches, group, n_coarse_patches=n_coarse)
    assert_nested(sampled, rows, group, length, n_patches, n_coarse)
    decoded = patcher.decode(x, n_patches, n_coarse_patches=n_coarse)
    assert_nested(decoded, rows, 1, length, n_patches, n_coarse)


@pytest.mark.parametrize("name", PATCHER_NAMES)
def test_nesting_on_a_large_group(name):
    """Many draws (G = 64) on L = 96, N1 = 24, N2 = 6: every draw of every row is nested."""
    patcher = make(name)
    torch.manual_seed(1)
    x = torch.randn(8, 96).cumsum(-1)
    assert_nested(patcher.sample(x, 24, 64, n_coarse_patches=6), 8, 64, 96, 24, 6)
    assert_nested(patcher.decode(x, 24, n_coarse_patches=6), 8, 1, 96, 24, 6)


@pytest.mark.parametrize("name", PATCHER_NAMES)
def test_level_budget_extremes(name):
    """N2 = 1 gives the coarse patch [0, L); N2 = N1 makes the levels equal."""
    patcher = make(name)
    x = torch.randn(2, 20)
    one = patcher.sample(x, 5, 3, n_coarse_patches=1)
    assert one.coarse_starts.shape == (2, 3, 1) and bool((one.coarse_starts == 0).all())
    same = patcher.sample(x, 5, 3, n_coarse_patches=5)
    assert torch.equal(same.coarse_starts, same.starts)
    every = patcher.decode(x, 20, n_coarse_patches=20)
    assert bool((every.coarse_starts == torch.arange(20)).all())
    single = patcher.sample(x, 1, 2, n_coarse_patches=1)  # one patch at both levels
    assert_nested(single, 2, 2, 20, 1, 1)
    assert torch.equal(single.log_prob, torch.zeros(2, 2))


@pytest.mark.parametrize("name", PATCHER_NAMES)
def test_levels_and_budget_arguments_must_agree(name):
    """levels=1 refuses n_coarse_patches; levels=2 needs it, between 1 and N1; levels is 1 or 2."""
    x = torch.randn(2, 30)
    one = make(name, levels=1)
    with pytest.raises(ValueError, match=r"levels=1.*levels=2"):
        one.sample(x, 6, 2, n_coarse_patches=2)
    with pytest.raises(ValueError, match=r"levels=1"):
        one.decode(x, 6, n_coarse_patches=2)
    assert one.decode(x, 6).coarse_starts is None
    two = make(name, levels=2)
    assert two.levels == 2
    with pytest.raises(ValueError, match=r"pass n_coarse_patches"):
        two.sample(x, 6, 2)
    with pytest.raises(ValueError, match=r"between 1 and n_patches=6"):
        two.decode(x, 6, n_coarse_patches=7)
    with pytest.raises(ValueError, match=r"levels must be 1 .* or 2"):
        make_patcher(name, levels=3)


@pytest.mark.parametrize("name", PATCHER_NAMES)
def test_two_level_decode_is_deterministic_and_matches_level_one(name):
    """decode repeats itself; its fine starts equal those of the levels=1 patcher (same rule)."""
    x = torch.randn(4, 48)
    two = make(name, levels=2)
    first = two.decode(x, 8, n_coarse_patches=3)
    torch.rand(100)  # move the global generator
    second = two.decode(x, 8, n_coarse_patches=3)
    assert torch.equal(first.starts, second.starts)
    assert torch.equal(first.coarse_starts, second.coarse_starts)
    one = make(name, levels=1)
    if name == "learned":  # the same seed gives the same shared weights
        assert set(one.state_dict()) < set(two.state_dict())
        for key, value in one.state_dict().items():
            assert torch.equal(value, two.state_dict()[key]), key
    assert torch.equal(first.starts, one.decode(x, 8).starts)


# -- the reference patchers' level-2 rules --------------------------------------------------------


@pytest.mark.parametrize("rates", [(4, 4), (2, 8), (3, 2), (1, 12)])
def test_uniform_level_two_is_the_uniform_grid_at_r1_times_r2(rates):
    """With L a multiple of R1 * R2, coarse starts are 0, R1 R2, 2 R1 R2, ... (every R2-th)."""
    r1, r2 = rates
    length = 96
    n_patches, n_coarse = length // r1, length // (r1 * r2)
    out = UniformPatcher(levels=2).sample(torch.randn(2, length), n_patches, 3,
                                          n_coarse_patches=n_coarse)
    assert out.starts[0, 0].tolist() == list(range(0, length, r1))
    assert out.coarse_starts.tolist() == [[list(range(0, length, r1 * r2))] * 3] * 2
    assert torch.equal(out.coarse_starts[0, 0], uniform_starts(length, n_coarse))


def test_uniform_level_two_when_not_divisible_takes_every_r2th_from_the_end():
    """L = 40, N1 = 10, N2 = 4: every 3rd fine start counted from the window's end, plus 0."""
    out = UniformPatcher(levels=2).decode(torch.randn(1, 40), 10, n_coarse_patches=4)
    assert out.starts[0, 0].tolist() == list(range(0, 40, 4))
    assert out.coarse_starts[0, 0].tolist() == [0, 4, 16, 28]


def test_volatility_level_two_picks_the_largest_jumps_among_the_fine_starts():
    """Jumps of size 5 > 4 > 3 > 2: coarse = 0 and the N2 - 1 largest, fine = the N1 - 1 largest."""
    torch.manual_seed(0)
    x = 0.01 * torch.randn(2, 80)
    for t, size in {13: 5.0, 31: -4.0, 52: 3.0, 70: -2.0}.items():
        x[:, t:] += size
    out = VolatilityPatcher(levels=2).decode(x, 5, n_coarse_patches=3)
    assert out.starts.tolist() == [[[0, 13, 31, 52, 70]]] * 2
    assert out.coarse_starts.tolist() == [[[0, 13, 31]]] * 2
    group = VolatilityPatcher(levels=2).sample(x, 4, 3, n_coarse_patches=2)
    assert group.coarse_starts.tolist() == [[[0, 13]] * 3] * 2


def test_random_level_two_is_a_uniform_subset_of_the_fine_starts():
    """Each nonzero fine start becomes a coarse start with probability (N2-1)/(N1-1); seeded."""
    patcher = RandomPatcher(levels=2)
    torch.manual_seed(3)
    out = patcher.sample(torch.zeros(50, 40), 6, 40, n_coarse_patches=3)  # 2000 draws
    chosen = (out.starts[..., 1:].unsqueeze(-1) == out.coarse_starts[..., 1:].unsqueeze(-2))
    per_slot = chosen.any(-1).reshape(-1, 5).sum(0).tolist()  # which sorted fine slot was picked
    n_draws = 2000
    expected = [n_draws * 2 / 5] * 5
    assert stats.chisquare(per_slot, expected).pvalue > 1e-3
    # decode is repeatable (its own seeded generator) and sample follows the global seed
    a = patcher.decode(torch.zeros(4, 40), 6, n_coarse_patches=3)
    b = RandomPatcher(levels=2).decode(torch.zeros(4, 40), 6, n_coarse_patches=3)
    assert torch.equal(a.coarse_starts, b.coarse_starts)
    torch.manual_seed(5)
    s1 = patcher.sample(torch.zeros(4, 40), 6, 3, n_coarse_patches=3)
    torch.manual_seed(5)
    s2 = patcher.sample(torch.zeros(4, 40), 6, 3, n_coarse_patches=3)
    assert torch.equal(s1.coarse_starts, s2.coarse_starts)
    # the fine level of a two-level random patcher is the levels=1 draw (coarse drawn after)
    torch.manual_seed(5)
    assert torch.equal(RandomPatcher().sample(torch.zeros(4, 40), 6, 3).starts, s1.starts)


# -- the learned policy at two levels ----------------------------------------------------------


def test_two_level_log_prob_entropy_and_kl_sum_the_levels(monkeypatch):
    """A draw's log-probability, entropy and KL are the fine level's (the density policy on
    the fine scores) plus the coarse level's (offsets among that draw's fine starts)."""
    patcher = small_learned()
    fine, coarse = torch.randn(2, 40, generator=torch.Generator().manual_seed(3))
    with_fixed_level_logits(patcher, fine, coarse, monkeypatch)
    out = patcher.decode(torch.zeros(2, 40), 8, n_coarse_patches=3)
    one = patcher.policy.draw(fine.expand(2, -1), 8, 1, False)
    two = coarse_offsets(coarse.expand(2, -1), one.starts, 3, 1.0, False)
    assert torch.equal(out.starts, one.starts) and torch.equal(out.coarse_starts, two.starts)
    torch.testing.assert_close(out.log_prob, one.log_prob + two.log_prob)
    torch.testing.assert_close(out.entropy, one.entropy + two.entropy)
    torch.testing.assert_close(out.kl, one.kl + two.kl)


def test_two_level_sample_follows_the_seed_and_explores_both_levels():
    """Same seed, same draws; within a group both the fine and the coarse starts vary."""
    patcher = small_learned()
    x = torch.randn(3, 64)
    torch.manual_seed(9)
    a = patcher.sample(x, 16, 8, n_coarse_patches=4)
    torch.manual_seed(9)
    b = patcher.sample(x, 16, 8, n_coarse_patches=4)
    assert torch.equal(a.starts, b.starts) and torch.equal(a.coarse_starts, b.coarse_starts)
    torch.testing.assert_close(a.log_prob, b.log_prob)
    assert len({tuple(s) for s in a.starts[0].tolist()}) > 1
    assert len({tuple(s) for s in a.coarse_starts[0].tolist()}) > 1


# -- gradients -------------------------------------------------------------------------------------


def test_policy_loss_reaches_both_logit_heads():
    """The GRPG loss of a two-level draw (no KL term) has gradients in both heads."""
    patcher = small_learned(scored=True)
    torch.manual_seed(2)
    patching = patcher.sample(torch.randn(4, 48), 8, 6, n_coarse_patches=3)
    assert not patching.starts.requires_grad and not patching.coarse_starts.requires_grad
    advantages = torch.randn(4, 6)
    result = policy_loss(advantages, patching.log_prob, patching.kl, kl_coef=0.0)
    result.loss.backward()
    for head in (patcher.output, patcher.coarse_output, patcher.input_proj):
        assert head.weight.grad is not None and head.weight.grad.abs().sum() > 0


def test_coarse_head_gets_no_gradient_from_a_single_coarse_patch():
    """With N2 = 1 level 2 chooses nothing: the coarse head's log-prob term is constant."""
    patcher = small_learned(scored=True)
    patching = patcher.sample(torch.randn(2, 30), 6, 4, n_coarse_patches=1)
    patching.log_prob.sum().backward()
    grad = patcher.coarse_output.weight.grad
    assert grad is None or grad.abs().sum() == 0
    assert patcher.output.weight.grad.abs().sum() > 0


# -- levels=1 has no level-2 parts ----------------------------------------------------------------


def test_level_one_learned_patcher_holds_only_level_one_parameters():
    """A levels=1 patcher holds only the level-1 parameters (pretrained files load by name);
    levels=2 adds one head."""
    one = LearnedPatcher(hidden_size=8, n_layers=2)
    expected = ["input_proj.weight", "input_proj.bias"]
    for i in range(2):
        expected += [f"blocks.{i}.conv.weight", f"blocks.{i}.conv.bias",
                     f"blocks.{i}.norm.weight", f"blocks.{i}.norm.bias"]
    expected += ["output.weight", "output.bias"]
    assert list(one.state_dict()) == expected
    assert one.levels == 1 and not hasattr(one, "coarse_output")
    two = LearnedPatcher(hidden_size=8, n_layers=2, levels=2)
    assert list(two.state_dict()) == expected + ["coarse_output.weight", "coarse_output.bias"]


def test_level_one_backbone_and_network_have_no_coarse_modules():
    """No coarse module at levels=1; n_coarse_patches is None; coarse_boundaries refuses."""
    config = ReinPatchConfig(input_length=32, output_length=4, compression_rate=4,
                             backbone=dict(d_model=8, n_heads=2, n_layers=1),
                             training=dict(group_size=2))
    assert config.n_coarse_patches is None
    net = ReinPatchNetwork(config)
    assert not any("coarse" in key for key in net.state_dict())
    assert net.backbone.head.in_features == 8 * 8
    losses = net.training_losses(torch.randn(2, 32, 1), torch.randn(2, 4, 1))
    assert bool(torch.isfinite(losses.loss))
    with pytest.raises(ValueError, match=r"levels=2"):
        net.coarse_boundaries(torch.randn(2, 32, 1))


# -- configuration ---------------------------------------------------------------------------------


def hier_config(**overrides) -> ReinPatchConfig:
    values = dict(
        input_length=48, output_length=5, n_channels=2, compression_rate=(4, 3), levels=2,
        group_size=4, d_model=16, n_heads=2, n_layers=1, patcher_hidden_size=8,
        patcher_layers=2, resample_points=4,
    )
    values.update(overrides)
    return small_config(**values)


def test_config_budgets_at_two_levels():
    """(R1, R2) gives N1 = ceil(L / R1) and N2 = ceil(N1 / R2); a list becomes a tuple."""
    config = hier_config(input_length=96, compression_rate=(4, 4))
    assert (config.n_patches, config.n_coarse_patches) == (24, 6)
    config = hier_config(input_length=50, compression_rate=[3, 4])
    assert config.compression_rate == (3, 4)
    assert (config.n_patches, config.n_coarse_patches) == (17, 5)
    assert ReinPatchConfig(**config.to_dict()) == config
    config = hier_config(input_length=50, compression_rate=(2.5, 1.5))  # rates need not be whole
    assert (config.n_patches, config.n_coarse_patches) == (20, 14)


@pytest.mark.parametrize(
    "overrides, message",
    [
        (dict(levels=3), r"levels must be 1 .* or 2"),
        (dict(levels=0), r"levels must be 1 .* or 2"),
        (dict(compression_rate=4), r"levels=2 needs compression_rate=\(R1, R2\)"),
        (dict(compression_rate=(4,)), r"levels=2 needs compression_rate=\(R1, R2\)"),
        (dict(compression_rate=(4, 2, 2)), r"levels=2 needs compression_rate=\(R1, R2\)"),
        (dict(compression_rate=(4, "2")), r"two finite numbers >= 1"),
        (dict(compression_rate=(4, 13)), r"R2 <= 12"),  # N1 = 12
        (dict(compression_rate=(4, 0.5)), r"R2 must be a finite number >= 1"),
        (dict(compression_rate=(60, 1)), r"compression_rate=60 is larger than the lookback"),
        (dict(compression_rate=(0.5, 2)), r"compression_rate must be >= 1"),
        (dict(levels=1), r"is a sequence but levels=1"),
        (dict(levels=1, compression_rate=[4]), r"is a sequence but levels=1"),
    ],
)
def test_config_validation(overrides, message):
    with pytest.raises(ValueError, match=message):
        hier_config(**overrides)


def test_backbone_config_and_forward_check_the_levels():
    """n_coarse_patches in [1, N]; the backbone needs coarse starts exactly at two levels."""
    two = small_backbone(32, 4, 8, n_coarse_patches=2, d_model=8, n_heads=2)
    one = small_backbone(32, 4, 8, d_model=8, n_heads=2)
    x = torch.randn(3, 32)
    patching = UniformPatcher(levels=2).sample(x, 8, 2, n_coarse_patches=2)
    assert two(x, patching.starts, coarse_starts=patching.coarse_starts).shape == (6, 4, 1)
    assert two.head.in_features == 32 * two.config.step_width  # a head over the steps
    with pytest.raises(ValueError, match=r"pass coarse_starts"):
        two(x, patching.starts)
    with pytest.raises(ValueError, match=r"coarse_starts must be None"):
        one(x, patching.starts, coarse_starts=patching.coarse_starts)


def test_network_refuses_a_patcher_of_the_other_level_count():
    with pytest.raises(ValueError, match=r"patcher has levels=1 .* levels=2"):
        ReinPatchNetwork(hier_config(), patcher=LearnedPatcher(hidden_size=4, n_layers=1))
    with pytest.raises(ValueError, match=r"patcher has levels=2 .* levels=1"):
        ReinPatchNetwork(hier_config(levels=1, compression_rate=4),
                         patcher=UniformPatcher(levels=2))


# -- network -------------------------------------------------------------------------------------


@pytest.mark.parametrize("patcher", PATCHER_NAMES)
def test_network_shapes_at_two_levels(patcher):
    """forward (B,H,C,Q); boundaries (B,C,N1); coarse_boundaries (B,C,N2) nested in them."""
    torch.manual_seed(0)
    net = ReinPatchNetwork(hier_config(patcher=patcher, nr_params=2))
    x = torch.randn(3, 48, 2).cumsum(1)
    out = net(x)
    assert out.shape == (3, 5, 2, 2) and bool(torch.isfinite(out).all())
    fine, coarse = net.boundaries(x), net.coarse_boundaries(x)
    assert fine.shape == (3, 2, 12) and coarse.shape == (3, 2, 4)
    assert bool((coarse.unsqueeze(-1) == fine.unsqueeze(-2)).any(-1).all())
    assert bool((coarse[..., 0] == 0).all()) and bool((coarse.diff(dim=-1) > 0).all())
    losses = net.training_losses(x, torch.randn(3, 5, 2))
    assert losses.prediction.shape == (3, 5, 2, 2) and bool(torch.isfinite(losses.loss))


def test_training_step_rows_line_up_at_two_levels(monkeypatch):
    """Each scored forecast (b, g, c) is x[b, :, c] under that row's patching g at both levels
    (the decode first, then the samples)."""
    torch.manual_seed(0)
    net = ReinPatchNetwork(hier_config(dropout=0.0, scored_share=1.0))
    seen = {}
    explore = net.patcher.explore

    def recording_explore(x, n_patches, group_size, **kwargs):
        seen["draws"] = explore(x, n_patches, group_size, **kwargs)
        return seen["draws"]

    def sample_loss(prediction, target):
        seen["forecasts"] = prediction
        return (prediction[..., 0] - target) ** 2

    monkeypatch.setattr(net.patcher, "explore", recording_explore)
    x = torch.randn(2, 48, 2).cumsum(1)
    net.training_losses(x, torch.randn(2, 5, 2), sample_loss=sample_loss)
    decoded, samples = seen["draws"]
    starts = torch.cat([decoded.starts, samples.starts], dim=1)  # (R, 5, N1)
    coarse = torch.cat([decoded.coarse_starts, samples.coarse_starts], dim=1)  # (R, 5, N2)
    # scored rows b * C + c, each its own series: (R*(1+G), H, 1, Q) -> (B, 1+G, H, C, Q)
    forecasts = seen["forecasts"].reshape(2, 2, 5, 5, 1).permute(0, 2, 3, 1, 4)
    series = x.transpose(1, 2).reshape(4, 48)
    stats_ = net.revin.statistics(series)
    normalised = net.revin.normalise(series, stats_)
    for b in range(2):
        for c in range(2):
            r = b * 2 + c
            for g in range(5):
                alone = net.backbone(normalised[r:r + 1], starts[r:r + 1, g:g + 1],
                                     coarse_starts=coarse[r:r + 1, g:g + 1])
                expected = alone[0, :, 0] * stats_.std[r] + stats_.mean[r]
                torch.testing.assert_close(forecasts[b, g, :, c, 0], expected,
                                           rtol=1e-4, atol=1e-4)


def test_coarse_boundaries_agree_with_forward_and_frozen_training():
    """A frozen policy trains on the same two-level decode as coarse_boundaries and forward."""
    torch.manual_seed(0)
    net = ReinPatchNetwork(hier_config(dropout=0.0))
    net.patcher.freeze()
    x = torch.randn(3, 48, 2)
    losses = net.training_losses(x, torch.randn(3, 5, 2))
    torch.testing.assert_close(losses.prediction, net(x), rtol=0, atol=0)
    coarse = net.coarse_boundaries(x)
    assert coarse.shape == (3, 2, 4)
    assert bool((coarse.unsqueeze(-1) == net.boundaries(x).unsqueeze(-2)).any(-1).all())


def test_training_losses_at_two_levels_train_every_part():
    """One backward reaches both patcher heads and the fine and coarse backbone layers."""
    torch.manual_seed(0)
    net = ReinPatchNetwork(hier_config())
    x = torch.randn(3, 48, 2).cumsum(1)
    y = torch.randn(3, 5, 2)
    losses = net.training_losses(x, y)
    for value in (losses.loss, losses.backbone_loss, losses.policy_loss, losses.kl):
        assert value.shape == () and bool(torch.isfinite(value))
    assert losses.mean_patch_length.item() == pytest.approx(48 / 12)
    losses.loss.backward()
    parts = {
        "fine head": net.patcher.output.weight,
        "coarse head": net.patcher.coarse_output.weight,
        "fine layers": net.backbone.layers[0].ff_in.weight,
        "coarse layers": net.backbone.coarse_layers[0].ff_in.weight,
        "coarse positions": net.backbone.coarse_position_proj.weight,
        "head": net.backbone.head.weight,
    }
    for name, parameter in parts.items():
        assert parameter.grad is not None and parameter.grad.abs().sum() > 0, name


def test_coarse_tokens_change_the_forecast():
    """Moving the coarse starts (same fine starts) changes the output: the head reads them."""
    torch.manual_seed(0)
    backbone = small_backbone(32, 4, 8, n_coarse_patches=3, d_model=8, n_heads=2,
                              dropout=0.0).eval()
    x = torch.randn(1, 32)
    starts = torch.arange(0, 32, 4).reshape(1, 1, 8)
    a = backbone(x, starts, coarse_starts=torch.tensor([[[0, 8, 20]]]))
    b = backbone(x, starts, coarse_starts=torch.tensor([[[0, 12, 24]]]))
    assert not torch.allclose(a, b)
