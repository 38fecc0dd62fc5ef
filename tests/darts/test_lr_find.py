"""darts' ``lr_find`` (Lightning's learning-rate finder) with the learned patcher: it watches
the loss ``training_step`` returns, whose value is the forecasting loss."""

from __future__ import annotations

import numpy as np
import pytest


@pytest.fixture
def curves(make_model, series, tmp_path, monkeypatch):
    """``patcher -> (loss curve, suggestion)`` of a 30-point search on the sine series."""
    monkeypatch.chdir(tmp_path)  # Lightning's finder writes its temporary checkpoint here
    found = {}
    for patcher in ("learned", "uniform"):
        result = make_model(patcher=patcher).lr_find(series=series, num_training=30)
        found[patcher] = (np.asarray(result.results["loss"]), result.suggestion())
    return found


def test_lr_find_with_the_learned_patcher_suggests_a_rate(curves):
    loss, suggestion = curves["learned"]
    assert suggestion is not None and suggestion > 0
    assert f"{suggestion:.2e}"  # the formatting darts' examples apply


def test_lr_find_watches_the_forecasting_loss(curves):
    """No negative values (the policy loss's value is not in it), and as many points as with
    uniform patches (which have no policy loss)."""
    learned, _ = curves["learned"]
    uniform, _ = curves["uniform"]
    assert learned.shape == uniform.shape
    assert learned.size > 2
    assert np.all(np.isfinite(learned)) and learned.min() >= 0.0
