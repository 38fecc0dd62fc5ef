"""Fit, predict and export a tiny model as a user would, in three parts that ``MARKERS``
separate on stderr: with darts' default trainer settings (progress bars and Lightning's
start-up lines, as darts' own models show them), with ``verbose=False``, and a model whose
callback raises a warning of its own (it must still show).

Run by ``test_quiet.py``, which reads this process's real stderr. The last stdout line is a
JSON object: whether the logger levels and filters and the warning filters after each part's
calls are those of before them (the calls change no process-wide state).
"""

from __future__ import annotations

import json
import logging
import os
import sys
import tempfile
import warnings

import pytorch_lightning as pl

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from support import TINY_DARTS, noisy_sine  # noqa: E402

from reinpatch_forecast import ReinPatchModel  # noqa: E402

MARKERS = ("--- verbose=False ---", "--- a model whose callback warns ---")
LOGGERS = ("", "pytorch_lightning", "lightning.pytorch", "lightning_fabric", "lightning",
           "torch.onnx", "torch.onnx._internal.exporter._registration")


class Warns(pl.Callback):
    def on_train_start(self, trainer, pl_module) -> None:
        warnings.warn("a warning of the user's callback", UserWarning)


def state() -> tuple:
    return (tuple(logging.getLogger(name).level for name in LOGGERS),
            tuple(len(logging.getLogger(name).filters) for name in LOGGERS),
            tuple(warnings.filters))


def main() -> None:
    work_dir = tempfile.mkdtemp()
    model = ReinPatchModel(**TINY_DARTS, work_dir=work_dir)
    before = state()  # after darts' constructor, which adds warning filters of its own
    model.fit(noisy_sine())
    model.predict(3)
    model.to_onnx(os.path.join(work_dir, "model.onnx"))
    restored = {"default": state() == before}
    print(MARKERS[0], file=sys.stderr, flush=True)
    model.fit(noisy_sine(), verbose=False)
    model.predict(3, verbose=False)
    restored["quiet"] = state() == before
    print(MARKERS[1], file=sys.stderr, flush=True)
    ReinPatchModel(**TINY_DARTS, work_dir=work_dir,
                   pl_trainer_kwargs={"callbacks": [Warns()]}).fit(noisy_sine())
    print(json.dumps({"restored": restored}))


if __name__ == "__main__":
    main()
