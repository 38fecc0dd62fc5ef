"""The foundation patcher: the shipped file, pretraining, zero-shot use and GRPG from it."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
import torch
from darts import TimeSeries

from reinpatch_forecast import patcher_io
from reinpatch_forecast.foundation import SYNTHETIC_KINDS, pretrain_patcher, synthetic_series
from reinpatch_forecast.patcher_io import (
    PATCHER_VERSION,
    PRETRAINED_SHA256,
    file_sha256,
    load_patcher,
    load_pretrained_patcher,
    patcher_state,
    pretrained_patcher_path,
    save_patcher,
)
from reinpatch_forecast.nn import LearnedPatcher, uniform_starts
from reinpatch_forecast.options import PRETRAINING


def _weights(patcher: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in patcher.state_dict().items()}


def _same(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


# -- the shipped file --------------------------------------------------------------------------


def test_shipped_patcher_checksum_size_and_load():
    path = pretrained_patcher_path()
    assert path.is_file()
    assert path.stat().st_size < 5 * 1024 * 1024
    assert file_sha256(path) == PRETRAINED_SHA256
    patcher = load_pretrained_patcher()
    assert isinstance(patcher, LearnedPatcher)
    assert _same(_weights(patcher), _weights(load_patcher(path)))
    state = torch.load(path, map_location="cpu", weights_only=True)
    assert state["version"] == PATCHER_VERSION == 2
    assert state["config"]["policy"] == patcher.policy_name


def test_shipped_patcher_works_at_any_lookback_and_budget():
    patcher = load_pretrained_patcher()
    for length, n_patches in ((16, 2), (96, 12), (336, 21), (720, 90)):
        x = torch.randn(3, length)
        starts = patcher.decode(x, n_patches).starts  # (3, 1, N)
        assert starts.shape == (3, 1, n_patches)
        assert bool((starts[..., 0] == 0).all())
        assert bool((starts.diff(dim=-1) > 0).all())


def test_damaged_shipped_patcher_is_refused(tmp_path, monkeypatch):
    copy = tmp_path / "patcher.pt"
    shutil.copy(pretrained_patcher_path(), copy)
    data = bytearray(copy.read_bytes())
    data[-10] ^= 0xFF
    copy.write_bytes(bytes(data))
    monkeypatch.setattr(patcher_io, "pretrained_patcher_path", lambda: copy)
    with pytest.raises(ValueError, match="damaged.*reinstall"):
        load_pretrained_patcher()


# -- pretraining -------------------------------------------------------------------------------


def _tiny_pretrain(**overrides):
    params = dict(input_chunk_length=24, output_chunk_length=6, compression_rate=4,
                  group_size=4, n_epochs=2, batch_size=32, max_windows_per_series=32,
                  d_model=16, random_state=3)
    params.update(overrides)
    return pretrain_patcher(synthetic_series(n_series=8, length=160, random_state=1), **params)


def test_pretrain_patcher_is_seeded_and_reports_every_epoch():
    first = _tiny_pretrain()
    second = _tiny_pretrain()
    other = _tiny_pretrain(random_state=4)
    assert _same(_weights(first.patcher), _weights(second.patcher))
    assert not _same(_weights(first.patcher), _weights(other.patcher))
    assert [e.epoch for e in first.history] == [0, 1]
    assert all(np.isfinite([e.reward, e.val_mse]).all() for e in first.history)
    assert all(e.reward < 0 for e in first.history)  # a reward is minus a loss
    assert first.history == second.history
    assert first.n_series == 8
    assert first.patcher.trainable
    assert first.patcher.policy_name == "density"
    assert first.settings["kl_coef"] == 0.03
    assert first.settings["group_size"] == 4
    # the patcher moved away from its initial weights
    with torch.random.fork_rng():
        torch.manual_seed(3)
        initial = LearnedPatcher()
    assert not _same(_weights(initial), _weights(first.patcher))


def test_pretrain_scored_share_reaches_the_model(monkeypatch):
    from reinpatch_forecast import ReinPatchModel

    built, fit = [], ReinPatchModel.fit

    def recording_fit(self, *args, **kwargs):
        built.append(self)
        return fit(self, *args, **kwargs)

    monkeypatch.setattr(ReinPatchModel, "fit", recording_fit)
    result = _tiny_pretrain(scored_share=0.5, n_epochs=1)
    assert result.settings["scored_share"] == 0.5
    assert built[0].model.network.config.training.scored_share == 0.5
    # by default the shipped patcher's share, not the model's
    default = _tiny_pretrain(n_epochs=1)
    assert default.settings["scored_share"] == 0.25
    assert built[-1].model.network.config.training.scored_share == 0.25
    (optimizer,) = built[-1].trainer.optimizers
    learning_rate = default.settings["learning_rate"]
    assert [group["lr"] for group in optimizer.param_groups] == pytest.approx(
        [learning_rate, 3 * learning_rate])


def test_pretrain_with_another_kl_coef_saves_and_loads(tmp_path):
    result = _tiny_pretrain(kl_coef=0.5, n_epochs=1, group_size=2)
    assert result.patcher.policy_name == "density"
    assert result.settings["kl_coef"] == 0.5
    path = tmp_path / "patcher.pt"
    save_patcher(result.patcher, path)
    loaded = load_patcher(path)
    assert loaded.policy_name == "density"
    assert _same(_weights(loaded), _weights(result.patcher))


def test_pretrained_decode_margin_is_kept_by_the_file_and_keeps_the_grid(tmp_path):
    result = _tiny_pretrain(n_epochs=1, group_size=2, decode_margin=0.7)
    assert result.settings["decode_margin"] == 0.7
    assert result.patcher.policy.decode_margin == 0.7
    path = tmp_path / "patcher.pt"
    save_patcher(result.patcher, path)
    loaded = load_patcher(path)
    assert loaded.policy.decode_margin == 0.7
    # a margin far beyond every score decodes the grid; no margin decodes the scores
    x = torch.randn(6, 48).cumsum(-1)
    loaded.policy.decode_margin = 1e6
    assert torch.equal(loaded.decode_starts(x, 6)[0][:, 0], uniform_starts(48, 6).expand(6, -1))
    default = _tiny_pretrain(n_epochs=1, group_size=2).patcher.policy.decode_margin
    assert default == PRETRAINING.decode_margin


def test_pretrain_accepts_darts_pandas_and_numpy_series_of_any_length():
    rng = np.random.default_rng(0)
    corpus = [
        TimeSeries.from_values(rng.normal(size=70).astype(np.float32)),
        rng.normal(size=(300, 1)),
        rng.normal(size=55) * 1e4 + 3e4,  # large scale: standardised per series
    ]
    result = pretrain_patcher(corpus, input_chunk_length=24, output_chunk_length=6,
                              compression_rate=4, group_size=2, n_epochs=1, d_model=16,
                              max_windows_per_series=16)
    assert result.n_series == 3
    assert np.isfinite(result.history[0].val_mse)
    assert result.history[0].val_mse < 100  # standardised, not on the raw 1e4 scale


@pytest.mark.parametrize("corpus, match", [
    ([], "empty"),
    ([np.ones((50, 2))], "univariate"),
    ([np.r_[np.ones(40), np.nan, np.ones(40)]], "NaN"),
    ({"short": np.ones(20), "long": np.ones(200)}, "too short.*short \\(20 steps\\)"),
])
def test_pretrain_rejects_bad_corpora(corpus, match):
    with pytest.raises(ValueError, match=match):
        pretrain_patcher(corpus, input_chunk_length=24, output_chunk_length=6)


def test_synthetic_series_cover_every_kind_and_are_seeded():
    a = synthetic_series(n_series=len(SYNTHETIC_KINDS), length=200, random_state=5)
    b = synthetic_series(n_series=len(SYNTHETIC_KINDS), length=200, random_state=5)
    assert {name.split("/")[1] for name in a} == set(SYNTHETIC_KINDS)
    assert all(np.array_equal(a[k], b[k]) and np.isfinite(a[k]).all() for k in a)


# -- zero-shot and init in the darts model -----------------------------------------------------


def test_pretrained_patcher_is_frozen_and_trains_without_rollouts(make_model, series):
    model = make_model(patcher="pretrained")
    shipped = _weights(load_pretrained_patcher())
    model.fit(series)
    network = model.model.network
    assert not network.trains_patcher
    assert network.patcher.policy_name == load_pretrained_patcher().policy_name == "density"
    losses = network.training_losses(torch.randn(2, 24, 1), torch.randn(2, 6, 1))
    assert float(losses.policy_loss) == 0.0 and float(losses.advantage) == 0.0  # no group
    assert float(model.trainer.callback_metrics["train_policy_loss"]) == 0.0
    assert _same(_weights(network.patcher), shipped)
    assert model.predict(6).n_timesteps == 6


@pytest.mark.parametrize("argument", ["patcher", "patcher_init"])
def test_a_given_patcher_that_keeps_the_grid_trains_exactly_as_uniform(make_model, series,
                                                                       tmp_path, argument):
    """Common random numbers: rebuilding a given patcher draws nothing from the global
    generator, so the data order and dropout masks are uniform's at the same seed."""
    grid = load_pretrained_patcher()
    with torch.no_grad():
        grid.output.weight.zero_()  # a constant score: the density is flat, the starts the grid
    path = tmp_path / "grid.pt"
    save_patcher(grid, path)
    uniform = make_model(patcher="uniform", n_epochs=1)
    uniform.fit(series)
    given = make_model(**{argument: path}, patcher_lr=0.0, n_epochs=1,
                       **({"patcher": "learned"} if argument == "patcher_init" else {}))
    given.fit(series)
    assert _same(_weights(uniform.model.network.backbone), _weights(given.model.network.backbone))
    assert np.array_equal(uniform.predict(6).values(), given.predict(6).values())


def test_patcher_init_starts_grpg_from_the_pretrained_weights(make_model, series):
    shipped = _weights(load_pretrained_patcher())
    # With the patcher's learning rate at 0 its weights stay where they started.
    still = make_model(patcher_init="pretrained", patcher_lr=0.0, n_epochs=1)
    still.fit(series)
    assert still.model.network.trains_patcher
    assert _same(_weights(still.model.network.patcher), shipped)
    model = make_model(patcher_init="pretrained", n_epochs=1)
    model.fit(series)
    assert not _same(_weights(model.model.network.patcher), shipped)  # GRPG moved them


def test_patcher_init_from_a_file_and_from_an_object(make_model, series, tmp_path):
    torch.manual_seed(7)
    start = LearnedPatcher(hidden_size=8, n_layers=2)
    path = tmp_path / "start.pt"
    save_patcher(start, path)
    for given in (start, path):
        model = make_model(patcher_init=given, n_epochs=1)
        model.fit(series)
        patcher = model.model.network.patcher
        assert patcher.hidden_size == 8 and patcher.n_layers == 2  # sizes come from the file
        assert patcher.trainable


@pytest.mark.parametrize("given", ["object", "file", "init"])
def test_a_given_patcher_keeps_its_settings(make_model, series, tmp_path, given):
    torch.manual_seed(0)
    density = LearnedPatcher(hidden_size=8, n_layers=1, density_sigma=1.0, decode_margin=0.75)
    path = tmp_path / "density.pt"
    save_patcher(density, path)
    source = {"object": dict(patcher=density), "file": dict(patcher=path),
              "init": dict(patcher_init=density)}[given]
    model = make_model(**source, n_epochs=1)
    patcher = model.network_config.patcher
    assert (patcher.hidden_size, patcher.n_layers, patcher.density_sigma,
            patcher.decode_margin) == (8, 1, 1.0, 0.75)
    model.fit(series)
    assert model.model.network.patcher.config() == density.config()


def test_a_patcher_file_of_a_benchmark_policy_is_refused_clearly(tmp_path):
    state = patcher_state(LearnedPatcher(hidden_size=8, n_layers=1))
    state["config"]["policy"] = "topk"
    path = tmp_path / "topk.pt"
    torch.save(state, path)
    with pytest.raises(ValueError, match="'topk' policy, a benchmark ablation"):
        load_patcher(path)


def _version_1_file(path) -> None:
    """A patcher file of format version 1 (a top-k policy with a uniform prior)."""
    state = patcher_state(LearnedPatcher(hidden_size=8, n_layers=1))
    state["version"] = 1
    state["config"] = {"hidden_size": 8, "n_layers": 1, "kernel_size": 3, "uniform_prior": 3.0}
    torch.save(state, path)


def test_version_1_patcher_file_is_refused_clearly(make_model, tmp_path):
    path = tmp_path / "old.pt"
    _version_1_file(path)
    message = (r"has patcher format version 1; .* reads version 2\. Pretrain a new patcher with "
               r"reinpatch_forecast\.foundation\.pretrain_patcher")
    with pytest.raises(ValueError, match=message):
        load_patcher(path)
    for kwargs in (dict(patcher=path), dict(patcher_init=path)):
        with pytest.raises(ValueError, match=message):
            make_model(**kwargs)


def test_saved_patcher_is_version_2_and_names_its_policy(tmp_path):
    path = tmp_path / "patcher.pt"
    save_patcher(LearnedPatcher(hidden_size=8, n_layers=1), path)
    state = torch.load(path, map_location="cpu", weights_only=True)
    assert state["version"] == PATCHER_VERSION == 2
    assert state["config"]["policy"] == "density"
    assert "uniform_prior" not in state["config"]


@pytest.mark.parametrize("kwargs, match", [
    (dict(patcher="uniform", patcher_init="pretrained"), "needs patcher='learned'"),
    (dict(patcher_init="no/such/file.pt"), "patcher_init must be.*no such file"),
    (dict(patcher="no/such/file.pt"), "patcher must be one of.*'pretrained'"),
])
def test_bad_patcher_arguments(make_model, kwargs, match):
    with pytest.raises(ValueError, match=match):
        make_model(**kwargs)


def test_pretrained_model_saves_and_loads_identically(make_model, series, tmp_path):
    from reinpatch_forecast import ReinPatchModel

    model = make_model(patcher="pretrained", n_epochs=1)
    model.fit(series)
    path = tmp_path / "model.pt"
    model.save(str(path))
    loaded = ReinPatchModel.load(str(path))
    np.testing.assert_array_equal(model.predict(6).values(), loaded.predict(6).values())
    assert patcher_state(loaded.model.network.patcher)["config"] == \
        patcher_state(load_pretrained_patcher())["config"]
