"""The benchmarks' schedule variants as darts models (``benchmarks/variants.py``): no patcher
update in the warm-up epochs, GRPG after them; bad schedule settings fail at construction.
The package's model trains the patcher from the first step."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from support import SMALL_DARTS

from reinpatch_forecast import ReinPatchModel
from reinpatch_forecast._lightning import quiet_trainer_kwargs

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import variants  # noqa: E402


def _variant(work_dir, **overrides):
    return variants.make_model(**{**SMALL_DARTS, "work_dir": str(work_dir),
                                  "pl_trainer_kwargs": quiet_trainer_kwargs(), **overrides})


def test_warmup_epochs_leave_the_patcher_as_built_and_grpg_moves_it_after(series, tmp_path):
    warm = _variant(tmp_path, n_epochs=2, patcher_warmup=2).fit(series)
    # A new patcher's score head is zero; two warm-up epochs keep it zero.
    assert not warm.model.network.patcher.output.weight.any()
    grpg = _variant(tmp_path, n_epochs=2, patcher_warmup=1).fit(series)
    assert grpg.model.network.patcher.output.weight.any()


def test_the_package_model_trains_the_patcher_from_the_first_epoch(make_model, series):
    model = make_model(n_epochs=1).fit(series)
    assert model.model.network.patcher.output.weight.any()


@pytest.mark.parametrize("bad,message", [(dict(patcher_warmup=-1), "patcher_warmup"),
                                         (dict(kl_schedule="cosine"), "kl_schedule")])
def test_variant_model_refuses_bad_schedule_at_construction(bad, message):
    with pytest.raises(ValueError, match=message):
        variants.make_model(input_chunk_length=24, output_chunk_length=6, **bad)
    with pytest.raises(ValueError, match=message):  # not an argument of the package's model
        ReinPatchModel(input_chunk_length=24, output_chunk_length=6, **bad)
