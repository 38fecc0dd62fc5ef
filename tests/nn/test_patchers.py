"""Tests of :mod:`reinpatch_forecast.nn.patchers`: every patcher (the density policy's
sampling: ``test_policies.py``)."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from reinpatch_forecast.nn.backbone import PatchTokeniser
from reinpatch_forecast.nn.network import ReinPatchConfig, ReinPatchNetwork
from reinpatch_forecast.nn.patchers import (
    PATCHER_NAMES,
    LearnedPatcher,
    RandomPatcher,
    UniformPatcher,
    VolatilityPatcher,
    make_patcher,
)
from reinpatch_forecast.nn.segments import patch_lengths, resample_patches

from nn_support import ALL_PATCHERS, SETTINGS, make, small_learned  # noqa: E402


def assert_valid(patching, rows, group, length, n_patches):
    """A patching is well formed: shapes, sorted, distinct, first start 0, all < L."""
    starts = patching.starts
    assert starts.shape == (rows, group, n_patches)
    assert starts.dtype == torch.long
    assert bool((starts[..., 0] == 0).all())
    assert bool((starts.diff(dim=-1) > 0).all())  # sorted and distinct
    assert bool((starts < length).all())
    assert bool((patch_lengths(starts, length).sum(-1) == length).all())
    assert patching.log_prob.shape == (rows, group)
    assert patching.entropy.shape == (rows,)
    assert bool(torch.isfinite(patching.log_prob).all())
    assert bool(torch.isfinite(patching.entropy).all())
    assert patching.kl.shape == (rows,) and bool((patching.kl >= -1e-6).all())


@SETTINGS
@given(
    name=st.sampled_from(ALL_PATCHERS),
    length=st.integers(2, 80),
    data=st.data(),
)
def test_every_patcher_gives_valid_patchings(name, length, data):
    """sample and decode: shapes, sorted, distinct, start at 0, < L, exactly N patches."""
    n_patches = data.draw(st.integers(1, length))
    rows = data.draw(st.integers(1, 3))
    group = data.draw(st.integers(1, 4))
    patcher = make(name)
    torch.manual_seed(length)
    x = torch.randn(rows, length)
    assert_valid(patcher.sample(x, n_patches, group), rows, group, length, n_patches)
    assert_valid(patcher.decode(x, n_patches), rows, 1, length, n_patches)


@pytest.mark.parametrize("name", ALL_PATCHERS)
def test_budget_extremes(name):
    """N = 1 gives the single patch [0, L); N = L gives one patch per step."""
    patcher = make(name)
    x = torch.randn(2, 9)
    one = patcher.sample(x, 1, 3)
    assert one.starts.shape[-1] == 1 and bool((one.starts == 0).all())
    assert torch.equal(one.log_prob, torch.zeros_like(one.log_prob))
    every = patcher.sample(x, 9, 3)
    assert bool((every.starts == torch.arange(9)).all())


@pytest.mark.parametrize("name", ALL_PATCHERS)
def test_decode_is_deterministic(name):
    """decode gives the same starts on the same input, whatever the global RNG does in between."""
    patcher = make(name)
    x = torch.randn(5, 40)
    first = patcher.decode(x, 6)
    torch.rand(100)  # move the global generator
    second = patcher.decode(x, 6)
    assert torch.equal(first.starts, second.starts)
    torch.testing.assert_close(first.log_prob, second.log_prob)


def test_random_patcher_decode_repeatable_and_sample_seeded():
    """RandomPatcher.decode depends on its seed only; sample follows torch.manual_seed."""
    x = torch.randn(6, 50)
    a = RandomPatcher(seed=3).decode(x, 7).starts
    b = RandomPatcher(seed=3).decode(x, 7).starts
    c = RandomPatcher(seed=4).decode(x, 7).starts
    assert torch.equal(a, b) and not torch.equal(a, c)
    patcher = RandomPatcher()
    torch.manual_seed(5)
    s1 = patcher.sample(x, 7, 4).starts
    torch.manual_seed(5)
    s2 = patcher.sample(x, 7, 4).starts
    s3 = patcher.sample(x, 7, 4).starts
    assert torch.equal(s1, s2) and not torch.equal(s1, s3)
    # fresh draws differ across the group (a reference with no signal, not a fixed rule)
    assert not torch.equal(s1[:, 0], s1[:, 1])


def test_learned_sample_follows_the_global_seed_and_varies_within_a_group():
    """Same torch seed, same draws; the G draws of a row are not all the same."""
    patcher = small_learned()
    x = torch.randn(4, 64)
    torch.manual_seed(9)
    a = patcher.sample(x, 8, 6)
    torch.manual_seed(9)
    b = patcher.sample(x, 8, 6)
    assert torch.equal(a.starts, b.starts)
    torch.testing.assert_close(a.log_prob, b.log_prob)
    distinct = {tuple(s) for s in a.starts[0].tolist()}
    assert len(distinct) > 1


def test_learned_log_prob_and_kl_reach_the_patcher_parameters():
    """The sampled log_prob and the KL are differentiable w.r.t. every patcher parameter."""
    patcher = small_learned(scored=True)
    patching = patcher.sample(torch.randn(3, 40), 6, 4)
    assert not patching.starts.requires_grad
    (patching.log_prob.sum() + patching.kl.sum()).backward()
    for name, parameter in patcher.named_parameters():
        assert parameter.grad is not None, name
        assert bool(torch.isfinite(parameter.grad).all()), name
    assert sum(p.grad.abs().sum() for p in patcher.parameters()) > 0


@pytest.mark.parametrize("name", ["uniform", "random", "volatility"])
def test_rule_patchers_have_zero_log_prob_and_no_parameters(name):
    """Fixed rules: zero log-prob and entropy, nothing to train."""
    patcher = make_patcher(name)
    out = patcher.sample(torch.randn(3, 30), 5, 2)
    assert torch.equal(out.log_prob, torch.zeros(3, 2))
    assert torch.equal(out.entropy, torch.zeros(3)) and torch.equal(out.kl, torch.zeros(3))
    assert not patcher.trainable and list(patcher.parameters()) == []


def test_freeze_and_make_patcher():
    """freeze stops training; make_patcher builds each name and rejects others with the list."""
    patcher = small_learned()
    assert patcher.trainable
    assert patcher.freeze() is patcher and not patcher.trainable
    for name, cls in zip(PATCHER_NAMES,
                         (LearnedPatcher, UniformPatcher, RandomPatcher, VolatilityPatcher)):
        assert isinstance(make_patcher(name), cls)
    with pytest.raises(ValueError, match="'learned'.*'uniform'.*'random'.*'volatility'"):
        make_patcher("entropy")
    with pytest.raises(ValueError, match="kernel_size"):
        LearnedPatcher(kernel_size=4)
    with pytest.raises(TypeError, match="policy"):
        LearnedPatcher(policy="offset")  # the package's patcher has the density policy only


# -- uniform = PatchTST -------------------------------------------------------------------------


@pytest.mark.parametrize("rate, n_patches", [(1, 12), (2, 12), (4, 24), (8, 12), (16, 6), (7, 5)])
def test_uniform_starts_every_rate_steps(rate, n_patches):
    """With L divisible by R the uniform patcher starts at 0, R, 2R, ..."""
    length = rate * n_patches
    out = UniformPatcher().sample(torch.randn(3, length), n_patches, 2)
    assert out.starts.tolist() == [[list(range(0, length, rate))] * 2] * 3


@pytest.mark.parametrize("length, n_patches", [(10, 4), (97, 12), (100, 31), (9, 6), (50, 49)])
def test_uniform_starts_when_not_divisible(length, n_patches):
    """Otherwise the patching is still valid and no patch is longer than ceil(L / N)."""
    out = UniformPatcher().decode(torch.randn(2, length), n_patches)
    assert_valid(out, 2, 1, length, n_patches)
    lengths = patch_lengths(out.starts, length)
    assert int(lengths.max()) <= math.ceil(length / n_patches)
    if (n_patches - 1) * math.ceil(length / n_patches) < length:
        # end-aligned: every patch but the first has ceil(L / N) steps, as in PatchTST
        assert bool((lengths[..., 1:] == math.ceil(length / n_patches)).all())


@pytest.mark.parametrize("rate", [1, 2])
def test_uniform_resampled_equals_patchtst_patches_exactly(rate):
    """resample_patches(x, uniform starts, P=R) is x.reshape(rows, N, R) bit for bit."""
    torch.manual_seed(0)
    x = torch.randn(5, rate * 13)
    starts = UniformPatcher().decode(x, 13).starts
    assert torch.equal(resample_patches(x, starts, rate)[:, 0], x.reshape(5, 13, rate))


@pytest.mark.parametrize("rate", [3, 4, 7, 8, 12, 16])
def test_uniform_resampled_equals_patchtst_patches(rate):
    """resample_patches(x, uniform starts, P=R) equals x.unfold(-1, R, R) to float32 rounding."""
    torch.manual_seed(0)
    x = torch.randn(5, rate * 13)
    starts = UniformPatcher().decode(x, 13).starts
    torch.testing.assert_close(
        resample_patches(x, starts, rate)[:, 0], x.unfold(-1, rate, rate), rtol=0, atol=1e-5
    )


@pytest.mark.parametrize("rate", [8, 12, 16])
def test_uniform_resampled_equals_patchtst_patches_bitwise(rate):
    """resample_patches(x, uniform starts, P=R) is x.reshape(rows, N, R) bit for bit."""
    torch.manual_seed(0)
    x = torch.randn(5, rate * 13)
    starts = UniformPatcher().decode(x, 13).starts
    assert torch.equal(resample_patches(x, starts, rate)[:, 0], x.reshape(5, 13, rate))


@pytest.mark.parametrize("rate", [2, 4, 8])
def test_uniform_tokens_are_a_linear_map_of_patchtst_patches(rate):
    """With the local-mean and position parts zeroed, the tokeniser with P=R gives
    Linear(x.unfold(-1, R, R)) tokens."""
    n_patches = 12
    length = rate * n_patches
    torch.manual_seed(0)
    tokeniser = PatchTokeniser(8, rate)
    with torch.no_grad():
        for part in (tokeniser.local_out, tokeniser.position_proj):
            part.weight.zero_()
            part.bias.zero_()
    x = torch.randn(6, length)
    starts = UniformPatcher().sample(x, n_patches, 2).starts
    tokens = tokeniser(x, starts)  # (R*G, N, d)
    patches = x.unfold(-1, rate, rate)  # (R, N, R): PatchTST, stride = patch length
    expected = tokeniser.resampled_proj(patches).repeat_interleave(2, dim=0)
    torch.testing.assert_close(tokens, expected, rtol=1e-5, atol=1e-5)


# -- volatility ---------------------------------------------------------------------------------


def test_volatility_picks_the_largest_jumps():
    """A series with known jumps: the patcher starts patches exactly at the N-1 largest |dx|."""
    torch.manual_seed(0)
    length = 80
    x = 0.01 * torch.randn(2, length)
    jumps = {13: 5.0, 31: -4.0, 52: 3.0, 70: -2.0}  # position t: x_t - x_{t-1} ~ size
    for t, size in jumps.items():
        x[:, t:] += size
    patcher = VolatilityPatcher()
    assert patcher.decode(x, 5).starts.tolist() == [[[0, 13, 31, 52, 70]]] * 2
    assert patcher.decode(x, 3).starts.tolist() == [[[0, 13, 31]]] * 2  # the two largest
    # a downward jump counts by its size
    assert patcher.decode(-x, 2).starts.tolist() == [[[0, 13]]] * 2
    group = patcher.sample(x, 4, 3)
    assert group.starts.tolist() == [[[0, 13, 31, 52]] * 3] * 2


# -- flat series ----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ALL_PATCHERS)
@pytest.mark.parametrize("length, n_patches", [(2, 2), (10, 4), (64, 8)])
def test_flat_series_gives_valid_deterministic_patching(name, length, n_patches):
    """A constant series: valid patchings from sample and decode, and a repeatable decode."""
    patcher = make(name)
    x = torch.zeros(3, length)
    torch.manual_seed(0)
    assert_valid(patcher.sample(x, n_patches, 2), 3, 2, length, n_patches)
    first = patcher.decode(x, n_patches)
    assert_valid(first, 3, 1, length, n_patches)
    assert torch.equal(first.starts, patcher.decode(x.clone(), n_patches).starts)
    if name != "random":  # a rule or a policy patches every row of a flat batch alike
        assert bool((first.starts == first.starts[:1]).all())
    if name == "volatility":  # ties go to the earliest positions
        assert first.starts[0, 0].tolist() == list(range(n_patches))


# -- the learned patcher does not depend on L ---------------------------------------------------


def test_learned_patcher_is_independent_of_length():
    """One LearnedPatcher serves L = 32 and L = 200; networks of both lengths share its weights."""
    patcher = small_learned(scored=True)
    shapes = [tuple(p.shape) for p in patcher.parameters()]
    for length, n_patches in ((32, 4), (200, 25), (5, 2)):
        x = torch.randn(3, length)
        assert patcher.logits(x).shape == (3, length)
        assert_valid(patcher.sample(x, n_patches, 2), 3, 2, length, n_patches)
        assert_valid(patcher.decode(x, n_patches), 3, 1, length, n_patches)
    assert [tuple(p.shape) for p in patcher.parameters()] == shapes
    sizes = dict(d_model=8, n_heads=2, n_layers=1)
    short = ReinPatchNetwork(ReinPatchConfig(input_length=32, output_length=4, backbone=sizes))
    long = ReinPatchNetwork(ReinPatchConfig(input_length=200, output_length=4, backbone=sizes))
    long.patcher.load_state_dict(short.patcher.state_dict())  # strict: identical shapes
    x = torch.randn(2, 32, 1)
    # the same patcher object can be handed to a network of another length
    shared = ReinPatchNetwork(long.config, patcher=short.patcher)
    assert shared.boundaries(torch.randn(2, 200, 1)).shape == (2, 1, 25)
    assert short.boundaries(x).shape == (2, 1, 4)
