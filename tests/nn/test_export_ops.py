"""The ONNX-exportable forms of the prediction path's ops give exactly the eager results.

ONNX has no ``searchsorted`` and no ``cummax``; while :func:`torch.onnx.is_in_onnx_export` the
density policy and the coarse-token index count comparisons and take prefix maxima instead
(eager runs keep the faster ops). These tests switch that flag on by hand and compare both
forms bit for bit, ties included; ``tests/darts/test_onnx.py`` runs the exported graphs.
"""

from __future__ import annotations

import itertools
import math

import pytest
import torch

from reinpatch_forecast.nn.grid import (offset_candidates, uniform_gaps, uniform_start_values,
                                        uniform_starts)
from reinpatch_forecast.nn.network import ReinPatchConfig, ReinPatchNetwork
from reinpatch_forecast.nn.policies import DensityPolicy, _running_max
from reinpatch_forecast.nn.segments import coarse_token_starts, insertion_points

from nn_support import small_learned  # noqa: E402


@pytest.fixture
def exporting(monkeypatch):
    """Take the export branches, as inside ``torch.onnx.export``."""
    monkeypatch.setattr(torch.onnx, "is_in_onnx_export", lambda: True)


def tied_sorted_rows(rows: int, size: int, generator: torch.Generator) -> torch.Tensor:
    """``(rows, size)`` float64 rows, sorted, drawn from 7 values: many ties."""
    palette = torch.tensor([0.0, 1 / 3, 0.5, 2 / 3, 0.75, 1.0, 1.0 + 2**-52], dtype=torch.float64)
    picks = torch.randint(0, len(palette), (rows, size), generator=generator)
    return palette[picks].sort(dim=-1).values


@pytest.mark.parametrize("right", [False, True])
def test_insertion_points_count_equals_searchsorted(right, monkeypatch):
    generator = torch.Generator().manual_seed(0)
    table = tied_sorted_rows(50, 9, generator)  # (R, S)
    # Queries on the table's own values (exact ties), between them and outside the range.
    queries = torch.cat([tied_sorted_rows(50, 6, generator),
                         torch.rand(50, 4, generator=generator, dtype=torch.float64) * 1.2 - 0.1],
                        dim=1)  # (R, M)
    flat_table, flat_queries = table[0], queries.reshape(5, 10, 10)
    searched = insertion_points(table, queries, right=right)
    searched_flat = insertion_points(flat_table, flat_queries, right=right)
    monkeypatch.setattr(torch.onnx, "is_in_onnx_export", lambda: True)
    assert torch.equal(insertion_points(table, queries, right=right), searched)
    assert torch.equal(insertion_points(flat_table, flat_queries, right=right), searched_flat)
    assert torch.equal(searched, torch.searchsorted(table, queries, right=right))


def test_insertion_points_on_the_density_policy_cumulative_masses(exporting):
    """The policy's own case: cumulative float64 masses against the levels ``j / n``."""
    generator = torch.Generator().manual_seed(1)
    action = torch.cat([torch.zeros(4, 3, 24, dtype=torch.float64),  # uniform masses
                        torch.randn(4, 3, 24, generator=generator, dtype=torch.float64).round(),
                        8 * torch.randn(4, 3, 24, generator=generator, dtype=torch.float64)])
    mass = torch.softmax(action, dim=-1)
    cumulative = torch.cumsum(mass, dim=-1)  # (R, G, K)
    # Sorted, so the search is defined (and the count is its result).
    assert bool((cumulative[..., 1:] >= cumulative[..., :-1]).all())
    for used in (2, 3, 5, 6):
        levels = (torch.arange(1, 6, dtype=torch.float64) / used).clamp(max=1.0)
        levels = levels.expand(*cumulative.shape[:-1], -1).contiguous()  # (R, G, k)
        assert torch.equal(insertion_points(cumulative, levels),
                           torch.searchsorted(cumulative, levels))


def test_running_max_equals_cummax(exporting):
    generator = torch.Generator().manual_seed(2)
    for size in (1, 2, 7, 40):
        values = torch.randint(-50, 50, (6, 3, size), generator=generator)
        assert torch.equal(_running_max(values), torch.cummax(values, dim=-1).values)


def test_uniform_start_values_match_the_grid_formula():
    """The integer grid is the tensor formula it replaced, for every ``N <= L <= 80``."""
    for length in range(1, 81):
        for n_patches in range(1, length + 1):
            patch = math.ceil(length / n_patches)
            index = torch.arange(n_patches)
            if (n_patches - 1) * patch < length:
                expected = length - (n_patches - index) * patch
                expected[0] = 0
            else:
                expected = torch.div(index * length, n_patches, rounding_mode="floor")
            starts = uniform_starts(length, n_patches)
            assert starts.dtype == torch.int64 and torch.equal(starts, expected)
            assert uniform_start_values(length, n_patches) == expected.tolist()
            assert uniform_gaps(length, n_patches) == torch.diff(
                torch.cat([expected, torch.tensor([length])])).tolist()


def test_offset_candidates_from_integers_match_those_from_a_tensor():
    for length, n_patches in itertools.product((5, 24, 97, 100), (1, 2, 7, 13)):
        from_tensor = offset_candidates(uniform_starts(length, n_patches), length)
        from_values = offset_candidates(uniform_start_values(length, n_patches), length)
        for field in ("slot", "allowed", "distance"):
            assert torch.equal(getattr(from_tensor, field), getattr(from_values, field))


def _draws(policy, scores, n_patches, sample, **extra):
    generator = torch.Generator().manual_seed(3)
    draw = policy.draw(scores, n_patches, 4, sample, generator, **extra)
    return draw.starts, draw.log_prob, draw.entropy, draw.kl


@pytest.mark.parametrize("length, n_patches, knots", [(24, 3, 4), (96, 12, 4), (97, 13, 3),
                                                      (50, 49, 1), (336, 21, 6)])
@pytest.mark.parametrize("scale", [0.0, 1.0, 30.0])
def test_density_draws_are_identical_in_the_export_branch(length, n_patches, knots, scale,
                                                          monkeypatch):
    generator = torch.Generator().manual_seed(length)
    scores = scale * torch.randn(8, length, generator=generator)
    count_scores = 2 * torch.randn(8, 4, generator=generator)
    policy = DensityPolicy(knots=knots)
    cases = [(sample, extra) for sample in (False, True)
             for extra in ({}, {"count_scores": count_scores})]
    eager = [_draws(policy, scores, n_patches, sample, **extra) for sample, extra in cases]
    monkeypatch.setattr(torch.onnx, "is_in_onnx_export", lambda: True)
    for (sample, extra), expected in zip(cases, eager):
        for got, want in zip(_draws(policy, scores, n_patches, sample, **extra), expected):
            assert torch.equal(got, want)


def test_coarse_draws_and_token_starts_are_identical_in_the_export_branch(monkeypatch):
    generator = torch.Generator().manual_seed(4)
    scores = 3 * torch.randn(6, 48, generator=generator)
    results = []
    for flag in (False, True):
        monkeypatch.setattr(torch.onnx, "is_in_onnx_export", lambda flag=flag: flag)
        policy = DensityPolicy()
        fine = policy.draw(scores, 12, 1, False)
        coarse = policy.draw_coarse(scores, fine.starts, 5, False)
        results.append((fine.starts, coarse.starts, coarse.log_prob,
                        coarse_token_starts(fine.starts, coarse.starts)))
    for exported, eager in zip(results[1:], results[:1]):
        for got, want in zip(exported, eager):
            assert torch.equal(got, want)


def test_forward_runs_whole_rows_while_exporting_without_changing_modules(monkeypatch):
    """No row chunks inside an export (their loop would fix the batch size of the graph), no
    module changed to get there, and the forecast is the chunked one."""
    torch.manual_seed(0)
    config = ReinPatchConfig(input_length=24, output_length=4, compression_rate=(4, 2), levels=2,
                             backbone=dict(d_model=8, n_heads=1, n_layers=1, dropout=0.0,
                                           resample_points=4))
    network = ReinPatchNetwork(config, patcher=small_learned(levels=2, scored=True)).eval()
    network.patcher.chunk_elements = 8 * 24  # instance value: 1 row per chunk
    network.backbone.chunk_elements = 1
    calls = []
    original = network.patcher._both_logits
    monkeypatch.setattr(network.patcher, "_both_logits",
                        lambda x: calls.append(x.shape[0]) or original(x))
    backbone_calls = []
    original_forward = network.backbone._forward
    monkeypatch.setattr(network.backbone, "_forward",
                        lambda *a: backbone_calls.append(a[0].shape[0]) or original_forward(*a))
    before = {name: dict(vars(module)) for name, module in network.named_modules()}
    x = torch.randn(5, 24, 1)
    with torch.no_grad():
        chunked = network(x)
        assert calls == backbone_calls == [1] * 5
        calls.clear()
        backbone_calls.clear()
        monkeypatch.setattr(torch.onnx, "is_in_onnx_export", lambda: True)
        whole = network(x)
    assert calls == backbone_calls == [5]
    torch.testing.assert_close(whole, chunked, rtol=0, atol=1e-6)
    after = {name: dict(vars(module)) for name, module in network.named_modules()}
    assert after.keys() == before.keys()
    for name in before:
        assert before[name].keys() == after[name].keys()
        assert all(before[name][key] is after[name][key] or before[name][key] == after[name][key]
                   for key in before[name] if not key.startswith("_"))
