"""The learned patcher decodes the same starts as the reference: random patchers (perturbed,
so the scores move the boundaries) on random series, one level, an at-most budget, two levels
and a short lookback. ``data/decode_reference.pt`` holds each patcher's weights and the starts
its decode gave at commit 05f7ab9; the series come from seeded generators."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from reinpatch_forecast.nn import ReinPatchConfig, ReinPatchNetwork
from reinpatch_forecast.nn.learned_patcher import LearnedPatcher

CASES = torch.load(Path(__file__).parent / "data" / "decode_reference.pt", weights_only=True)


def _case(index: int) -> tuple[LearnedPatcher, torch.Tensor, dict]:
    case = CASES[index]
    patcher = LearnedPatcher(**case["config"])
    patcher.load_state_dict(case["state"])
    length = 40 if index == 3 else 96
    generator = torch.Generator().manual_seed(100 + index)
    x = torch.randn(256, length, generator=generator)
    x = x * 3 * torch.rand(256, 1, generator=generator)
    x[:8] = 0.0  # constant series: every score ties
    return patcher, x, case


@pytest.mark.parametrize("index", range(len(CASES)))
@pytest.mark.parametrize("grad", [False, True])
def test_decode_gives_the_reference_starts(index, grad):
    patcher, x, case = _case(index)
    with torch.set_grad_enabled(grad):
        patching = patcher.decode(x, case["n_patches"], case["n_coarse_patches"])
    assert torch.equal(patching.starts, case["starts"])
    if case["coarse_starts"] is None:
        assert patching.coarse_starts is None
    else:
        assert torch.equal(patching.coarse_starts, case["coarse_starts"])


@pytest.mark.parametrize("index", range(len(CASES)))
def test_starts_only_decode_gives_the_reference_starts(index):
    patcher, x, case = _case(index)
    with torch.inference_mode():
        starts, coarse = patcher.decode_starts(x, case["n_patches"], case["n_coarse_patches"])
    assert torch.equal(starts, case["starts"])
    assert (coarse is None) == (case["coarse_starts"] is None)
    if coarse is not None:
        assert torch.equal(coarse, case["coarse_starts"])


def test_network_predicts_and_reports_with_the_reference_starts():
    patcher, x, case = _case(0)
    config = ReinPatchConfig(input_length=96, output_length=8, n_channels=4, revin=False,
                             backbone=dict(d_model=8, n_heads=2, n_layers=1))
    network = ReinPatchNetwork(config, patcher=patcher).eval()
    windows = x.reshape(64, 4, 96).transpose(1, 2)  # (B, L, C): row b * C + c is x[4b + c]
    with torch.inference_mode():
        boundaries = network.boundaries(windows)  # (B, C, N)
    assert torch.equal(boundaries.reshape(256, -1), case["starts"][:, 0])
