"""CPU fast paths give the results of the plain modules.

The backbone and the learned patcher split large passes into chunks of rows, and two small
convs run as products: all of it must be invisible up to float rounding.
"""

from __future__ import annotations

import pytest
import torch

from reinpatch_forecast.nn import ReinPatchConfig, ReinPatchNetwork
from reinpatch_forecast.nn.backbone import Backbone
from reinpatch_forecast.nn.chunking import map_row_chunks, rows_per_chunk
from reinpatch_forecast.nn.convolution import (
    pointwise_conv1d,
    step_major_conv1d,
)
from reinpatch_forecast.nn.patchers import LearnedPatcher, RandomPatcher


def _backbone(levels: int = 1) -> Backbone:
    torch.manual_seed(0)
    rate = (4, 3) if levels == 2 else 4  # N = 8 patches; N2 = 3 coarse ones
    return Backbone(ReinPatchConfig(input_length=32, output_length=4, compression_rate=rate,
                                    levels=levels, backbone=dict(d_model=8, n_heads=2,
                                                                 n_layers=1)))


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


@pytest.mark.parametrize("levels", [1, 2])
def test_chunked_patcher_logits_and_draws_match_one_pass(levels):
    torch.manual_seed(0)
    patcher = LearnedPatcher(hidden_size=8, n_layers=3, levels=levels)
    x = torch.randn(7, 40)
    whole = patcher.level_logits(x)
    decoded = patcher.decode(x, 6, n_coarse_patches=3 if levels == 2 else None)
    patcher.chunk_elements = 1  # one row per chunk
    assert patcher.chunk_rows(x.shape[-1]) == 1
    chunked = patcher.level_logits(x)
    for a, b in zip(chunked, whole):
        if b is None:
            assert a is None
        else:
            torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(patcher.logits(x), whole[0], rtol=1e-5, atol=1e-6)
    again = patcher.decode(x, 6, n_coarse_patches=3 if levels == 2 else None)
    assert torch.equal(again.starts, decoded.starts)
    torch.testing.assert_close(again.log_prob, decoded.log_prob, rtol=1e-5, atol=1e-5)


def test_patcher_keeps_its_parameter_names_and_shapes():
    # The shipped pretrained patcher file is loaded by name and shape.
    shapes = {name: tuple(p.shape) for name, p in LearnedPatcher().state_dict().items()}
    assert shapes["input_proj.weight"] == (8, 2, 3)
    assert shapes["blocks.2.conv.weight"] == (8, 8, 3)
    assert shapes["output.weight"] == (1, 8, 1)
    assert len(shapes) == 2 + 3 * 4 + 2


def test_chunked_local_features_match_one_pass():
    backbone = _backbone()
    x = torch.randn(5, 32, requires_grad=True)
    whole = backbone.tokeniser.local_features(x)
    backbone.tokeniser.chunk_elements = 1  # one row per chunk
    assert backbone.tokeniser.chunk_rows(32) == 1
    chunked = backbone.tokeniser.local_features(x)
    torch.testing.assert_close(chunked, whole, rtol=1e-5, atol=1e-6)
    (grad_whole,) = torch.autograd.grad(whole.square().sum(), x)
    (grad_chunked,) = torch.autograd.grad(chunked.square().sum(), x)
    torch.testing.assert_close(grad_chunked, grad_whole, rtol=1e-5, atol=1e-5)


def test_rows_per_chunk_keeps_at_least_one_row():
    assert rows_per_chunk(100, 10) == 10
    assert rows_per_chunk(105, 10) == 10
    assert rows_per_chunk(5, 10) == 1


def test_map_row_chunks_splits_cpu_rows_and_joins_every_output():
    x = torch.arange(10.0).reshape(5, 2)
    extra = torch.arange(5.0)
    calls = []

    def function(a, b, none):
        calls.append(a.shape[0])
        assert none is None
        return a * 2, (a.sum(-1) + b).repeat_interleave(3)  # 3 output rows per input row

    doubled, summed = map_row_chunks(function, (x, extra, None), 2)
    assert calls == [2, 2, 1]
    assert torch.equal(doubled, x * 2)
    assert torch.equal(summed, (x.sum(-1) + extra).repeat_interleave(3))
    single = map_row_chunks(lambda a: a + 1, (x,), 5)  # fits one chunk: one call
    assert torch.equal(single, x + 1)


@pytest.mark.parametrize("kernel_size", [1, 3, 5])
def test_step_major_conv_matches_the_padded_conv(kernel_size):
    torch.manual_seed(0)
    conv = torch.nn.Conv1d(1, 6, kernel_size, padding="same", padding_mode="replicate")
    x = torch.randn(4, 9)
    torch.testing.assert_close(step_major_conv1d(conv, x),
                               conv(x.unsqueeze(1)).transpose(1, 2), rtol=1e-5, atol=1e-6)


def test_pointwise_conv_matches_the_kernel_one_conv():
    torch.manual_seed(0)
    conv = torch.nn.Conv1d(8, 2, 1)
    h = torch.randn(3, 8, 11)
    torch.testing.assert_close(pointwise_conv1d(conv, h), conv(h), rtol=1e-5, atol=1e-6)
