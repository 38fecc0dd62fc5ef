"""The time-aligned ``copy`` readout: each step reads its own patch, the shapes and scale hold
on the grid, two levels, covariates and CPU chunking work."""

from __future__ import annotations

import pytest
import torch

from reinpatch_forecast.nn import Covariates, ReinPatchNetwork
from reinpatch_forecast.nn.readout import StepReadout, step_patch_index

from nn_support import small_config  # noqa: E402


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


def test_moving_one_boundary_changes_only_the_steps_of_the_patches_it_touches():
    """Same tokens, one start moved from 12 to 15: only steps of the two patches that share the
    boundary change."""
    torch.manual_seed(0)
    readout = StepReadout(d_model=8, width=3)
    tokens = torch.randn(1, 5, 8)
    before = readout(tokens, _starts(0, 6, 12, 20, 28), 36)[0]  # (L, k)
    after = readout(tokens, _starts(0, 6, 15, 20, 28), 36)[0]
    changed = (before != after).any(dim=1)  # (L,)
    affected = (6, 20)  # patches 1-2
    assert changed.any()
    outside = torch.ones(36, dtype=torch.bool)
    outside[affected[0]:affected[1]] = False
    assert not changed[outside].any()


def test_copy_is_constant_over_each_patch():
    torch.manual_seed(0)
    readout = StepReadout(d_model=4, width=3)
    tokens = torch.randn(1, 3, 4)
    steps = readout(tokens, _starts(0, 3, 8), 12)[0]
    projected = readout.project(tokens)[0]
    for patch, (start, end) in enumerate([(0, 3), (3, 8), (8, 12)]):
        assert torch.equal(steps[start:end], projected[patch].expand(end - start, -1))


@pytest.mark.parametrize("levels", [1, 2])
def test_network_on_the_grid_gives_shapes_and_the_series_scale(levels):
    torch.manual_seed(0)
    config = small_config(input_length=48, output_length=12, n_channels=2,
                          compression_rate=8 if levels == 1 else (4, 3), levels=levels,
                          patcher="uniform", d_model=16, n_heads=2, nr_params=3)
    network = ReinPatchNetwork(config).eval()
    x = 1000.0 + 5.0 * torch.randn(4, 48, 2)
    out = network(x)
    assert out.shape == (4, 12, 2, 3)
    assert torch.isfinite(out).all()
    assert (out - 1000.0).abs().max() < 5.0 * 10  # RevIN: the series' level and spread
    assert network.backbone.head.in_features == 48 * config.step_width


@pytest.mark.parametrize("levels", [1, 2])
def test_grpg_step_with_covariates_trains_every_part(levels):
    torch.manual_seed(0)
    config = small_config(input_length=32, output_length=8, n_channels=2,
                          compression_rate=4 if levels == 1 else (4, 2), levels=levels,
                          d_model=16, n_heads=2, n_past_covariates=2, n_future_covariates=1,
                          n_static_covariates=1, group_size=3)
    network = ReinPatchNetwork(config).train()
    covariates = Covariates(past=torch.randn(4, 32, 2), future=torch.randn(4, 8, 1),
                            static=torch.randn(4, 2, 1))
    losses = network.training_losses(torch.randn(4, 32, 2), torch.randn(4, 8, 2),
                                     covariates=covariates)
    losses.loss.backward()
    head = network.backbone.head.weight.grad
    assert head is not None and torch.isfinite(head).all() and head.abs().sum() > 0
    patcher_grads = [p.grad for p in network.patcher_parameters() if p.grad is not None]
    assert patcher_grads and any(g.abs().sum() > 0 for g in patcher_grads)
    assert network.backbone.step_readout.project.weight.grad.abs().sum() > 0
    if levels == 2:
        assert network.backbone.coarse_step_readout.project.weight.grad.abs().sum() > 0
    assert network.backbone.skip_projection.weight.grad.abs().sum() > 0


def test_chunked_backbone_gives_the_same_forecast():
    """CPU chunking over rows (small chunks forced) gives the unchunked forecast."""
    torch.manual_seed(0)
    config = small_config(input_length=48, output_length=12, patcher="learned", d_model=16,
                          n_heads=2)
    network = ReinPatchNetwork(config).eval()
    x = torch.randn(6, 48, 1)
    whole = network(x)
    network.backbone.chunk_elements = 1
    network.backbone.tokeniser.chunk_elements = 1
    torch.testing.assert_close(network(x), whole, rtol=0, atol=1e-6)
