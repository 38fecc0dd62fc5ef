"""Where a model's patcher cuts a window: the result of ``ReinPatchModel.patch_boundaries``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

__all__ = ["PatchBoundaries", "last_window_boundaries"]


@dataclass
class PatchBoundaries:
    """Where the patcher cuts the last input window of a series.

    Attributes
    ----------
    time_index
        ``(L,)`` time index of the window.
    values
        ``(L, C)`` the window's values.
    starts
        ``(C, N)`` int64: start positions (0-based, into the window) of the patches, per
        component. With ``budget="at_most"`` the unused token slots come last and hold ``L``
        (no patch).
    components
        The ``C`` component names.
    coarse_starts
        ``(C, N2)`` int64: the coarse (level-2) starts of a two-level model, each also in
        ``starts``; ``None`` for ``levels=1``.
    """

    time_index: pd.Index
    values: np.ndarray
    starts: np.ndarray
    components: list[str]
    coarse_starts: np.ndarray | None = None

    @property
    def n_patches(self) -> int:
        """``N``: token slots per component (all used, but with an at-most budget)."""
        return self.starts.shape[-1]

    @property
    def patches_used(self) -> np.ndarray:
        """``(C,)``: patches each component uses (``N`` with an exact budget)."""
        return (self.starts < len(self.time_index)).sum(axis=-1)

    def start_times(self, component: int = 0) -> pd.Index:
        """Time stamps at which the patches of one component start."""
        row = self.starts[component]
        return self.time_index[row[row < len(self.time_index)]]


def last_window_boundaries(module, series: Sequence, length: int) -> list[PatchBoundaries]:
    """The greedy patches of the last ``length`` steps of each darts series, one result each.

    Parameters
    ----------
    module
        The trained Lightning module (``ReinPatchModel.model``); its network cuts the windows.
    series
        Darts ``TimeSeries`` of at least ``length`` steps.
    length
        ``L``, the model's ``input_chunk_length``.
    """
    windows = np.stack([s.values(copy=False)[-length:] for s in series])  # (S, L, C)
    network = module.network
    with torch.inference_mode():
        x = torch.as_tensor(windows, dtype=module.dtype, device=module.device)
        starts = network.boundaries(x).cpu().numpy()  # (S, C, N)
        coarse = (
            network.coarse_boundaries(x).cpu().numpy()  # (S, C, N2)
            if network.config.levels == 2 else None
        )
    return [
        PatchBoundaries(
            time_index=s.time_index[-length:],
            values=windows[i],
            starts=starts[i],
            components=list(s.components),
            coarse_starts=None if coarse is None else coarse[i],
        )
        for i, s in enumerate(series)
    ]
