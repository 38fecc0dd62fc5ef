"""The darts model with an at-most token budget: same seed same bytes, save/load identical,
boundaries and their plot with unused slots, bad combinations refused at construction."""

from __future__ import annotations

import matplotlib
import numpy as np
import pytest

from reinpatch_forecast import ReinPatchModel
from reinpatch_forecast.plotting import plot_segmentation

matplotlib.use("Agg")


def test_same_seed_same_bytes_save_load_and_boundaries(make_model, series, tmp_path):
    first = make_model(budget="at_most", n_epochs=1).fit(series)
    second = make_model(budget="at_most", n_epochs=1).fit(series)
    forecast = first.predict(6).values()
    assert np.array_equal(forecast, second.predict(6).values())
    path = tmp_path / "model.pt"
    first.save(str(path))
    assert np.array_equal(ReinPatchModel.load(str(path)).predict(6).values(), forecast)
    boundaries = first.patch_boundaries(series)
    length = first.input_chunk_length
    used = boundaries.patches_used
    assert ((1 <= used) & (used <= boundaries.n_patches)).all()
    for component in range(len(boundaries.components)):
        row = boundaries.starts[component]
        assert (row[used[component]:] == length).all()
        assert len(boundaries.start_times(component)) == used[component]
    plot_segmentation(boundaries)


@pytest.mark.parametrize("bad", [dict(budget="at_most", patcher="uniform"),
                                 dict(budget="at_most", levels=2, compression_rate=(4, 2)),
                                 dict(budget="sometimes")])
def test_darts_model_refuses_bad_budgets_at_construction(bad):
    with pytest.raises(ValueError, match="budget"):
        ReinPatchModel(input_chunk_length=24, output_chunk_length=6, **bad)


def test_the_plot_of_boundaries_with_unused_slots_draws_the_used_patches():
    import pandas as pd

    from reinpatch_forecast.darts import PatchBoundaries

    index = pd.date_range("2024-01-01", periods=24, freq="h")
    window = np.random.default_rng(0).random((24, 1))
    boundaries = PatchBoundaries(time_index=index, values=window,
                                 starts=np.array([[0, 8, 16, 24, 24]]), components=["y"])
    assert boundaries.patches_used.tolist() == [3]
    assert list(boundaries.start_times(0)) == list(index[[0, 8, 16]])
    figure = plot_segmentation(boundaries)
    assert figure.axes[0].get_title(loc="left").startswith("y: 3 patches, lengths 8-8")
    # Raw starts are not a model's output: a start at L stays an error there.
    with pytest.raises(ValueError, match=r"\[0, 24\)"):
        plot_segmentation(boundaries.values, boundaries=[0, 8, 24])
