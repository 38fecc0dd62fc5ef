"""Two-level (hierarchical) patching through the darts and sktime faces."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from reinpatch_forecast import ReinPatchModel  # noqa: E402
from reinpatch_forecast.plotting import plot_segmentation  # noqa: E402


@pytest.mark.parametrize("patcher", ["learned", "uniform", "random", "volatility"])
def test_two_level_model_fits_predicts_and_nests(make_model, series, patcher):
    model = make_model(levels=2, compression_rate=(2, 3), patcher=patcher)
    model.fit(series)
    assert model.predict(6).n_timesteps == 6
    boundaries = model.patch_boundaries()
    assert boundaries.starts.shape == (1, 12)  # N1 = 24 / 2
    assert boundaries.coarse_starts.shape == (1, 4)  # N2 = ceil(12 / 3)
    assert set(boundaries.coarse_starts[0]) <= set(boundaries.starts[0])
    assert boundaries.coarse_starts[0, 0] == 0
    assert model.model.network.config.levels == 2
    if patcher == "uniform":
        np.testing.assert_array_equal(boundaries.coarse_starts[0], [0, 6, 12, 18])


def test_one_level_model_has_no_coarse_starts(make_model, series):
    model = make_model(patcher="uniform")
    model.fit(series)
    assert model.patch_boundaries().coarse_starts is None


def test_two_level_model_saves_and_loads_identically(make_model, series, tmp_path):
    model = make_model(levels=2, compression_rate=(2, 2))
    model.fit(series)
    path = tmp_path / "two_level.pt"
    model.save(str(path))
    loaded = ReinPatchModel.load(str(path))
    np.testing.assert_array_equal(model.predict(6).values(), loaded.predict(6).values())
    np.testing.assert_array_equal(model.patch_boundaries().coarse_starts,
                                  loaded.patch_boundaries().coarse_starts)


def test_two_level_model_is_seeded(make_model, series):
    first = make_model(levels=2, compression_rate=(2, 2), random_state=5)
    second = make_model(levels=2, compression_rate=(2, 2), random_state=5)
    first.fit(series)
    second.fit(series)
    np.testing.assert_array_equal(first.predict(6).values(), second.predict(6).values())


def test_plot_segmentation_draws_the_coarse_level(make_model, series):
    model = make_model(levels=2, compression_rate=(2, 3), patcher="uniform")
    model.fit(series)
    boundaries = model.patch_boundaries()
    fig = plot_segmentation(boundaries)
    ax = fig.axes[0]
    assert len(ax.patches) == 12
    assert "4 coarse patches" in ax.get_title(loc="left")
    thick = [line for line in ax.lines if line.get_linewidth() > 2]
    assert len(thick) == 3  # one solid line per coarse start after position 0
    import matplotlib.pyplot as plt

    plt.close(fig)


@pytest.mark.parametrize("kwargs, match", [
    (dict(levels=2, compression_rate=4), "levels=2 needs compression_rate=\\(R1, R2\\)"),
    (dict(levels=1, compression_rate=(2, 2)), "levels=1"),
    (dict(levels=3), "levels must be 1"),
    (dict(levels=2, compression_rate=(2, 2), patcher="pretrained"), "levels=1 but the model"),
])
def test_bad_level_arguments_fail_at_construction(make_model, kwargs, match):
    with pytest.raises(ValueError, match=match):
        make_model(**kwargs)


def test_sktime_forecaster_with_two_levels():
    from sktime.datasets import load_airline

    from reinpatch_forecast import ReinPatchForecaster

    y = load_airline()
    forecaster = ReinPatchForecaster(
        input_chunk_length=24, compression_rate=(2, 2), levels=2, patcher="learned",
        group_size=2, d_model=16, n_heads=2, n_layers=1, n_epochs=1, random_state=0,
    )
    forecaster.fit(y, fh=[1, 2, 3])
    prediction = forecaster.predict()
    assert len(prediction) == 3 and np.isfinite(prediction.to_numpy()).all()
    assert forecaster.get_params()["levels"] == 2
