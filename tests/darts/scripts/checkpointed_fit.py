"""Train tiny ReinPatchModels with ``save_checkpoints=True`` and print what they forecast.

Usage: ``python checkpointed_fit.py FOLDER [--model-name NAME] [--models K] [--epochs E]
[--length T] [--seed S] [--wait-for FILE] [--die-in-write W]``

Run in ``FOLDER`` (the working directory): the models are created with darts' default
``work_dir`` (``FOLDER/darts_logs``) unless ``--model-name`` is given, in which case ``work_dir``
is ``FOLDER`` and the one model is named ``NAME``. Without ``--model-name`` the ``K`` models
are created one right after the other and keep the default ``model_name``; model ``i`` has
``random_state=S + i`` and trains on ``sine_values(T, seed=i)``. With ``--wait-for``
the script writes ``FOLDER/ready.<pid>`` and waits for ``FILE`` before creating the models, so
that two processes create theirs at the same moment. The end is one ``RESULT`` JSON line: per
model its ``model_name``, ``work_dir`` and the 3-step forecast of its training series (a
process killed before the end prints nothing). With ``--die-in-write W`` the process kills
itself with SIGKILL halfway through its ``W``-th checkpoint write (the bytes go to the
write's temporary file), as a kill from outside at that moment would.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
import time
import warnings
from pathlib import Path

warnings.filterwarnings("ignore")
for name in ("pytorch_lightning", "lightning.pytorch", "lightning_fabric", "lightning"):
    logging.getLogger(name).setLevel(logging.ERROR)

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # tests/, for support.py


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("folder")
    parser.add_argument("--model-name")
    parser.add_argument("--models", type=int, default=1)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--length", type=int, default=60)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--wait-for")
    parser.add_argument("--die-in-write", type=int)
    args = parser.parse_args()

    # before darts is imported: its default work_dir is the working directory at import time
    os.chdir(args.folder)
    import torch
    from support import TINY_DARTS, darts_series, sine_values

    from reinpatch_forecast import ReinPatchModel
    from reinpatch_forecast._lightning import quiet_trainer_kwargs

    torch.set_num_threads(1)
    if args.die_in_write:
        _die_in_checkpoint_write(args.die_in_write)
    if args.wait_for:
        Path(f"ready.{os.getpid()}").touch()
        deadline = time.monotonic() + 120
        while not os.path.exists(args.wait_for) and time.monotonic() < deadline:
            time.sleep(0.01)
    size = dict(TINY_DARTS, n_epochs=args.epochs, pl_trainer_kwargs=quiet_trainer_kwargs())
    if args.model_name:
        size.update(model_name=args.model_name, work_dir=args.folder, force_reset=True)
    # one model after the other, as fast as possible: created within the same second
    models = [
        ReinPatchModel(save_checkpoints=True, **dict(size, random_state=args.seed + i))
        for i in range(args.models)
    ]
    results = []
    for i, model in enumerate(models):
        series = darts_series(sine_values(args.length, seed=i))
        model.fit(series)
        results.append({"model_name": model.model_name, "work_dir": model.work_dir, "seed": i,
                        "forecast": model.predict(3).values().ravel().tolist()})
    print("RESULT " + json.dumps(results), flush=True)


def _die_in_checkpoint_write(number: int) -> None:
    """Make the ``number``-th checkpoint write (to a ``.partial`` file) end the process with
    SIGKILL after half of its bytes."""
    import torch

    from reinpatch_forecast.darts import checkpoints

    real_save, writes = torch.save, []

    def save(obj, file, *args, **kwargs):
        name = getattr(file, "name", str(file))
        if not str(name).endswith(checkpoints.TEMPORARY_SUFFIX):
            return real_save(obj, file, *args, **kwargs)
        writes.append(name)
        real_save(obj, file, *args, **kwargs)
        if len(writes) == number:
            file.truncate(file.tell() // 2)
            file.flush()
            os.kill(os.getpid(), signal.SIGKILL)

    checkpoints.torch.save = save


if __name__ == "__main__":
    main()
