"""Time-aligned readouts: each step reads its own patch, the shapes and scale hold on the grid,
two levels, covariates and CPU chunking work, bad settings fail early. The package has the
``copy`` readout with its per-step skip; the other readouts, the skip switched off and the
backbone trained on the sampled patchings too (``sample_loss_weight``) are the benchmarks'
variants (``benchmarks/variants.py``), tested here beside it."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from reinpatch_forecast.nn import Covariates, ReinPatchNetwork
from reinpatch_forecast.nn.grid import uniform_starts
from reinpatch_forecast.nn.readout import step_patch_index

from nn_support import network_of, small_config, variants  # noqa: E402

STEP_READOUTS = variants.STEP_READOUTS


def StepReadout(mode: str, d_model: int, points: int, width: int) -> torch.nn.Module:
    """The package's copy readout, or the benchmarks' readout ``mode``."""
    if mode == "copy":
        from reinpatch_forecast.nn.readout import StepReadout as CopyReadout
        return CopyReadout(d_model, width)
    return variants.VariantStepReadout(mode, d_model, points, width)


#: (readout, readout_skip) pairs the network and darts tests run.
VARIANTS = [("profile", False), ("profile", True), ("copy", False), ("copy", True),
            ("interpolate", False), ("query", False), ("flatten", False)]


def _starts(*values: int) -> torch.Tensor:
    return torch.tensor([values], dtype=torch.int64)  # (1, N)


def test_step_patch_index_matches_searchsorted():
    generator = torch.Generator().manual_seed(0)
    length, n_patches = 40, 7
    inner = torch.stack([torch.randperm(length - 1, generator=generator)[:n_patches - 1] + 1
                         for _ in range(16)]).sort(dim=1).values
    starts = torch.cat([torch.zeros(16, 1, dtype=torch.int64), inner], dim=1)  # (16, N)
    steps = torch.arange(length).expand(16, -1).contiguous()
    expected = torch.searchsorted(starts, steps, right=True) - 1
    assert torch.equal(step_patch_index(starts, length), expected)


@pytest.mark.parametrize("mode", STEP_READOUTS)
def test_moving_one_boundary_changes_only_the_steps_of_the_patches_it_touches(mode):
    """Same tokens, one start moved from 12 to 15: only steps of the two patches that share the
    boundary change (``"interpolate"`` also reads the neighbours' centres: one more patch each
    side)."""
    torch.manual_seed(0)
    readout = StepReadout(mode, d_model=8, points=4, width=3)
    tokens = torch.randn(1, 5, 8)
    before = readout(tokens, _starts(0, 6, 12, 20, 28), 36)[0]  # (L, k)
    after = readout(tokens, _starts(0, 6, 15, 20, 28), 36)[0]
    changed = (before != after).any(dim=1)  # (L,)
    affected = (6, 20) if mode != "interpolate" else (0, 28)  # patches 1-2 (or 0-3)
    assert changed.any()
    outside = torch.ones(36, dtype=torch.bool)
    outside[affected[0]:affected[1]] = False
    assert not changed[outside].any()


def test_profile_reads_one_point_per_step_on_a_grid_of_p_steps():
    """Patches of exactly P steps: step t reads point t - start of its own patch's profile."""
    torch.manual_seed(0)
    readout = StepReadout("profile", d_model=8, points=4, width=2)
    tokens = torch.randn(2, 3, 8)
    steps = readout(tokens, uniform_starts(12, 3).expand(2, -1), 12)  # (2, 12, 2)
    profiles = readout.project(tokens).reshape(2, 12, 2)  # patch-major points
    assert torch.equal(steps, profiles)


def test_profile_stretches_a_long_patch_and_repeats_points_of_a_short_one():
    readout = StepReadout("profile", d_model=2, points=4, width=1)
    with torch.no_grad():
        readout.project.weight.zero_()
        readout.project.bias.copy_(torch.arange(4.0))  # point p reads p in every patch
    steps = readout(torch.zeros(1, 2, 2), _starts(0, 2), 10)[0, :, 0]
    # patch [0, 2): points 0, 2; patch [2, 10): points 0,0,1,1,2,2,3,3
    assert steps.tolist() == [0, 2, 0, 0, 1, 1, 2, 2, 3, 3]


def test_copy_is_constant_over_each_patch():
    torch.manual_seed(0)
    readout = StepReadout("copy", d_model=4, points=4, width=3)
    tokens = torch.randn(1, 3, 4)
    steps = readout(tokens, _starts(0, 3, 8), 12)[0]
    projected = readout.project(tokens)[0]
    for patch, (start, end) in enumerate([(0, 3), (3, 8), (8, 12)]):
        assert torch.equal(steps[start:end], projected[patch].expand(end - start, -1))


def test_interpolate_passes_through_each_patch_centre():
    torch.manual_seed(0)
    readout = StepReadout("interpolate", d_model=4, points=4, width=2)
    tokens = torch.randn(1, 3, 4)
    steps = readout(tokens, _starts(0, 5, 10), 15)[0]  # centres 2, 7, 12
    projected = readout.project(tokens)[0]
    for patch, centre in enumerate((2, 7, 12)):
        torch.testing.assert_close(steps[centre], projected[patch])
    torch.testing.assert_close(steps[0], projected[0])  # before the first centre: held
    torch.testing.assert_close(steps[4], 0.6 * projected[0] + 0.4 * projected[1])


@pytest.mark.parametrize("readout,skip", VARIANTS)
@pytest.mark.parametrize("levels", [1, 2])
def test_network_on_the_grid_gives_shapes_and_the_series_scale(readout, skip, levels):
    torch.manual_seed(0)
    config = small_config(input_length=48, output_length=12, n_channels=2,
                          compression_rate=8 if levels == 1 else (4, 3), levels=levels,
                          patcher="uniform", readout=readout, readout_skip=skip, d_model=16,
                          n_heads=2, nr_params=3)
    network = network_of(config).eval()
    x = 1000.0 + 5.0 * torch.randn(4, 48, 2)
    out = network(x)
    assert out.shape == (4, 12, 2, 3)
    assert torch.isfinite(out).all()
    assert (out - 1000.0).abs().max() < 5.0 * 10  # RevIN: the series' level and spread
    if readout in STEP_READOUTS:
        assert network.backbone.head.in_features == 48 * config.step_width


@pytest.mark.parametrize("readout,skip", VARIANTS)
@pytest.mark.parametrize("levels", [1, 2])
def test_grpg_step_with_covariates_trains_every_part(readout, skip, levels):
    torch.manual_seed(0)
    config = small_config(input_length=32, output_length=8, n_channels=2,
                          compression_rate=4 if levels == 1 else (4, 2), levels=levels,
                          readout=readout, readout_skip=skip, d_model=16, n_heads=2,
                          n_past_covariates=2, n_future_covariates=1, n_static_covariates=1,
                          group_size=3)
    network = network_of(config).train()
    covariates = Covariates(past=torch.randn(4, 32, 2), future=torch.randn(4, 8, 1),
                            static=torch.randn(4, 2, 1))
    losses = network.training_losses(torch.randn(4, 32, 2), torch.randn(4, 8, 2),
                                     covariates=covariates)
    losses.loss.backward()
    head = (network.backbone.query_readout.output if readout == "query"
            else network.backbone.head).weight.grad
    assert head is not None and torch.isfinite(head).all() and head.abs().sum() > 0
    patcher_grads = [p.grad for p in network.patcher_parameters() if p.grad is not None]
    assert patcher_grads and any(g.abs().sum() > 0 for g in patcher_grads)
    if readout == "query":
        assert network.backbone.query_readout.queries.grad.abs().sum() > 0
    elif readout != "flatten":
        assert network.backbone.step_readout.project.weight.grad.abs().sum() > 0
        if levels == 2:
            assert network.backbone.coarse_step_readout.project.weight.grad.abs().sum() > 0
    if skip:
        assert network.backbone.skip_projection.weight.grad.abs().sum() > 0


def test_chunked_backbone_gives_the_same_forecast():
    """CPU chunking over rows (small chunks forced) gives the unchunked forecast."""
    torch.manual_seed(0)
    config = small_config(input_length=48, output_length=12, patcher="learned",
                          readout="profile", readout_skip=True, d_model=16, n_heads=2)
    network = network_of(config).eval()
    assert isinstance(network, variants.VariantNetwork)
    x = torch.randn(6, 48, 1)
    whole = network(x)
    network.backbone.chunk_elements = 1
    network.backbone.tokeniser.chunk_elements = 1
    torch.testing.assert_close(network(x), whole, rtol=0, atol=1e-6)


def test_the_skip_is_on_where_it_applies_by_default():
    def config(**kwargs):
        return variants.Ablation(**kwargs)

    assert (config().readout, config().readout_skip) == ("copy", True)
    assert config(readout="profile").readout_skip is True
    assert config(readout="flatten").readout_skip is False
    assert config(readout="query").readout_skip is False
    assert config(use_local_mean=False).readout_skip is False
    assert config(readout_skip=False).readout_skip is False


@pytest.mark.parametrize("bad,message", [
    (dict(readout="slots"), "Unknown readout 'slots'"),
    (dict(readout=None), "Unknown readout None"),
    (dict(readout_skip=True, use_local_mean=False), "readout_skip=True reads"),
    (dict(readout_skip="yes"), "readout_skip must be True, False or None"),
    (dict(readout="query", readout_skip=True), "readout='query' has none"),
    (dict(readout="flatten", readout_skip=True), "readout='flatten' has none"),
])
def test_bad_readout_settings_raise_at_construction(bad, message):
    with pytest.raises(ValueError, match=message):
        variants.Ablation(**bad)


def test_a_head_over_the_last_steps_keeps_its_size_and_reads_only_those_steps():
    """``head_steps``: the head's inputs stop growing with the lookback, and the forecast
    depends on the step features of the last ``head_steps`` steps only."""
    torch.manual_seed(0)
    sizes = {}
    for length in (48, 96):
        config = small_config(input_length=length, output_length=8, n_channels=1,
                              compression_rate=8, patcher="uniform", head_steps=24)
        network = network_of(config).eval()
        sizes[length] = network.backbone.head.in_features
    width = config.step_width
    assert sizes == {48: 24 * width, 96: 24 * width}
    backbone = network.backbone
    # the readout's and the skip's step features, as leaves whose gradients show what is read
    steps = torch.randn(3, 96, width, requires_grad=True)  # (R*G, L, k)
    backbone.step_readout.forward = lambda *args: steps
    backbone.skip_features = lambda local: torch.zeros(3, 96, width)  # (R, L, k)
    starts = torch.zeros(3, 1, 12, dtype=torch.int64)  # (R, G, N): only the shape is read
    out = backbone._read(None, None, starts, None, None)  # (R*G, H*Q)
    assert out.shape == (3, 8)
    out.sum().backward()
    reach = steps.grad.abs().sum(dim=(0, 2))  # (L,)
    assert (reach[:72] == 0).all() and (reach[72:] > 0).all()


def test_head_steps_must_be_a_positive_integer_on_a_step_readout():
    with pytest.raises(ValueError, match="head_steps must be None or an integer >= 1"):
        variants.Ablation(head_steps=0)
    with pytest.raises(ValueError, match="head_steps needs a time-aligned readout"):
        variants.Ablation(head_steps=24, readout="flatten")


def _learned_network(weight: float) -> ReinPatchNetwork:
    torch.manual_seed(0)
    config = small_config(input_length=32, output_length=8, compression_rate=4, d_model=16,
                          n_heads=2, dropout=0.0, group_size=3, scored_share=1.0,
                          sample_loss_weight=weight,
                          readout="copy")
    return network_of(config).train()


def test_sample_loss_weight_trains_the_backbone_on_the_samples_too(monkeypatch):
    """Samples that repeat the decode: the weighted loss equals the decode's. Real samples: the
    backbone's gradient differs from the decode-only step, and the policy loss does not."""
    x, y = torch.randn(4, 32, 1), torch.randn(4, 8, 1)
    plain = _learned_network(0.0)
    torch.manual_seed(1)
    base = plain.training_losses(x, y)
    weighted = _learned_network(1.0)
    torch.manual_seed(1)
    both = weighted.training_losses(x, y)
    torch.testing.assert_close(both.policy_loss, base.policy_loss)
    assert not torch.allclose(both.backbone_loss, base.backbone_loss)
    base.loss.backward()
    both.loss.backward()
    assert not torch.allclose(weighted.backbone.head.weight.grad,
                              plain.backbone.head.weight.grad)

    explore = weighted._explore

    def decode_repeated(patcher_input, group, sampled_rows=None):
        decoded, samples = explore(patcher_input, group, sampled_rows)
        repeated = decoded.starts[:len(samples.starts)].expand(-1, group, -1)  # sampled rows
        return decoded, dataclasses.replace(samples, starts=repeated)

    monkeypatch.setattr(weighted, "_explore", decode_repeated)
    torch.manual_seed(1)
    same = weighted.training_losses(x, y)
    torch.testing.assert_close(same.backbone_loss, base.backbone_loss)


@pytest.mark.parametrize("bad", [-0.5, float("nan"), True, "1"])
def test_bad_sample_loss_weight_raises(bad):
    with pytest.raises(ValueError, match="sample_loss_weight must be a finite number >= 0"):
        small_config(input_length=32, output_length=8, sample_loss_weight=bad)
