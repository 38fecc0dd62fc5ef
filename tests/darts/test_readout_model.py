"""The darts model with every readout: bad settings fail at construction, the same seed gives
the same bytes and save/load gives the same forecast."""

from __future__ import annotations

import numpy as np
import pytest

from reinpatch_forecast import ReinPatchModel

#: (readout, readout_skip) pairs.
VARIANTS = [("profile", False), ("copy", False), ("copy", True), ("interpolate", False),
            ("query", False), ("flatten", False)]


@pytest.mark.parametrize("bad", [dict(readout="slots"), dict(readout_skip="yes")])
def test_darts_model_refuses_bad_readout_at_construction(bad):
    with pytest.raises(ValueError, match="readout"):
        ReinPatchModel(input_chunk_length=24, output_chunk_length=6, **bad)


@pytest.mark.parametrize("readout,skip", VARIANTS)
def test_same_seed_same_bytes_and_save_load_identical(make_model, series, tmp_path, readout,
                                                      skip):
    first = make_model(readout=readout, readout_skip=skip, n_epochs=1).fit(series)
    second = make_model(readout=readout, readout_skip=skip, n_epochs=1).fit(series)
    forecast = first.predict(6).values()
    assert np.array_equal(forecast, second.predict(6).values())
    path = tmp_path / "model.pt"
    first.save(str(path))
    assert np.array_equal(ReinPatchModel.load(str(path)).predict(6).values(), forecast)
