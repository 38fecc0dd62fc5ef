"""benchmarks/speed.py's cut of the prediction pass into parts: together the parts do the
whole pass's arithmetic (nothing is timed here)."""

from __future__ import annotations

import pytest
import torch


@pytest.mark.parametrize("patcher", ["learned", "uniform"])
def test_the_parts_add_up_to_the_flops_of_the_prediction_pass(import_benchmark, patcher):
    speed = import_benchmark("speed")
    network = speed.reinpatch_network(96, patcher).eval()
    x = torch.randn(3, 96, speed.CHANNELS, generator=torch.Generator().manual_seed(0))
    parts = speed.prediction_parts(network, x)
    assert list(parts) == ["patcher (decode)", "tokeniser (local features, tokens)",
                           "encoder (layers)", "readout (step_readout + skip_projection)", "head"]
    flops = {name: speed.counted_flops(call) for name, call in parts.items()}
    assert sum(flops.values()) == speed.counted_flops(lambda: network(x))
    assert (flops["patcher (decode)"] > 0) == (patcher == "learned")
    assert all(value > 0 for name, value in flops.items() if name != "patcher (decode)")


def test_attention_is_counted(import_benchmark):
    """The counter sees the encoder's attention: a layer counts its four d x d projections,
    the feed-forward pair and the attention scores and mixing of its N tokens."""
    speed = import_benchmark("speed")
    network = speed.reinpatch_network(96, "uniform").eval()
    layer, tokens = network.backbone.layers[0], torch.randn(5, 12, 64)
    d, d_ff, n = 64, layer.ff_in.out_features, 12
    expected = 5 * (2 * n * d * 4 * d + 2 * 2 * n * d * d_ff + 2 * 2 * n * n * d)
    assert speed.counted_flops(lambda: layer(tokens, 1)) == expected
