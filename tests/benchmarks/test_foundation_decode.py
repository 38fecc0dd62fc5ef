"""The foundation-decode benchmark reads a patcher's zero-shot decode through the network."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from reinpatch_forecast.nn import LearnedPatcher
from reinpatch_forecast.nn.grid import uniform_starts


@pytest.fixture(scope="module")
def decode(import_benchmark):
    return import_benchmark("foundation_decode")


def test_a_new_patcher_decodes_the_grid_and_a_scored_one_leaves_it(decode):
    array = np.random.default_rng(0).standard_normal((400, 2)).cumsum(axis=0)
    patcher = LearnedPatcher()
    starts = decode.decode_windows(patcher, array, 96, 8, 50)  # (S, C, N)
    assert starts.shape == (7, 2, 12)
    assert (starts == uniform_starts(96, 12).numpy()).all()
    torch.manual_seed(0)
    torch.nn.init.normal_(patcher.output.weight, std=3.0)
    moved = decode.decode_windows(patcher, array, 96, 8, 50)
    assert (moved != starts).any()
    assert (moved[..., 0] == 0).all() and (np.diff(moved, axis=-1) > 0).all()
