"""Train a tiny ReinPatchModel with DDP on 2 CPU processes (gloo), then predict.

Usage: ``python ddp_fit_predict.py STRATEGY WORK_DIR`` with STRATEGY ``ddp`` or ``ddp_spawn``.
Every process that reaches the end writes one ``result_rank<R>.json`` into WORK_DIR: its rank,
the world size of training, and the forecasts of 4 series (with ``ddp`` the script runs once
per process). A file per process, not a line on the shared stdout: two processes' long lines
interleave on a pipe.
The ``if __name__ == "__main__"`` guard is required: Lightning re-runs (``ddp``) or re-imports
(``ddp_spawn``) this file in the worker processes.
"""

from __future__ import annotations

import json
import logging
import sys
import warnings
from pathlib import Path

warnings.filterwarnings("ignore")
for name in ("pytorch_lightning", "lightning.pytorch", "lightning_fabric", "lightning"):
    logging.getLogger(name).setLevel(logging.ERROR)


def main(strategy: str, work_dir: str) -> None:
    import numpy as np
    import torch
    from darts import TimeSeries

    from reinpatch_forecast import ReinPatchModel
    from reinpatch_forecast._lightning import quiet_trainer_kwargs

    torch.set_num_threads(1)
    t = np.arange(80)
    series = [TimeSeries.from_values((np.sin(2 * np.pi * t / 12 + i) * (i + 1)).astype(np.float32))
              for i in range(4)]
    model = ReinPatchModel(
        input_chunk_length=12, output_chunk_length=3, compression_rate=3, group_size=2,
        d_model=8, n_heads=1, n_layers=1, dropout=0.0, resample_points=4, batch_size=16,
        n_epochs=2, random_state=0, work_dir=work_dir, save_checkpoints=True,
        model_name=f"ddp_{strategy}", force_reset=True,
        pl_trainer_kwargs=quiet_trainer_kwargs(devices=2, strategy=strategy),
    )
    model.fit(series)
    world_size = model.trainer.world_size
    forecasts = model.predict(3, series=series)  # on one device in every process
    restored = ReinPatchModel.load_from_checkpoint(model.model_name, work_dir=work_dir,
                                                   best=False)
    from_checkpoint = restored.predict(3, series=series)
    rank = torch.distributed.get_rank() if torch.distributed.is_initialized() else 0
    result = {
        "rank": rank,
        "world_size": world_size,
        "n_forecasts": len(forecasts),
        "forecasts": [f.values().ravel().tolist() for f in forecasts],
        "from_checkpoint": [f.values().ravel().tolist() for f in from_checkpoint],
    }
    Path(work_dir, f"result_rank{rank}.json").write_text(json.dumps(result))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
