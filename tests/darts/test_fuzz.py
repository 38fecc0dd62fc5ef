"""Random finite series into fit/predict of a tiny darts model (issue #8, table 1).

Whatever the length, scale, offset or shape of a finite series, ``fit`` then ``predict``
either gives a finite forecast or, for a series too short to hold one training window, raises
our clear ``ValueError``. Never a crash, never a NaN.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import TINY_DARTS, darts_model, darts_series

MIN_LENGTH = TINY_DARTS["input_chunk_length"] + TINY_DARTS["output_chunk_length"]


@st.composite
def finite_series(draw):
    length = draw(st.integers(min_value=0, max_value=72))
    components = draw(st.integers(min_value=1, max_value=2))
    exponent = draw(st.integers(min_value=-12, max_value=12))
    offset = draw(st.sampled_from([0.0, 1.0, -1.0, 1e3]))
    kind = draw(st.sampled_from(["noise", "sine", "steps", "constant", "spike", "trend"]))
    seed = draw(st.integers(min_value=0, max_value=2**16))
    rng = np.random.default_rng(seed)
    t = np.arange(length)[:, None]
    shape = {
        "noise": lambda: rng.standard_normal((length, components)),
        "sine": lambda: np.sin(2 * np.pi * t / rng.integers(2, 30)) + np.zeros(components),
        "steps": lambda: np.repeat(rng.standard_normal((length // 7 + 1, components)), 7,
                                   axis=0)[:length],
        "constant": lambda: np.full((length, components), rng.standard_normal()),
        "spike": lambda: np.where(t == length // 2, 50.0, 0.0) + np.zeros(components),
        "trend": lambda: t * 0.5 + rng.standard_normal((length, components)) * 0.01,
    }[kind]()
    scale = 10.0 ** exponent
    return darts_series(scale * (offset + shape))


@settings(max_examples=10, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(series=finite_series(), patcher=st.sampled_from(["learned", "uniform", "volatility"]))
def test_random_finite_series_never_crash_or_give_nan(series, patcher, tmp_path):
    torch.set_num_threads(1)
    model = darts_model(tmp_path, TINY_DARTS, patcher=patcher)
    if len(series) < MIN_LENGTH:
        with pytest.raises(ValueError, match=r"time steps, but a training window"):
            model.fit(series)
        return
    model.fit(series)
    forecast = model.predict(4).all_values()
    assert forecast.shape == (4, series.width, 1)
    assert np.isfinite(forecast).all(), (series.values()[:5], forecast)
