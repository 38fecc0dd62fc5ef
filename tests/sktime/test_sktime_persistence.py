"""Persistence gives identical forecasts (issue #8, item 3): sktime face.

sktime ``pickle`` and ``save``/``load`` (in memory and on disk). The darts face's:
tests/darts/test_persistence.py.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from sktime.base import load as sktime_load
from support import assert_same_arrays, sine_values, sktime_series


@pytest.mark.parametrize("likelihood", [None, "quantile"])
def test_sktime_pickle_and_save_load_identical(make_forecaster, tmp_path, likelihood):
    extra = {} if likelihood is None else {"likelihood": "quantile", "quantiles": (0.1, 0.9),
                                           "num_samples": 16}
    y = sktime_series(sine_values(60))
    forecaster = make_forecaster(patcher="learned", **extra).fit(y, fh=[1, 2, 3])

    def forecasts(f):
        out = {"point": f.predict().to_numpy()}
        if likelihood is not None:
            out["quantiles"] = f.predict_quantiles(alpha=[0.1, 0.9]).to_numpy()
        return out

    expected = forecasts(forecaster)
    copies = {
        "pickle": pickle.loads(pickle.dumps(forecaster)),
        "save_in_memory": sktime_load(forecaster.save()),
    }
    forecaster.save(str(tmp_path / "forecaster"))
    copies["save_to_disk"] = sktime_load(str(tmp_path / "forecaster"))
    for name, copy in copies.items():
        assert_same_arrays(forecasts(copy), expected, name)
    # a reloaded forecaster keeps working: update then predict, like the original
    new = sktime_series(sine_values(63))[-3:]
    np.testing.assert_array_equal(
        copies["save_to_disk"].update(new, update_params=False).predict().to_numpy(),
        forecaster.update(new, update_params=False).predict().to_numpy(),
    )
