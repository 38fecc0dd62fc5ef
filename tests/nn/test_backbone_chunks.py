"""The backbone's CPU chunking (large passes split into chunks of whole series) is invisible."""

from __future__ import annotations

import pytest
import torch

from reinpatch_forecast.nn import ReinPatchConfig, ReinPatchNetwork
from reinpatch_forecast.nn.backbone import Backbone, BackboneConfig
from reinpatch_forecast.nn.patchers import RandomPatcher


def _backbone(levels: int = 1) -> Backbone:
    torch.manual_seed(0)
    return Backbone(BackboneConfig(input_length=32, output_length=4, n_patches=8, d_model=8,
                                   n_heads=2, n_layers=1,
                                   n_coarse_patches=3 if levels == 2 else None))


@pytest.mark.parametrize("levels", [1, 2])
@pytest.mark.parametrize("with_local", [False, True])
def test_chunked_pass_matches_one_pass(levels, with_local):
    backbone = _backbone(levels).eval()
    x = torch.randn(5, 32, generator=torch.Generator().manual_seed(1))
    patcher = RandomPatcher(levels=levels)
    patching = patcher.sample(x, 8, 3,
                              n_coarse_patches=3 if levels == 2 else None)
    local = backbone.tokeniser.local_features(x) if with_local else None
    whole = backbone(x, patching.starts, local, patching.coarse_starts)  # (R*G, H, Q)
    backbone.chunk_elements = 1  # one series per chunk
    assert backbone.chunk_rows(5, 3, 32, not with_local) == 1
    chunked = backbone(x, patching.starts, local, patching.coarse_starts)
    assert chunked.shape == whole.shape == (15, 4, 1)
    torch.testing.assert_close(chunked, whole, rtol=1e-5, atol=1e-6)


def test_chunked_gradients_match_one_pass():
    backbone = _backbone().eval()  # no dropout: the masks would differ in order
    x = torch.randn(6, 32, generator=torch.Generator().manual_seed(2))
    starts = RandomPatcher().sample(x, 8, 2).starts  # (R, G, N)
    grads = []
    for budget in (Backbone.chunk_elements, 1):
        backbone.zero_grad()
        backbone.chunk_elements = budget
        backbone(x, starts).square().sum().backward()
        grads.append([p.grad.clone() for p in backbone.parameters()])
    for chunked, whole in zip(grads[1], grads[0]):
        torch.testing.assert_close(chunked, whole, rtol=1e-4, atol=1e-5)


def test_small_passes_are_not_chunked():
    # The chunk budget leaves the default tests and small models on the single-pass path.
    network = ReinPatchNetwork(ReinPatchConfig(input_length=96, output_length=96, n_channels=7))
    assert network.backbone.chunk_rows(32 * 7, 8, 96) >= 32 * 7 // 2
    assert network.backbone.chunk_rows(4 * 7, 8, 96) >= 4 * 7
