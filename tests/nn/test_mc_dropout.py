"""Group-shared dropout as a module (:class:`~reinpatch_forecast.nn.backbone.GroupDropout`):
the training masks of a GRPG group stay shared, and Monte-Carlo dropout draws a mask per row
(per forecast sample) in evaluation mode."""

from __future__ import annotations

import torch

from reinpatch_forecast.nn.backbone import Backbone, GroupDropout, group_dropout, set_mc_dropout

from reinpatch_forecast.nn.config import ReinPatchConfig

from nn_support import small_network  # noqa: E402

R, G, N, D, L = 3, 4, 8, 16, 32


def small_backbone() -> Backbone:
    """A backbone over ``N`` patches with dropout 0.5."""
    return Backbone(ReinPatchConfig(
        input_length=L, output_length=4, compression_rate=L // N,
        backbone=dict(d_model=8, n_heads=2, n_layers=1, dropout=0.5, resample_points=4)))


def uniform_starts(rows: int, group: int) -> torch.Tensor:
    """``(rows, group, N)`` int64: every patching the uniform grid, so the rows of a group are
    the same input."""
    return torch.arange(0, L, L // N).expand(rows, group, N).contiguous()


def test_training_mask_is_shared_by_the_group():
    """In training mode the G rows of one series get one mask; the series get their own."""
    drop = GroupDropout(0.5).train()
    torch.manual_seed(0)
    out = drop(torch.ones(R * G, N, D), G).reshape(R, G, N, D)  # (R, G, N, D)
    assert set(out.unique().tolist()) == {0.0, 2.0}  # dropped, or kept and rescaled
    for g in range(1, G):
        assert torch.equal(out[:, g], out[:, 0])
    assert not torch.equal(out[0, 0], out[1, 0])


def test_module_draws_as_the_function():
    """Training draws are those of :func:`group_dropout`: the same seed gives the same bytes."""
    h = torch.randn(R * G, N, D, generator=torch.Generator().manual_seed(1))
    torch.manual_seed(2)
    expected = group_dropout(h, 0.3, G, True)
    torch.manual_seed(2)
    assert torch.equal(GroupDropout(0.3).train()(h, G), expected)


def test_evaluation_is_the_identity_until_mc_dropout_is_on():
    """Off (the default) evaluation draws nothing; on, every row (a sample, ``G == 1``) draws
    its own mask; off again, the identity."""
    drop = GroupDropout(0.5).eval()
    h = torch.ones(8, N, D)  # eight samples of the same input
    state = torch.get_rng_state()
    assert drop(h) is h
    assert torch.equal(torch.get_rng_state(), state)
    set_mc_dropout(drop, True)
    assert drop.mc_dropout_enabled and not drop.training
    out = drop(h)
    assert len({tuple(row.flatten().tolist()) for row in out}) == 8
    set_mc_dropout(drop, False)
    assert drop(h) is h


def test_zero_rate_with_mc_dropout_is_the_identity():
    drop = GroupDropout(0.0).eval()
    set_mc_dropout(drop, True)
    h = torch.randn(4, N, D)
    assert drop(h) is h


def test_backbone_group_shares_masks_in_training():
    """Identical patchings of a series give identical forecasts under training dropout (one
    mask per series), and the masks are real (the evaluation forecast differs)."""
    torch.manual_seed(0)
    backbone = small_backbone().train()
    x = torch.randn(R, L, generator=torch.Generator().manual_seed(3))
    out = backbone(x, uniform_starts(R, G)).reshape(R, G, -1)  # (R, G, H*Q)
    for g in range(1, G):
        assert torch.equal(out[:, g], out[:, 0])
    with torch.no_grad():
        evaluated = backbone.eval()(x, uniform_starts(R, 1)).reshape(R, -1)
    assert not torch.allclose(out[:, 0], evaluated, atol=1e-4)


def test_backbone_mc_dropout_gives_each_sample_its_own_mask():
    """With MC dropout on in evaluation mode, copies of one window (the samples darts tiles)
    get different forecasts; off, they are equal again."""
    torch.manual_seed(0)
    backbone = small_backbone().eval()
    x = torch.randn(1, L, generator=torch.Generator().manual_seed(4)).expand(6, L)
    starts = uniform_starts(6, 1)
    with torch.no_grad():
        deterministic = backbone(x, starts)  # (6, H, Q)
        set_mc_dropout(backbone, True)
        sampled = backbone(x, starts)
        set_mc_dropout(backbone, False)
        again = backbone(x, starts)
    assert all(torch.equal(row, deterministic[0]) for row in deterministic)
    assert len({tuple(row.flatten().tolist()) for row in sampled}) == 6
    assert torch.equal(again, deterministic)


def test_network_mc_samples_and_unchanged_state():
    """A whole network: MC dropout gives distinct forecasts of tiled windows; the dropout
    modules hold no state, so saved weights keep their keys."""
    network = small_network(dropout=0.2).eval()
    assert not any("dropout" in key for key in network.state_dict())
    assert sum(isinstance(m, GroupDropout) for m in network.modules()) == 2  # layer and head
    x = torch.randn(1, L, 2, generator=torch.Generator().manual_seed(5)).expand(5, L, 2)
    with torch.no_grad():
        point = network(x)  # (5, H, C, 1)
        set_mc_dropout(network, True)
        samples = network(x)
        set_mc_dropout(network, False)
        assert torch.equal(network(x), point)
    assert len({tuple(s.flatten().tolist()) for s in samples}) == 5
