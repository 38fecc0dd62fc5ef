"""Datasets: the LTSF and event-rich series by name, their reader and the standard split.

- :mod:`.catalog`: the datasets by name, their split families and column roles;
- :mod:`.loading`: the CSV reader and the ETTh1 copy shipped in this folder;
- :mod:`.splits`: the standard split, train-only scaling and stride-1 windows.

This package depends on numpy and pandas only.
"""

from __future__ import annotations

from .catalog import (
    DATA_DIR_ENV_VAR,
    EVENT_DATASETS,
    LTSF_DATASETS,
    LTSF_FAMILIES,
    LTSF_HORIZONS,
    EventDataset,
)
from .loading import load_bundled_etth1, load_ltsf_frame
from .splits import LTSFSplits, prepare_ltsf, sliding_windows, split_borders, split_family

__all__ = [
    "DATA_DIR_ENV_VAR",
    "EVENT_DATASETS",
    "EventDataset",
    "LTSF_DATASETS",
    "LTSF_FAMILIES",
    "LTSF_HORIZONS",
    "LTSFSplits",
    "load_ltsf_frame",
    "load_bundled_etth1",
    "split_family",
    "split_borders",
    "prepare_ltsf",
    "sliding_windows",
]
