"""Tests of :class:`reinpatch_forecast.nn.network.ReinPatchNetwork` and its configuration."""

from __future__ import annotations

import dataclasses

import pytest
import torch
import torch.nn.functional as F

from reinpatch_forecast.nn.network import ReinPatchConfig, ReinPatchNetwork, TrainingLosses
from reinpatch_forecast.nn.revin import RevIN

from nn_support import small_config, small_network  # noqa: E402

B, L, C, H = 3, 32, 2, 6


config = small_config
network = small_network


def data(seed: int = 0, batch: int = B, length: int = L, channels: int = C):
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(batch, length, channels, generator=generator).cumsum(1)
    y = torch.randn(batch, H, channels, generator=generator)
    return x, y


def by_window(forecasts, batch: int = B, channels: int = C):
    """The scored forecasts ``(R*(1+G), H, 1, Q)`` (rows ``b * C + c``, each its own series) as
    ``(B, 1+G, H, C, Q)``."""
    return forecasts.reshape(batch, channels, -1, *forecasts.shape[1:2],
                             forecasts.shape[-1]).permute(0, 2, 3, 1, 4)


def grad_norm(parameters) -> float:
    return float(sum(p.grad.abs().sum() for p in parameters if p.grad is not None))


# -- shapes ------------------------------------------------------------------------------------


@pytest.mark.parametrize("patcher", ["learned", "uniform", "random", "volatility"])
@pytest.mark.parametrize("nr_params", [1, 2])
def test_forward_and_boundaries_shapes(patcher, nr_params):
    """forward: (B, H, C, Q); boundaries: (B, C, N) sorted starts from 0."""
    net = network(patcher=patcher, nr_params=nr_params)
    x, _ = data()
    out = net(x)
    assert out.shape == (B, H, C, nr_params)
    assert bool(torch.isfinite(out).all())
    starts = net.boundaries(x)
    assert starts.shape == (B, C, 8) and starts.dtype == torch.long
    assert bool((starts[..., 0] == 0).all()) and bool((starts.diff(dim=-1) > 0).all())


def test_forward_without_revin():
    """revin=False: the raw series goes to patcher and backbone; shapes unchanged, no RevIN."""
    net = network(revin=False)
    assert net.revin is None
    x, y = data()
    assert net(x).shape == (B, H, C, 1)
    losses = net.training_losses(x, y)
    losses.loss.backward()
    assert grad_norm(net.patcher_parameters()) > 0 and grad_norm(net.backbone_parameters()) > 0


def test_forward_rejects_bad_input_shape():
    """A window of the wrong length or rank is refused with the expected shape in the message."""
    net = network()
    with pytest.raises(ValueError, match=r"\(batch, 32, channels\)"):
        net(torch.randn(B, L + 1, C))
    with pytest.raises(ValueError, match=r"\(batch, 32, channels\)"):
        net.training_losses(torch.randn(B, L), torch.randn(B, H))


class Recorder:
    """Wraps ``patcher.explore`` and a sample loss to see what one training step did."""

    def __init__(self, net: ReinPatchNetwork, monkeypatch, force_decode_first: bool = False):
        self.net = net
        explore = net.patcher.explore

        def recording_explore(x, n_patches, group_size, **kwargs):
            decoded, samples = explore(x, n_patches, group_size, **kwargs)
            if force_decode_first:  # sample 0 of every row is the decode itself
                samples.starts = samples.starts.clone()
                samples.starts[:, 0] = decoded.starts[: len(samples.starts), 0]
            self.input, self.decoded, self.samples = x, decoded, samples
            return decoded, samples

        monkeypatch.setattr(net.patcher, "explore", recording_explore)

    def sample_loss(self, prediction, target):
        self.forecasts, self.targets = prediction, target
        return (prediction[..., 0] - target) ** 2


def test_training_step_rows_line_up_with_series_and_patchings(monkeypatch):
    """Each scored forecast (b, g, c) is series x[b, :, c] under that row's patching g (the
    decode first, then the samples), and the backbone loss is the decode's forecast error."""
    net = network(dropout=0.0, scored_share=1.0)
    recorder = Recorder(net, monkeypatch)
    x, y = data(1)
    losses = net.training_losses(x, y, sample_loss=recorder.sample_loss)
    forecasts = by_window(recorder.forecasts)  # (B, 1+G, H, C, Q)
    assert not recorder.forecasts.requires_grad  # rewards carry no gradient
    torch.testing.assert_close(forecasts[:, 0], losses.prediction.detach())
    torch.testing.assert_close(losses.prediction, net(x), rtol=1e-5, atol=1e-5)
    series = x.transpose(1, 2).reshape(B * C, L)  # row = b * C + c
    stats = net.revin.statistics(series)
    normalised = net.revin.normalise(series, stats)
    torch.testing.assert_close(recorder.input, normalised)
    starts = torch.cat([recorder.decoded.starts, recorder.samples.starts], dim=1)  # (R, 5, N)
    for b in range(B):
        for c in range(C):
            r = b * C + c
            for g in range(5):
                alone = net.backbone(normalised[r : r + 1], starts[r : r + 1, g : g + 1])
                expected = alone[0, :, 0] * stats.std[r] + stats.mean[r]  # (H,)
                torch.testing.assert_close(forecasts[b, g, :, c, 0], expected,
                                           rtol=1e-4, atol=1e-4)
    expected_loss = ((losses.prediction[..., 0] - y) ** 2).mean()
    torch.testing.assert_close(losses.backbone_loss, expected_loss)


def test_samples_are_scored_under_the_decodes_dropout_masks(monkeypatch):
    """In training mode with dropout, a sample equal to the decode gets the decode's forecast
    (up to float rounding of a differently shaped batch): the reward difference is the
    patching's, not the dropout mask's."""
    net = network(dropout=0.5, d_model=32, n_heads=2, scored_share=1.0).train()
    recorder = Recorder(net, monkeypatch, force_decode_first=True)
    x, y = data(2, batch=16)
    net.training_losses(x, y, sample_loss=recorder.sample_loss)
    forecasts = by_window(recorder.forecasts, batch=16)
    torch.testing.assert_close(forecasts[:, 0], forecasts[:, 1], rtol=1e-5, atol=1e-5)
    assert not torch.equal(forecasts[:, 0], forecasts[:, 2])  # other patchings do differ
    net.eval()  # the masks were real: without dropout the forecast changes
    assert not torch.allclose(net(x), forecasts[:, 0], atol=1e-4)


def test_samples_share_masks_on_the_chunked_cpu_path(monkeypatch):
    """Same masks when the backbone splits the rows into chunks (large batches on the CPU)."""
    net = network(dropout=0.5, scored_share=1.0).train()
    monkeypatch.setattr(type(net.backbone), "chunk_elements", 2**10)
    assert net.backbone.chunk_rows(B * C, 4, L, with_local=False) < B * C
    recorder = Recorder(net, monkeypatch, force_decode_first=True)
    x, y = data(3)
    net.training_losses(x, y, sample_loss=recorder.sample_loss)
    forecasts = by_window(recorder.forecasts)
    torch.testing.assert_close(forecasts[:, 0], forecasts[:, 1], rtol=1e-5, atol=1e-5)
    net.eval()  # the masks were real
    assert not torch.allclose(net(x), forecasts[:, 0], atol=1e-3)


def test_backbone_and_sample_losses_are_the_given_functions():
    """Custom losses: the backbone loss sees the decoded forecast (B, H, C, Q), the sample loss
    every scored forecast, one row (series) at a time (R*(1+G), H, 1, Q); rewards are minus the
    sample loss (without dropout, the scoring pass repeats the decode's forecast)."""
    net = network(nr_params=2, param_kinds=("location", "softplus_scale"), dropout=0.0,
                  scored_share=1.0)
    x, y = data()
    seen = {}

    def backbone_loss(prediction, target):
        seen["backbone"] = (prediction.shape, target.shape, prediction.requires_grad)
        return (prediction[..., 0] - target).abs().mean()

    def sample_loss(prediction, target):
        seen["sample"] = (prediction.shape, target.shape)
        return (prediction[..., 0] - target).abs()

    losses = net.training_losses(x, y, backbone_loss, sample_loss)
    assert seen["backbone"] == ((B, H, C, 2), (B, H, C), True)
    assert seen["sample"] == ((B * C * 5, H, 1, 2), (B * C * 5, H, 1))
    expected = (losses.prediction[..., 0] - y).abs().mean()
    torch.testing.assert_close(losses.backbone_loss, expected)
    # the decode's reward is minus its loss per series, averaged over the batch
    torch.testing.assert_close(losses.mean_reward, -expected.detach())
    assert net.training_losses(x, y, group_size=6).prediction.shape == (B, H, C, 2)


@pytest.mark.parametrize("patcher", ["learned", "uniform"])
def test_training_losses_fields(patcher):
    """training_losses: scalars; loss has the value of the backbone loss and the gradient of
    backbone + policy; mean patch length = L / N."""
    net = network(patcher=patcher)
    x, y = data()
    losses = net.training_losses(x, y)
    assert isinstance(losses, TrainingLosses)
    for field in dataclasses.fields(losses):
        value = getattr(losses, field.name)
        if field.name == "prediction":
            assert value.shape == (B, H, C, 1)
            continue
        assert value.shape == (), field.name
        assert bool(torch.isfinite(value)), field.name
    assert torch.equal(losses.loss, losses.backbone_loss)
    parameters = [p for p in net.parameters() if p.requires_grad]
    total = losses.backbone_loss + losses.policy_loss
    expected = torch.autograd.grad(total, parameters, retain_graph=True, allow_unused=True)
    got = torch.autograd.grad(losses.loss, parameters, allow_unused=True)
    assert any(g is not None for g in got)
    for g, e in zip(got, expected):
        assert (g is None and e is None) or torch.equal(g, e)
    assert losses.mean_patch_length.item() == pytest.approx(L / 8)
    assert losses.backbone_loss.item() > 0
    assert losses.mean_reward.item() < 0  # reward = -loss
    assert losses.grid_shift.item() == 0.0  # a new patcher decodes the uniform grid


# -- gradient isolation --------------------------------------------------------------------------


@pytest.mark.parametrize("revin_affine", [False, True])
def test_gradient_isolation(revin_affine):
    """backbone_loss trains only the backbone, policy_loss only the patcher, loss both."""
    net = network(revin_affine=revin_affine)
    patcher_params = net.patcher_parameters()
    backbone_params = net.backbone_parameters()
    assert patcher_params and backbone_params
    assert {id(p) for p in patcher_params}.isdisjoint({id(p) for p in backbone_params})
    assert len(patcher_params) + len(backbone_params) == len(list(net.parameters()))
    if revin_affine:
        ids = {id(p) for p in backbone_params}
        assert id(net.revin.weight) in ids and id(net.revin.bias) in ids
    x, y = data(2)
    torch.manual_seed(0)
    losses = net.training_losses(x, y)
    assert losses.advantage.item() != 0  # the samples differ from the decode: a signal

    losses.backbone_loss.backward(retain_graph=True)
    assert grad_norm(patcher_params) == 0.0
    assert grad_norm(backbone_params) > 0
    net.zero_grad(set_to_none=True)

    losses.policy_loss.backward(retain_graph=True)
    assert grad_norm(backbone_params) == 0.0
    assert grad_norm(patcher_params) > 0
    if revin_affine:
        assert net.revin.weight.grad is None or not net.revin.weight.grad.any()
    net.zero_grad(set_to_none=True)

    losses.loss.backward()
    assert grad_norm(patcher_params) > 0 and grad_norm(backbone_params) > 0
    for p in patcher_params + backbone_params:
        assert p.grad is None or bool(torch.isfinite(p.grad).all())
    if revin_affine:
        assert net.revin.weight.grad is not None and net.revin.weight.grad.abs().sum() > 0


@pytest.mark.parametrize("patcher", ["uniform", "random", "volatility"])
def test_rule_patchers_force_group_one_and_zero_policy_loss(patcher):
    """Without a trainable patcher: G = 1 whatever is asked, and a zero policy loss."""
    net = network(patcher=patcher, group_size=4)
    assert not net.trains_patcher and net.patcher_parameters() == []
    x, y = data()
    losses = net.training_losses(x, y, group_size=5)
    assert losses.policy_loss.item() == 0.0
    torch.testing.assert_close(losses.loss, losses.backbone_loss)
    losses.loss.backward()
    assert grad_norm(net.backbone_parameters()) > 0


def test_frozen_learned_patcher_is_not_trained():
    """A frozen learned patcher (zero-shot foundation patcher): G = 1, zero policy loss."""
    net = network()
    net.patcher.freeze()
    assert not net.trains_patcher and net.patcher_parameters() == []
    x, y = data()
    losses = net.training_losses(x, y)
    assert losses.policy_loss.item() == 0.0
    losses.loss.backward()
    assert all(p.grad is None for p in net.patcher.parameters())


def test_frozen_learned_patcher_trains_the_backbone_on_its_decoded_boundaries():
    """Zero-shot: training forecasts with the same deterministic boundaries as prediction."""
    from nn_support import small_learned

    net = network(dropout=0.0)
    net.patcher = small_learned(scored=True).freeze()  # decodes off the grid
    x, y = data()
    assert not torch.equal(net.boundaries(x), net.boundaries(x)[:1, :1].expand(B, C, -1))
    losses = net.training_losses(x, y)
    torch.testing.assert_close(losses.prediction, net(x), rtol=0, atol=0)


# -- configuration errors ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "overrides, match",
    [
        (dict(group_size=0), "group_size must be a positive integer"),
        (dict(group_size=2.5), "group_size must be a positive integer"),
        (dict(kl_coef=-0.1), "kl_coef must be a finite number >= 0"),
        (dict(kl_coef=float("inf")), "kl_coef must be a finite number >= 0"),
        (dict(compression_rate=0.5), "compression_rate must be >= 1"),
        (dict(compression_rate=33), "larger than the lookback"),
        (dict(compression_rate=float("nan")), "finite number"),
        (dict(patcher="entropy"), "Unknown patcher 'entropy'"),
        (dict(d_model=18, n_heads=4), "d_model=18 must be divisible by n_heads=4"),
        (dict(nr_params=2, param_kinds=("location",)), "param_kinds"),
        (dict(param_kinds=("scale",)), "param_kinds"),
        (dict(input_length=1, compression_rate=1), "input_length must be an integer >= 2"),
        (dict(input_length=(12, 24)), "input_length must be an integer >= 2"),
        (dict(revin_affine="yes"), "revin_affine must be True or False"),
        (dict(step_width=0), "step_width must be an integer >= 1"),
    ],
)
def test_config_errors(overrides, match):
    """Every bad configuration raises a ValueError that says what was wrong."""
    with pytest.raises(ValueError, match=match):
        config(**overrides)


def test_config_accepts_group_one_for_rule_patchers_and_budget():
    """group_size=1 is fine; n_patches = ceil(L / R); resample_points defaults to ceil(R);
    to_dict round-trips."""
    cfg = config(patcher="uniform", group_size=1, compression_rate=5, resample_points=None)
    assert cfg.n_patches == 7
    assert cfg.backbone.resample_points == 5
    assert config(group_size=1).training.group_size == 1
    assert ReinPatchConfig(**cfg.to_dict()) == cfg


def test_step_width_sets_the_features_the_head_reads():
    """The head reads L * k step features: k = d // P by default, the given step_width else;
    a narrower head forecasts all the same (shapes and finite values)."""
    default = network()
    assert default.config.step_width == 16 // 4
    assert default.backbone.head.in_features == 32 * 4
    narrow = network(step_width=1)
    assert narrow.config.step_width == 1
    assert narrow.backbone.head.in_features == 32
    assert narrow.backbone.skip_projection.out_features == 1
    out = narrow(torch.randn(B, L, C))
    assert out.shape == default(torch.randn(B, L, C)).shape
    assert bool(torch.isfinite(out).all())


# -- RevIN ---------------------------------------------------------------------------------------


def zero_head(net: ReinPatchNetwork) -> ReinPatchNetwork:
    with torch.no_grad():
        net.backbone.head.weight.zero_()
        net.backbone.head.bias.zero_()
    return net.eval()


@pytest.mark.parametrize("revin_affine", [False, True])
@pytest.mark.parametrize("level", [0.0, 3.5, -42.0, 1e12, 1e-12])
def test_constant_series_is_forecast_as_the_constant(level, revin_affine):
    """With a zero backbone output a constant series is forecast as that constant."""
    net = zero_head(network(revin_affine=revin_affine))
    x = torch.full((B, L, C), level)
    out = net(x)
    assert bool(torch.isfinite(out).all())
    torch.testing.assert_close(out, torch.full_like(out, level), rtol=1e-6, atol=0)


@pytest.mark.parametrize("magnitude", [1e12, 1e-12])
@pytest.mark.parametrize("patcher", ["learned", "volatility"])
def test_extreme_magnitudes_stay_finite(magnitude, patcher):
    """Series of size ~1e12 and ~1e-12: finite forecasts, losses and gradients."""
    net = network(patcher=patcher)
    x, y = data(3)
    x, y = x * magnitude, y * magnitude
    assert bool(torch.isfinite(net(x)).all())
    losses = net.training_losses(x, y)
    assert bool(torch.isfinite(losses.loss))
    losses.loss.backward()
    for p in net.parameters():
        assert p.grad is None or bool(torch.isfinite(p.grad).all())


@pytest.mark.parametrize("level", [0.0, 1e-30, 1e-12, 2.0])
def test_revin_normalises_a_constant_or_all_zero_row_to_zeros(level):
    """The variance floor never reaches zero: a constant (all-zero included) row gives zeros
    and a positive, finite standard deviation."""
    revin = RevIN()
    x = torch.full((2, L), level)
    stats = revin.statistics(x)
    assert bool((stats.std > 0).all()) and bool(torch.isfinite(stats.std).all())
    assert torch.equal(revin.normalise(x, stats), torch.zeros_like(x))


def test_revin_floor_is_eps_on_an_ordinary_scale():
    """From a window rms of 0.1 up, the floor is the absolute eps, bit for bit: ordinary data
    normalise exactly as with ``sqrt(var + eps)``."""
    revin = RevIN()
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(64, L, generator=generator) * torch.logspace(-1, 6, 64)[:, None]
    assert bool(((x.square().mean(-1)) >= 0.1 ** 2).all())
    var = x.var(dim=-1, keepdim=True, unbiased=False)
    assert torch.equal(revin.statistics(x).std, torch.sqrt(var + revin.eps))


@pytest.mark.parametrize("scale", [1e-3, 1e-8, 1e-12, 1e-15])
def test_revin_is_scale_invariant_on_small_scales(scale):
    """Below a window rms of 0.1 the floor is relative: ``x`` and ``scale * x`` normalise
    alike, and the statistics follow the scale (an absolute 1e-5 floor flattened these)."""
    revin = RevIN()
    generator = torch.Generator().manual_seed(1)
    x = 0.05 * torch.randn(8, L, generator=generator) + 0.02  # rms ~0.05
    base = revin.statistics(x)
    stats = revin.statistics(x * scale)
    torch.testing.assert_close(revin.normalise(x * scale, stats), revin.normalise(x, base),
                               rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(stats.std / scale, base.std, rtol=1e-4, atol=0)


def test_forecast_is_equivariant_to_the_series_scale_and_level():
    """RevIN: forecast(a * x + b) = a * forecast(x) + b (up to the variance eps)."""
    net = network().eval()
    x, _ = data(4)
    base = net(x)
    torch.testing.assert_close(net(x + 1000.0), base + 1000.0, rtol=1e-4, atol=2e-3)
    torch.testing.assert_close(net(7.0 * x), 7.0 * base, rtol=1e-3, atol=1e-3)
    torch.testing.assert_close(net.boundaries(7.0 * x - 3.0), net.boundaries(x))


def test_softplus_scale_parameter_scales_with_the_series():
    """param_kinds=('location', 'softplus_scale'): softplus(out[..., 1]) = std * softplus(raw)."""
    net = network(nr_params=2, param_kinds=("location", "softplus_scale")).eval()
    raw = {}
    net.backbone.register_forward_hook(lambda module, args, out: raw.__setitem__("out", out))
    x, _ = data(5)
    out = net(x)  # (B, H, C, 2)
    series = x.transpose(1, 2).reshape(B * C, L)
    stats = net.revin.statistics(series)
    backbone_out = raw["out"].reshape(B, C, H, 2).permute(0, 2, 1, 3)  # (B, H, C, 2)
    std = stats.std.reshape(B, 1, C)
    mean = stats.mean.reshape(B, 1, C)
    torch.testing.assert_close(out[..., 0], backbone_out[..., 0] * std + mean)
    torch.testing.assert_close(
        F.softplus(out[..., 1]), std * F.softplus(backbone_out[..., 1]), rtol=1e-4, atol=1e-6
    )
    # the spread follows the scale of the series, not its level
    shifted = net(x + 500.0)
    torch.testing.assert_close(
        F.softplus(shifted[..., 1]), F.softplus(out[..., 1]), rtol=1e-3, atol=1e-4
    )
    torch.testing.assert_close(shifted[..., 0], out[..., 0] + 500.0, rtol=1e-4, atol=2e-3)
    scaled = net(10.0 * x)
    torch.testing.assert_close(
        F.softplus(scaled[..., 1]), 10.0 * F.softplus(out[..., 1]), rtol=1e-3, atol=1e-4
    )


# -- seeds ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("patcher", ["learned", "random"])
def test_same_seed_same_training_losses(patcher):
    """Same torch seed (model and step) gives identical losses; another seed does not."""
    x, y = data(6)

    def run(model_seed, step_seed):
        net = network(seed=model_seed, patcher=patcher)
        torch.manual_seed(step_seed)
        return net.training_losses(x, y)

    first, second, other = run(0, 1), run(0, 1), run(0, 2)
    for field in dataclasses.fields(TrainingLosses):
        assert torch.equal(getattr(first, field.name), getattr(second, field.name)), field.name
    assert not torch.equal(first.backbone_loss, other.backbone_loss)


def test_monotone_params_never_cross():
    """With monotone_params the Q outputs of every step come out in increasing order."""
    net = network(nr_params=5, monotone_params=True)
    x, _ = data()
    out = net(x)  # (B, H, C, Q)
    assert (out.diff(dim=-1) >= 0).all()
    losses = net.training_losses(x, torch.randn(B, H, C))
    assert (losses.prediction.diff(dim=-1) >= 0).all()
    unsorted = network(nr_params=5)(x)
    assert (unsorted.diff(dim=-1) < 0).any()  # an untrained head does cross: sorting matters


def test_the_step_weighs_the_kl_anchor_by_the_configured_coefficient():
    """Same seed and batch: the policy losses under ``kl_coef`` 0 and 5 differ by 5 * KL."""
    x, y = torch.randn(4, 32, 2), torch.randn(4, 6, 2)
    results = []
    for kl_coef in (0.0, 5.0):
        network = small_network(kl_coef=kl_coef, dropout=0.0).train()
        # A moved policy, so that its KL to the reference is not 0.
        torch.nn.init.normal_(network.patcher.output.weight, std=0.5)
        torch.manual_seed(1)
        results.append(network.training_losses(x, y))
    without, strong = results
    assert strong.kl > 0
    torch.testing.assert_close(strong.policy_loss - without.policy_loss, 5.0 * strong.kl)
