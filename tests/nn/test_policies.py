"""Tests of :mod:`reinpatch_forecast.nn.policies`: the density policy and the coarse offsets.

Log-probabilities against brute force, the uniform grid at initialisation (bit for bit), exact
budgets, nesting at two levels, exact KL and entropy.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from reinpatch_forecast.nn.grid import offset_candidates, uniform_starts
from reinpatch_forecast.nn.patchers import LearnedPatcher, UniformPatcher
from reinpatch_forecast.nn.policies import DensityPolicy, coarse_offsets
from reinpatch_forecast.nn.segments import patch_lengths

from nn_support import SETTINGS, small_learned  # noqa: E402


def fixed_scores(patcher: LearnedPatcher, fine: torch.Tensor, monkeypatch,
                 coarse: torch.Tensor | None = None) -> None:
    """Make the patcher score every row with ``fine`` ``(L,)`` (and ``coarse`` at level 2)."""
    def level_logits(x):
        rows = x.shape[0]
        return (fine.expand(rows, -1),
                None if coarse is None else coarse.expand(rows, -1))
    monkeypatch.setattr(patcher, "level_logits", level_logits)


def offset_table(scores, grid, length, penalty=1.0):
    """Exact per-boundary offset probabilities by a plain loop: list of {slot: prob}."""
    gaps = [b - a for a, b in zip(grid, list(grid[1:]) + [length])]
    table = []
    for j in range(1, len(grid)):
        radius = max(0, (min(gaps[j - 1], gaps[j]) - 1) // 2)
        logits = {grid[j] + d: float(scores[grid[j] + d]) - penalty * abs(d)
                  for d in range(-radius, radius + 1)}
        top = max(logits.values())
        norm = sum(math.exp(v - top) for v in logits.values())
        table.append({slot: math.exp(v - top) / norm for slot, v in logits.items()})
    return table


# -- the grid at initialisation -----------------------------------------------------------------


@pytest.mark.parametrize("length, n_patches", [(96, 12), (96, 24), (100, 13), (97, 12),
                                               (512, 32), (10, 4), (9, 9), (7, 1), (50, 49)])
def test_a_new_patcher_decodes_exactly_the_uniform_grid(length, n_patches):
    """Zero-initialised heads: the decode IS uniform_starts(L, N), bit for bit, on any input."""
    torch.manual_seed(0)
    patcher = LearnedPatcher(hidden_size=8, n_layers=2)
    x = torch.randn(5, length).cumsum(-1)
    decoded = patcher.decode(x, n_patches).starts  # (5, 1, N)
    assert torch.equal(decoded, uniform_starts(length, n_patches).expand(5, 1, -1))


@pytest.mark.parametrize("length, n_fine, n_coarse", [(96, 24, 6), (96, 12, 6), (100, 13, 4)])
def test_a_new_two_level_patcher_decodes_the_uniform_patchers_levels(length, n_fine, n_coarse):
    torch.manual_seed(0)
    patcher = LearnedPatcher(hidden_size=8, n_layers=2, levels=2)
    x = torch.randn(3, length)
    decoded = patcher.decode(x, n_fine, n_coarse_patches=n_coarse)
    uniform = UniformPatcher(levels=2).decode(x, n_fine, n_coarse_patches=n_coarse)
    assert torch.equal(decoded.starts, uniform.starts)
    assert torch.equal(decoded.coarse_starts, uniform.coarse_starts)


# -- coarse offsets (the second level) ------------------------------------------------------------


def test_offset_radii_keep_neighbours_apart():
    """m_j = floor((min(gap_{j-1}, gap_j) - 1) / 2); R = 8 allows lengths 2 .. 14."""
    candidates = offset_candidates(uniform_starts(96, 12), 96)
    assert candidates.distance.shape == (7,)  # m = 3: offsets -3 .. 3
    assert bool(candidates.allowed.all())
    grid = uniform_starts(100, 13)  # first patch 4 steps: boundary 1 may move by 1 only
    candidates = offset_candidates(grid, 100)
    assert candidates.allowed[0].sum() == 3 and candidates.allowed[1:].sum(-1).eq(7).all()


def test_coarse_offsets_log_prob_entropy_and_kl_match_brute_force():
    """N1 = 8 fine starts, N2 = 2: the coarse boundary moves among fine tokens 3 .. 5; each
    draw's log-probability, the entropy, the KL and the sampled frequencies are those of a
    plain loop over the offsets, and the mode is the most likely offset."""
    fine = uniform_starts(16, 8).expand(1, 400, -1)  # (R, G, N1): 400 draws of one row
    coarse_scores = torch.randn(1, 16, generator=torch.Generator().manual_seed(2))
    token_scores = coarse_scores[0, fine[0, 0]]  # (N1,)
    (table,) = offset_table(token_scores, [0, 4], 8)
    entropy = -sum(p * math.log(p) for p in table.values())
    (reference,) = offset_table(torch.zeros(8), [0, 4], 8)
    kl = sum(p * math.log(p / reference[token]) for token, p in table.items())
    drawn = coarse_offsets(coarse_scores, fine, 2, 1.0, True, torch.Generator().manual_seed(5))
    assert drawn.entropy.item() == pytest.approx(entropy, abs=1e-5)
    assert drawn.kl.item() == pytest.approx(kl, abs=1e-5)
    tokens = [fine[0, 0].tolist().index(s) for s in drawn.starts[0, :, 1].tolist()]
    for token, lp in zip(tokens, drawn.log_prob[0].tolist()):
        assert lp == pytest.approx(math.log(table[token]), abs=1e-5)
    counts = Counter(tokens)
    observed = [counts[t] for t in table]
    expected = [len(tokens) * table[t] for t in table]
    assert stats.chisquare(observed, expected).pvalue > 1e-3
    mode = coarse_offsets(coarse_scores, fine[:, :1], 2, 1.0, False).starts[0, 0, 1].item()
    assert fine[0, 0].tolist().index(mode) == max(table, key=table.get)


# -- density policy ------------------------------------------------------------------------------


def brute_force_quantiles(action, length, n_patches, knots, shortest, cells_of=None):
    """Starts from one action ``(K,)`` by a plain loop over cells (float64).

    The cells split the uniform grid of ``cells_of`` patches (default ``n_patches``; an
    at-most budget places ``n_patches <= cells_of`` patches on the cells of its full budget).
    """
    cells_of = cells_of or n_patches
    grid = uniform_starts(length, cells_of).tolist() + [length]
    cells = []  # (start, length) of every cell
    for j in range(cells_of):
        gap = grid[j + 1] - grid[j]
        cells += [(grid[j] + k * gap / knots, gap / knots) for k in range(knots)]
    weights = np.exp(np.asarray(action, dtype=np.float64) - max(action))
    mass = weights / weights.sum()
    starts = [0]
    for j in range(1, n_patches):
        level, before = j / n_patches, 0.0
        for (start, size), m in zip(cells, mass):
            if before + m >= level:
                starts.append(round(start + min(1.0, max(0.0, (level - before) / m)) * size))
                break
            before += m
        else:
            starts.append(round(cells[-1][0] + cells[-1][1]))
    projected = [0]
    running = -10**9
    for j in range(1, n_patches):
        running = max(running, starts[j] - j * shortest)
        projected.append(min(max(running, 0), length - n_patches * shortest) + j * shortest)
    return projected


@pytest.mark.parametrize("length, n_patches, knots", [(96, 12, 2), (100, 13, 3), (40, 5, 1)])
def test_density_log_prob_and_starts_match_brute_force(monkeypatch, length, n_patches, knots):
    """Reconstruct the action from the seeded noise: the Gaussian log-density (scipy) and the
    quantile starts (a plain loop) agree with the policy's."""
    sigma, group = 0.7, 6
    patcher = small_learned(density_sigma=sigma, density_knots=knots)
    torch.manual_seed(3)
    scores = torch.randn(length)
    fixed_scores(patcher, scores, monkeypatch)
    policy = patcher.policy
    _, _, steps = policy._cells(length, n_patches, torch.device("cpu"))
    mean = steps.means(scores[None])[0].double()  # (K,)
    rows = 2
    torch.manual_seed(11)
    patching = patcher.sample(torch.zeros(rows, length), n_patches, group)
    torch.manual_seed(11)
    half = torch.randn(rows, group // 2, mean.shape[0])
    noise = torch.cat([half, -half], dim=1).double()  # antithetic pairs
    for r in range(rows):
        for g in range(group):
            action = mean + sigma * noise[r, g]
            expected = stats.norm.logpdf(action.numpy(), mean.numpy(), sigma).sum()
            assert patching.log_prob[r, g].item() == pytest.approx(expected, rel=1e-4)
            shortest = min(2, int(patch_lengths(uniform_starts(length, n_patches), length).min()))
            assert patching.starts[r, g].tolist() == brute_force_quantiles(
                action.tolist(), length, n_patches, knots, shortest)
    kl = (mean**2).sum() / (2 * sigma**2)
    assert patching.kl[0].item() == pytest.approx(kl.item(), rel=1e-5)
    normal = torch.distributions.Normal(mean, sigma)
    assert patching.entropy[0].item() == pytest.approx(normal.entropy().sum().item(), rel=1e-5)


def test_density_can_move_boundaries_far_from_the_grid():
    """Unlike offsets, a density that favours the window's end puts most patches there."""
    policy = DensityPolicy(sigma=0.25, knots=2)
    scores = torch.cat([torch.full((1, 48), -3.0), torch.full((1, 48), 3.0)], dim=1)
    starts = policy.draw(scores, 12, 1, sample=False).starts[0, 0]
    assert int(starts[1]) > 40  # the first patch covers almost the whole first half
    lengths = patch_lengths(starts, 96)
    assert int(lengths.min()) >= 2  # min_length


def test_decode_margin_keeps_the_grid_where_the_scores_are_small():
    """Cells within the margin decode as the grid; a cell far beyond it still moves a start;
    draws ignore the margin."""
    length, n_patches = 96, 12
    grid = uniform_starts(length, n_patches, torch.device("cpu"))
    torch.manual_seed(0)
    weak = 0.2 * torch.randn(4, length)  # |cell means| well below 0.5 * sigma
    strong = weak.clone()
    strong[:, 40:43] += 6.0  # a peak of density: a short patch around step 41
    plain, margin = DensityPolicy(sigma=0.5), DensityPolicy(sigma=0.5, decode_margin=1.0)
    assert not torch.equal(plain.mode(weak, n_patches)[:, 0], grid.expand(4, -1))
    assert torch.equal(margin.mode(weak, n_patches)[:, 0], grid.expand(4, -1))
    moved = margin.mode(strong, n_patches)[:, 0]
    assert torch.equal(moved, margin.draw(strong, n_patches, 1, sample=False).starts[:, 0])
    assert bool(((moved >= 38) & (moved <= 44)).sum(-1).ge(2).all())
    torch.manual_seed(1)
    drawn_plain = plain.draw(weak, n_patches, 4, sample=True)
    torch.manual_seed(1)
    drawn_margin = margin.draw(weak, n_patches, 4, sample=True)
    assert torch.equal(drawn_plain.starts, drawn_margin.starts)
    torch.testing.assert_close(drawn_plain.log_prob, drawn_margin.log_prob)


def test_density_samples_come_in_antithetic_pairs():
    policy = DensityPolicy(sigma=0.5)
    torch.manual_seed(0)
    draws = policy.draw(torch.zeros(3, 48), 6, 4, sample=True)
    # with a zero mean the log-density of eps and -eps is the same
    torch.testing.assert_close(draws.log_prob[:, :2], draws.log_prob[:, 2:])


# -- every policy --------------------------------------------------------------------------------


@SETTINGS
@given(length=st.integers(4, 120), data=st.data())
def test_two_level_draws_are_valid_and_nested(length, data):
    """Fine and coarse samples: sorted, distinct, exactly N1 and N2, coarse a subset of fine."""
    n_fine = data.draw(st.integers(2, length))
    n_coarse = data.draw(st.integers(1, n_fine))
    patcher = small_learned(levels=2, scored=True)
    torch.manual_seed(length)
    x = torch.randn(3, length)
    for patching in (patcher.sample(x, n_fine, 4, n_coarse_patches=n_coarse),
                     patcher.decode(x, n_fine, n_coarse_patches=n_coarse)):
        fine, coarse = patching.starts, patching.coarse_starts
        assert fine.shape[-1] == n_fine and coarse.shape[-1] == n_coarse
        assert bool((fine.diff(dim=-1) > 0).all()) and bool((coarse.diff(dim=-1) > 0).all())
        assert bool((fine[..., 0] == 0).all()) and bool((coarse[..., 0] == 0).all())
        assert bool((fine < length).all())
        nested = (coarse.unsqueeze(-1) == fine.unsqueeze(-2)).any(-1)  # (R, G, N2)
        assert bool(nested.all())
        assert bool(torch.isfinite(patching.log_prob).all())


def test_kl_is_zero_at_the_reference_and_positive_away_from_it():
    torch.manual_seed(0)
    x = torch.randn(4, 64)
    fresh = LearnedPatcher(hidden_size=8, n_layers=2)
    scored = small_learned(scored=True)
    assert torch.equal(fresh.decode(x, 8).kl, torch.zeros(4))
    assert bool((scored.decode(x, 8).kl > 0).all())


def test_explore_decode_and_samples_share_one_score_pass(monkeypatch):
    patcher = small_learned(scored=True)
    calls = []
    original = patcher.level_logits
    monkeypatch.setattr(patcher, "level_logits", lambda x: calls.append(1) or original(x))
    x = torch.randn(3, 48)
    decoded, samples = patcher.explore(x, 6, 5)
    assert len(calls) == 1
    assert decoded.starts.shape == (3, 1, 6) and samples.starts.shape == (3, 5, 6)
    assert torch.equal(decoded.starts, patcher.decode(x, 6).starts)


def test_bad_settings_are_clear_errors():
    with pytest.raises(ValueError, match="sigma must be > 0"):
        DensityPolicy(sigma=0.0)
    with pytest.raises(ValueError, match="decode_margin must be >= 0"):
        DensityPolicy(decode_margin=-0.5)


def test_policy_draws_are_exhaustive_on_a_tiny_case():
    """L = 6, N = 3: every sample is a valid patching with a finite log-probability."""
    patcher = small_learned(scored=True)
    torch.manual_seed(0)
    patching = patcher.sample(torch.randn(2, 6), 3, 200)
    all_patchings = {(0, a, b) for a, b in itertools.combinations(range(1, 6), 2)}
    assert {tuple(s) for s in patching.starts.reshape(-1, 3).tolist()} <= all_patchings
    assert bool(torch.isfinite(patching.log_prob).all())


@pytest.mark.parametrize("length, n_patches, knots",
                         [(96, 12, 4), (97, 7, 3), (24, 12, 4), (512, 64, 4)])
def test_density_cell_means_equal_the_dense_step_to_cell_average(length, n_patches, knots):
    """The padded-index means (linear in L) are the dense one-hot average's (O(L * K))."""
    import torch.nn.functional as F

    from reinpatch_forecast.nn.policies import DensityPolicy

    policy = DensityPolicy(knots=knots)
    cell_start, _, steps = policy._cells(length, n_patches, torch.device("cpu"))
    scores = torch.randn(5, length, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    centre = torch.arange(length, dtype=torch.float64) + 0.5
    cell = (torch.searchsorted(cell_start, centre, right=True) - 1).clamp(min=0)
    member = F.one_hot(cell, cell_start.shape[0]).double()  # (L, K)
    dense = scores @ (member / member.sum(dim=0).clamp(min=1.0))
    torch.testing.assert_close(steps.means(scores), dense, rtol=1e-12, atol=1e-12)
