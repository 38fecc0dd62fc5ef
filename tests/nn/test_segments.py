"""Tests of :mod:`reinpatch_forecast.nn.segments` against plain Python-loop references."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from reinpatch_forecast.nn.segments import (
    check_budget,
    patch_ends,
    patch_lengths,
    resample_patches,
    segment_mean,
    token_budget,
)

SETTINGS = settings(max_examples=60, deadline=None, derandomize=True, database=None)


# -- helpers and loop references ---------------------------------------------------------------


def random_starts(rows: int, group: int, length: int, n_patches: int, seed: int = 0):
    """Random valid patchings ``(rows, group, n_patches)``: sorted, distinct, first start 0."""
    generator = torch.Generator().manual_seed(seed)
    out = torch.zeros(rows, group, n_patches, dtype=torch.long)
    for r in range(rows):
        for g in range(group):
            chosen = torch.randperm(length - 1, generator=generator)[: n_patches - 1] + 1
            out[r, g, 1:] = torch.sort(chosen).values
    return out


def ref_ends(row, length):
    """Exclusive end of each patch of one row of starts (a list)."""
    return [row[j + 1] if j + 1 < len(row) else length for j in range(len(row))]


def ref_segment_mean(features, starts):
    rows, length, dim = features.shape
    _, group, n_patches = starts.shape
    out = torch.zeros(rows, group, n_patches, dim, dtype=features.dtype)
    for r in range(rows):
        for g in range(group):
            row = starts[r, g].tolist()
            for j, (s, e) in enumerate(zip(row, ref_ends(row, length))):
                out[r, g, j] = features[r, s:e].sum(dim=0) / (e - s)
    return out


def ref_resample(values, starts, n_points):
    """Area (box-filter) resampling of each patch to ``P`` points, written out per patch in numpy.

    The patch ``[s, e)`` is the step function ``x_t`` on ``[t, t + 1)``; point ``k`` is its mean
    over ``[s + k n / P, s + (k + 1) n / P)``: the overlap of that interval with every step,
    times the step's value, summed and divided by the interval's width.
    """
    rows, length = values.shape
    _, group, n_patches = starts.shape
    out = np.zeros((rows, group, n_patches, n_points))
    vals = values.detach().double().numpy()
    for r in range(rows):
        for g in range(group):
            row = starts[r, g].tolist()
            for j, (s, e) in enumerate(zip(row, ref_ends(row, length))):
                n = e - s
                for k in range(n_points):
                    a, b = s + k * n / n_points, s + (k + 1) * n / n_points
                    steps = np.arange(s, e)
                    overlap = np.clip(np.minimum(b, steps + 1) - np.maximum(a, steps), 0, None)
                    out[r, g, j, k] = (overlap * vals[r, s:e]).sum() / (b - a)
    return torch.from_numpy(out)


@st.composite
def patchings(draw, max_length: int = 48, max_rows: int = 3, max_group: int = 3):
    """A random window length, budget and valid start set ``(R, G, N)``."""
    length = draw(st.integers(1, max_length))
    n_patches = draw(st.integers(1, length))
    rows = draw(st.integers(1, max_rows))
    group = draw(st.integers(1, max_group))
    starts = torch.zeros(rows, group, n_patches, dtype=torch.long)
    for r in range(rows):
        for g in range(group):
            chosen = draw(
                st.lists(
                    st.integers(1, max(1, length - 1)),
                    min_size=n_patches - 1,
                    max_size=n_patches - 1,
                    unique=True,
                )
            )
            starts[r, g, 1:] = torch.tensor(sorted(chosen), dtype=torch.long)
    return length, starts


# -- each op against its loop reference ---------------------------------------------------------


@pytest.mark.parametrize("shape", [(5, 9), (2, 3, 9), (9,)])
def test_patch_ends_and_lengths_match_reference(shape):
    """Ends are the next start (L for the last patch) on any leading shape; lengths = e - s."""
    length, n_patches = 40, shape[-1]
    rows = math.prod(shape[:-1])
    starts = random_starts(rows, 1, length, n_patches, seed=3).reshape(shape)
    ends = patch_ends(starts, length)
    lengths = patch_lengths(starts, length)
    assert ends.shape == shape and lengths.shape == shape
    flat_starts = starts.reshape(-1, n_patches).tolist()
    flat_ends = ends.reshape(-1, n_patches).tolist()
    flat_lengths = lengths.reshape(-1, n_patches).tolist()
    for row, row_ends, row_lengths in zip(flat_starts, flat_ends, flat_lengths):
        expected = ref_ends(row, length)
        assert row_ends == expected
        assert row_lengths == [e - s for s, e in zip(row, expected)]


@pytest.mark.parametrize("group", [1, 4])
@pytest.mark.parametrize("length, n_patches, dim", [(1, 1, 3), (24, 1, 2), (24, 24, 2), (37, 6, 5)])
def test_segment_mean_matches_reference(group, length, n_patches, dim):
    """segment_mean equals the per-row, per-patch mean loop, for G = 1 and G > 1."""
    torch.manual_seed(0)
    rows = 4
    features = torch.randn(rows, length, dim)
    starts = random_starts(rows, group, length, n_patches, seed=group + length)
    got = segment_mean(features, starts)
    assert got.shape == (rows, group, n_patches, dim)
    torch.testing.assert_close(got, ref_segment_mean(features, starts), rtol=1e-5, atol=1e-5)


def test_segment_mean_groups_are_independent_patchings():
    """Each of the G patchings of a row gives the same result as that patching alone."""
    torch.manual_seed(1)
    features = torch.randn(3, 30, 4)
    starts = random_starts(3, 5, 30, 6, seed=11)
    together = segment_mean(features, starts)
    for g in range(5):
        alone = segment_mean(features, starts[:, g : g + 1])
        torch.testing.assert_close(together[:, g : g + 1], alone, rtol=0, atol=0)


@pytest.mark.parametrize("n_points", [1, 2, 3, 8])
@pytest.mark.parametrize("group", [1, 3])
@pytest.mark.parametrize("length, n_patches", [(1, 1), (16, 1), (16, 16), (45, 7), (60, 3)])
def test_resample_patches_matches_reference(n_points, group, length, n_patches):
    """resample_patches equals the per-patch area reference for every P, G > 1, any length."""
    torch.manual_seed(2)
    rows = 3
    values = torch.randn(rows, length)
    starts = random_starts(rows, group, length, n_patches, seed=n_points + group)
    got = resample_patches(values, starts, n_points)
    assert got.shape == (rows, group, n_patches, n_points) and got.dtype == torch.float32
    expected = ref_resample(values, starts, n_points).float()
    torch.testing.assert_close(got, expected, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("n_points", [1, 3, 4, 5, 8, 12])
def test_resample_patches_matches_reference_on_random_cases(n_points):
    """Random patchings with patches shorter, equal to and much longer than P, float64 exact."""
    generator = torch.Generator().manual_seed(20 + n_points)
    for case in range(6):
        length = int(torch.randint(1, 90, (1,), generator=generator))
        n_patches = int(torch.randint(1, length + 1, (1,), generator=generator))
        starts = random_starts(2, 2, length, n_patches, seed=case)
        values = torch.randn(2, length, generator=generator, dtype=torch.float64)
        torch.testing.assert_close(
            resample_patches(values, starts, n_points), ref_resample(values, starts, n_points),
            rtol=0, atol=1e-12,
        )


@pytest.mark.parametrize("n_points", [3, 5, 8, 12])
def test_resample_patches_returns_a_patch_of_p_steps_bit_for_bit(n_points):
    """A patch of exactly P steps gives its P values bit for bit, wherever it lies."""
    generator = torch.Generator().manual_seed(n_points)
    values = torch.randn(4, 60, generator=generator)
    # patches of P steps at different offsets, between patches of other lengths
    starts = torch.tensor([[[0, 2, 2 + n_points, 30, 30 + n_points, 30 + 2 * n_points]]])
    starts = starts.expand(4, 1, -1)
    out = resample_patches(values, starts, n_points)
    for j, s in [(1, 2), (3, 30), (4, 30 + n_points)]:
        assert torch.equal(out[:, 0, j], values[:, s : s + n_points])


@pytest.mark.parametrize("n_points", [2, 4, 6, 8, 12])
def test_resample_patches_repeats_the_values_of_a_short_patch(n_points):
    """A patch of n | P steps gives every value P / n times, bit for bit (piecewise constant)."""
    generator = torch.Generator().manual_seed(n_points)
    values = torch.randn(3, 40, generator=generator)
    for n in [d for d in range(1, n_points + 1) if n_points % d == 0]:
        starts = torch.tensor([[[0, 5, 5 + n]]]).expand(3, 1, -1)
        out = resample_patches(values, starts, n_points)[:, 0, 1]  # (R, P)
        expected = values[:, 5 : 5 + n].repeat_interleave(n_points // n, dim=-1)
        assert torch.equal(out, expected)


@pytest.mark.parametrize("n_points", [3, 5, 8])
def test_resample_patches_is_lossless_up_to_p_steps(n_points):
    """Patches of n <= P steps: each point is a value or a blend of two neighbours, the map
    from the n values to the P points is one to one, and when 2n <= P every value appears."""
    generator = torch.Generator().manual_seed(n_points)
    values = torch.randn(2, 30, generator=generator)
    for n in range(1, n_points + 1):
        starts = torch.tensor([[[0, 3, 3 + n]]]).expand(2, 1, -1)
        out = resample_patches(values, starts, n_points)[:, 0, 1]  # (R, P)
        patch = values[:, 3 : 3 + n]  # (R, n)
        low = torch.minimum(patch[:, :-1], patch[:, 1:]) - 1e-6  # (R, n-1)
        high = torch.maximum(patch[:, :-1], patch[:, 1:]) + 1e-6
        for r in range(2):
            for k in range(n_points):
                point = out[r, k]
                if not bool((patch[r] == point).any()):  # then a blend of two neighbours
                    assert bool(((low[r] <= point) & (point <= high[r])).any())
        if 2 * n <= n_points:
            for r in range(2):
                for t in range(n):
                    assert bool((out[r] == patch[r, t]).any())
        # the linear map's matrix, column by column: rank n means nothing is lost
        basis = torch.zeros(n, 3 + n, dtype=torch.float64)
        basis[:, 3:] = torch.eye(n, dtype=torch.float64)
        matrix = resample_patches(basis, torch.tensor([[[0, 3]]]).expand(n, 1, -1), n_points)
        assert int(torch.linalg.matrix_rank(matrix[:, 0, 1])) == n
        # each point's weights are non-negative and sum to one (a mean)
        weights = matrix[:, 0, 1]  # (n, P)
        torch.testing.assert_close(weights.sum(0), torch.ones(n_points, dtype=torch.float64))
        assert bool((matrix >= 0).all())


@pytest.mark.parametrize("n_points", [1, 3, 4, 8])
def test_resample_patches_box_averages_a_long_patch(n_points):
    """A patch longer than P: the points are box means (their mean is the patch mean, each lies
    within the patch's range) and every value of the patch contributes (no value skipped)."""
    generator = torch.Generator().manual_seed(n_points)
    values = torch.randn(3, 80, generator=generator)
    starts = torch.tensor([[[0, 4, 4 + n_points + 1, 30, 77]]]).expand(3, 1, -1)
    out = resample_patches(values, starts, n_points)  # (R, 1, N, P)
    torch.testing.assert_close(out.mean(-1), segment_mean(values.unsqueeze(-1), starts)[..., 0])
    lengths = patch_lengths(starts, 80)
    for j in range(starts.shape[-1]):
        if int(lengths[0, 0, j]) <= n_points:
            continue
        s, e = int(starts[0, 0, j]), int(patch_ends(starts, 80)[0, 0, j])
        patch = values[:, s:e]
        assert bool((out[:, 0, j] <= patch.max(-1, keepdim=True).values + 1e-6).all())
        assert bool((out[:, 0, j] >= patch.min(-1, keepdim=True).values - 1e-6).all())
    # the gradient of the sum of points reaches every position: no value is skipped
    leaf = values.clone().requires_grad_(True)
    resample_patches(leaf, starts, n_points).sum().backward()
    assert bool((leaf.grad > 0).all())


def test_resample_patches_does_not_alias_a_fast_oscillation():
    """+1, -1, +1, ... over a patch of 2P steps averages to 0 at every point (a box low-pass);
    reading P points of it would return +1 or -1 (aliasing)."""
    values = torch.tensor([1.0, -1.0]).repeat(32).unsqueeze(0)  # (1, 64)
    for n_points in (4, 8, 16):
        starts = torch.arange(0, 64, 2 * n_points).view(1, 1, -1)
        out = resample_patches(values, starts, n_points)
        assert torch.equal(out, torch.zeros_like(out))


def test_resample_patches_one_point_is_the_patch_mean():
    """P = 1 gives the plain mean of each patch, as segment_mean does."""
    torch.manual_seed(3)
    values = torch.randn(2, 20)
    starts = torch.tensor([[[0, 1, 5, 19]], [[0, 2, 3, 10]]])
    torch.testing.assert_close(
        resample_patches(values, starts, 1), segment_mean(values.unsqueeze(-1), starts)
    )


@pytest.mark.parametrize("dtype", [torch.float64, torch.bfloat16, torch.float16])
def test_resample_patches_keeps_the_dtype(dtype):
    """The result has the dtype of the values; low precision is computed in float32 inside."""
    torch.manual_seed(5)
    values = torch.randn(2, 40).to(dtype)
    starts = random_starts(2, 2, 40, 5, seed=1)
    out = resample_patches(values, starts, 8)
    assert out.dtype == dtype
    expected = ref_resample(values.double(), starts, 8).to(dtype)
    torch.testing.assert_close(out, expected)


def test_resample_patches_is_precise_on_a_long_trending_window():
    """Float32 points stay within float32 rounding of the float64 ones on L = 512 (the prefix
    sums of a trending window grow large; they are differenced in float64)."""
    torch.manual_seed(6)
    values = torch.linspace(-1.7, 1.7, 512) + 0.1 * torch.randn(4, 512)
    starts = random_starts(4, 2, 512, 40, seed=2)
    got = resample_patches(values, starts, 8).double()
    torch.testing.assert_close(got, resample_patches(values.double(), starts, 8), rtol=0, atol=1e-6)


def test_resample_patches_rejects_zero_points():
    """n_points < 1 is refused with a message that names it."""
    with pytest.raises(ValueError, match="n_points"):
        resample_patches(torch.zeros(1, 4), torch.zeros(1, 1, 1, dtype=torch.long), 0)


# -- properties of a patching (hypothesis) -----------------------------------------------------


@SETTINGS
@given(patchings())
def test_patchings_tile_the_window(case):
    """Patches tile [0, L): N patches, lengths >= 1 summing to L, ends[j] == starts[j+1]."""
    length, starts = case
    n_patches = starts.shape[-1]
    ends = patch_ends(starts, length)
    lengths = patch_lengths(starts, length)
    assert starts.shape[-1] == n_patches and lengths.shape == starts.shape
    assert bool((lengths >= 1).all())
    assert bool((lengths.sum(-1) == length).all())
    assert torch.equal(ends[..., :-1], starts[..., 1:])
    assert bool((ends[..., -1] == length).all())


@SETTINGS
@given(patchings(max_length=24), st.integers(1, 4), st.integers(1, 5))
def test_segment_ops_match_reference_property(case, dim, n_points):
    """segment_mean and resample_patches equal their loop references on random patchings."""
    length, starts = case
    rows = starts.shape[0]
    generator = torch.Generator().manual_seed(length * 31 + dim)
    features = torch.randn(rows, length, dim, generator=generator, dtype=torch.float64)
    torch.testing.assert_close(segment_mean(features, starts), ref_segment_mean(features, starts))
    values = features[..., 0].contiguous()
    torch.testing.assert_close(
        resample_patches(values, starts, n_points), ref_resample(values, starts, n_points)
    )


@SETTINGS
@given(patchings(max_length=48), st.integers(1, 9))
def test_resample_patches_of_a_constant_is_the_constant(case, n_points):
    """Area resampling of a constant series gives the constant at every point of every patch."""
    length, starts = case
    values = torch.full((starts.shape[0], length), 3.25)
    out = resample_patches(values, starts, n_points)
    torch.testing.assert_close(out, torch.full_like(out, 3.25), rtol=0, atol=1e-6)


@SETTINGS
@given(patchings(max_length=32))
def test_segment_mean_of_constant_features_is_constant(case):
    """The mean of a constant over any patch is that constant (no off-by-one in the prefix sums)."""
    length, starts = case
    features = torch.full((starts.shape[0], length, 2), 3.25)
    out = segment_mean(features, starts)
    assert torch.equal(out, torch.full_like(out, 3.25))


# -- gradients ---------------------------------------------------------------------------------


def test_gradients_reach_features_and_values():
    """Backward from segment_mean / resample_patches gives non-zero grads on every position."""
    torch.manual_seed(4)
    starts = random_starts(3, 2, 20, 5, seed=5)
    features = torch.randn(3, 20, 4, requires_grad=True)
    segment_mean(features, starts).pow(2).sum().backward()
    assert features.grad is not None and torch.isfinite(features.grad).all()
    assert bool((features.grad.abs().sum(-1) > 0).all())  # every position is in some patch

    values = torch.randn(3, 20, requires_grad=True)
    resample_patches(values, starts, 4).sum().backward()
    assert values.grad is not None and torch.isfinite(values.grad).all()
    assert values.grad.abs().sum() > 0
    # the box weights of each point sum to 1: total grad = number of points
    torch.testing.assert_close(values.grad.sum(), torch.tensor(3 * 2 * 5 * 4.0))

    # segment_mean: each patch's weights sum to one, so the total grad per row is G*N per feature
    features.grad = None
    segment_mean(features, starts).sum().backward()
    torch.testing.assert_close(features.grad.sum(1), torch.full((3, 4), 2 * 5.0))


def test_gradcheck_float64():
    """torch.autograd.gradcheck passes for both ops on a tiny float64 case with G = 2."""
    starts = torch.tensor([[[0, 2, 3], [0, 1, 4]], [[0, 3, 4], [0, 2, 5]]])  # (2, 2, 3), L = 6
    features = torch.randn(2, 6, 3, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda f: segment_mean(f, starts), (features,))
    values = torch.randn(2, 6, dtype=torch.float64, requires_grad=True)
    for n_points in (1, 3, 4):
        assert torch.autograd.gradcheck(lambda v: resample_patches(v, starts, n_points), (values,))


# -- the token budget --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "length, rate, expected",
    [(96, 8, 12), (96, 7, 14), (96, 96, 1), (96, 1, 96), (10, 3, 4), (10, 2.5, 4), (1, 1, 1),
     (100, 3.3, 31), (512, 8.0, 64)],
)
def test_token_budget_is_ceil(length, rate, expected):
    """N = ceil(L / R), checked against the formula and a table."""
    assert token_budget(length, rate) == expected == math.ceil(length / rate)


@SETTINGS
@given(st.integers(1, 2000), st.floats(1.0, 2000.0, allow_nan=False))
def test_token_budget_property(length, rate):
    """Whenever 1 <= R <= L the budget is ceil(L/R) and 1 <= N <= L; otherwise a ValueError."""
    if rate > length:
        with pytest.raises(ValueError, match="larger than the lookback"):
            token_budget(length, rate)
        return
    n_patches = token_budget(length, rate)
    assert n_patches == math.ceil(length / rate)
    assert 1 <= n_patches <= length


@pytest.mark.parametrize(
    "length, rate, match",
    [
        (96, 0.5, "must be >= 1"),
        (96, 0, "must be >= 1"),
        (96, -3, "must be >= 1"),
        (96, 97, "larger than the lookback"),
        (96, float("nan"), "finite number"),
        (96, float("inf"), "finite number"),
        (96, "8", "finite number"),
        (0, 1, "input_length must be a positive integer"),
        (12.0, 2, "input_length must be a positive integer"),
    ],
)
def test_check_budget_errors(length, rate, match):
    """Bad budgets raise a ValueError whose message says what was wrong."""
    with pytest.raises(ValueError, match=match):
        check_budget(length, rate)
    with pytest.raises(ValueError, match=match):
        token_budget(length, rate)


def test_check_budget_message_suggests_a_fix():
    """The messages name the offending value and say what to use instead."""
    with pytest.raises(ValueError) as too_small:
        check_budget(96, 0.5)
    assert "0.5" in str(too_small.value) and "compression_rate=1" in str(too_small.value)
    with pytest.raises(ValueError) as too_large:
        check_budget(96, 200)
    message = str(too_large.value)
    assert "200" in message and "96" in message and "<= 96" in message
    check_budget(96, 96)  # the largest valid rate passes
    check_budget(96, 1)


def test_check_budget_accepts_numpy_scalars():
    """A grid built with numpy (np.arange, np.int64) is as valid as plain Python numbers."""
    import numpy as np

    from reinpatch_forecast.nn.segments import token_budget

    assert token_budget(np.int64(96), np.int64(8)) == 12
    assert token_budget(96, np.float32(8.0)) == 12
    assert isinstance(token_budget(96, np.int64(8)), int)
