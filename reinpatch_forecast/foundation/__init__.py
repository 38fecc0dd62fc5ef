"""The foundation patcher: the corpus it is pretrained on, and its pretraining.

- :mod:`.corpus`: the series a foundation patcher is pretrained on;
- :mod:`.pretraining`: :func:`pretrain_patcher`, which trains one through ``ReinPatchModel``.

Patcher files (saving, loading, the shipped patcher) are :mod:`reinpatch_forecast.patcher_io`,
below the darts face that reads them; pretraining sits above it. The modules here are imported
on first use of one of their names, so that ``import reinpatch_forecast.foundation`` stays cheap.
"""

from __future__ import annotations

import importlib
from typing import Any

#: Public names of this package, by the module that defines them.
_NAMES = {
    "corpus": ("SYNTHETIC_KINDS", "synthetic_series", "library_series", "ltsf_training_series",
               "default_corpus"),
    "pretraining": ("PretrainEpoch", "PretrainResult", "pretrain_patcher"),
}

__all__ = [*_NAMES["corpus"], *_NAMES["pretraining"]]


def __getattr__(name: str) -> Any:
    for module, names in _NAMES.items():
        if name in names:
            return getattr(importlib.import_module(f".{module}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
