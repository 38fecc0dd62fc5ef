"""Train tiny seeded models and print their forecasts' exact bytes (one JSON line).

Run twice in fresh processes by ``test_reproducibility.py``: the same ``random_state`` must give
bit-identical forecasts. Cases: the learned patcher (GRPG sampling in training), a quantile
likelihood sampled with a fixed ``random_state`` in ``predict``, and the sktime face with
probabilistic forecasts.
"""

from __future__ import annotations

import json
import logging
import sys
import tempfile
import warnings

import numpy as np
import torch

warnings.filterwarnings("ignore")
for name in ("pytorch_lightning", "lightning.pytorch", "lightning_fabric", "lightning"):
    logging.getLogger(name).setLevel(logging.ERROR)


def digest(array) -> dict:
    array = np.ascontiguousarray(array)
    return {"dtype": str(array.dtype), "shape": list(array.shape), "hex": array.tobytes().hex()}


def main() -> None:
    torch.set_num_threads(1)
    import pandas as pd
    from darts import TimeSeries
    from darts.utils.likelihood_models.torch import QuantileRegression

    from reinpatch_forecast import ReinPatchForecaster, ReinPatchModel
    from reinpatch_forecast._lightning import quiet_trainer_kwargs

    rng = np.random.default_rng(0)
    t = np.arange(90)
    values = np.sin(2 * np.pi * t / 12) + 0.2 * rng.standard_normal(90)
    series = TimeSeries.from_values(values.astype(np.float32))
    tiny = dict(input_chunk_length=12, output_chunk_length=3, compression_rate=3, group_size=4,
                d_model=8, n_heads=1, n_layers=1, dropout=0.1, resample_points=4,
                batch_size=16, n_epochs=2, random_state=42,
                pl_trainer_kwargs=quiet_trainer_kwargs())
    out = {}
    with tempfile.TemporaryDirectory() as work_dir:
        learned = ReinPatchModel(patcher="learned", work_dir=work_dir, **tiny).fit(series)
        out["learned"] = digest(learned.predict(6).values())
        out["learned_boundaries"] = digest(learned.patch_boundaries().starts)
        quantile = ReinPatchModel(
            patcher="learned", likelihood=QuantileRegression([0.1, 0.5, 0.9]),
            work_dir=work_dir, **tiny,
        ).fit(series)
        out["quantile_samples"] = digest(
            quantile.predict(3, num_samples=16, random_state=7).all_values()
        )
        out["quantile_parameters"] = digest(
            quantile.predict(3, predict_likelihood_parameters=True).values()
        )
    y = pd.Series(values, index=pd.period_range("2000-01", periods=90, freq="M"), name="y")
    forecaster = ReinPatchForecaster(
        input_chunk_length=12, compression_rate=3, group_size=4, d_model=8, n_heads=1,
        n_layers=1, n_epochs=2, batch_size=16, resample_points=4, likelihood="quantile",
        quantiles=(0.1, 0.9), num_samples=16, random_state=42,
    ).fit(y, fh=[1, 2, 3])
    out["sktime_point"] = digest(forecaster.predict().to_numpy())
    out["sktime_quantiles"] = digest(forecaster.predict_quantiles(alpha=[0.1, 0.9]).to_numpy())
    sys.stdout.write("RESULT " + json.dumps(out) + "\n")


if __name__ == "__main__":
    main()
