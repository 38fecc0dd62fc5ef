"""The darts model follows the policy's schedule: no patcher update in the warm-up epochs, GRPG
after them; bad schedule settings fail at construction."""

from __future__ import annotations

import pytest

from reinpatch_forecast import ReinPatchModel


def test_warmup_epochs_leave_the_patcher_as_built_and_grpg_moves_it_after(make_model, series):
    warm = make_model(n_epochs=2, patcher_warmup=2).fit(series)
    # A new patcher's score head is zero; two warm-up epochs keep it zero.
    assert not warm.model.network.patcher.output.weight.any()
    grpg = make_model(n_epochs=2, patcher_warmup=1).fit(series)
    assert grpg.model.network.patcher.output.weight.any()


@pytest.mark.parametrize("bad,message", [(dict(patcher_warmup=-1), "patcher_warmup"),
                                         (dict(kl_schedule="cosine"), "kl_schedule")])
def test_darts_model_refuses_bad_schedule_at_construction(bad, message):
    with pytest.raises(ValueError, match=message):
        ReinPatchModel(input_chunk_length=24, output_chunk_length=6, **bad)
