"""The benchmarks' readout variants as darts models (``benchmarks/variants.py``): bad settings
fail at construction, the same seed gives the same bytes and save/load gives the same
forecast; the package's own model (the ``copy`` readout with its skip) takes no readout
argument."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from support import SMALL_DARTS

from reinpatch_forecast import ReinPatchModel
from reinpatch_forecast._lightning import quiet_trainer_kwargs

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import variants  # noqa: E402

#: (readout, readout_skip) pairs; ("copy", True) is the package's model.
VARIANTS = [("profile", False), ("copy", False), ("copy", True), ("interpolate", False),
            ("query", False), ("flatten", False)]


def _variant(work_dir, **overrides):
    return variants.make_model(**{**SMALL_DARTS, "work_dir": str(work_dir),
                                  "pl_trainer_kwargs": quiet_trainer_kwargs(), **overrides})


@pytest.mark.parametrize("bad", [dict(readout="slots"), dict(readout_skip="yes")])
def test_variant_model_refuses_bad_readout_at_construction(bad):
    with pytest.raises(ValueError, match="readout"):
        variants.make_model(input_chunk_length=24, output_chunk_length=6, **bad)


def test_the_package_model_has_no_readout_argument():
    with pytest.raises(ValueError, match="readout"):
        ReinPatchModel(input_chunk_length=24, output_chunk_length=6, readout="profile")


@pytest.mark.parametrize("readout,skip", VARIANTS)
def test_same_seed_same_bytes_and_save_load_identical(series, tmp_path, readout, skip):
    first = _variant(tmp_path, readout=readout, readout_skip=skip, n_epochs=1).fit(series)
    second = _variant(tmp_path, readout=readout, readout_skip=skip, n_epochs=1).fit(series)
    assert isinstance(first, variants.VariantModel) == ((readout, skip) != ("copy", True))
    forecast = first.predict(6).values()
    assert np.array_equal(forecast, second.predict(6).values())
    path = tmp_path / "model.pt"
    first.save(str(path))
    loaded = type(first).load(str(path))
    assert type(loaded) is type(first)
    assert np.array_equal(loaded.predict(6).values(), forecast)
