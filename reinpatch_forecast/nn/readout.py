"""The time-aligned ``copy`` readout: the encoded tokens of a patching mapped back onto the steps.

A head over token slots (``Linear(N*d -> H)``) gives slot ``j`` fixed weights, which assume
that slot ``j`` always covers the same span of the window. Only the uniform grid keeps that
promise, so under such a head any other patching costs accuracy and a policy trained on the
forecast loss learns to stay on the grid. The ``copy`` readout instead gives every time step
``k`` features of the token of the patch that covers it (constant over the patch); the head
then reads ``L * k`` step features whose meaning does not depend on where the boundaries fall.

Shape legend
------------
M : patchings (rows times group)
N : patches (tokens) per patching
L : lookback length
d : model width
k : features per step
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

__all__ = ["step_patch_index", "StepReadout"]


def step_patch_index(starts: Tensor, length: int) -> Tensor:
    """Index of the patch that covers every step, ``(M, L)`` int64 from ``starts`` ``(M, N)``.

    A cumulative count of the starts at or before each step: scatter and cumsum, which keep
    static shapes and export to ONNX (no ``searchsorted``). ``starts`` are sorted and begin
    at 0; they are distinct but for unused slots (an at-most budget), which all start at
    ``L`` and cover no step.
    """
    marks = torch.zeros(starts.shape[0], length + 1, dtype=torch.int64, device=starts.device)
    marks.scatter_(1, starts, 1)
    return marks[:, :length].cumsum(dim=1) - 1  # (M, L)


class StepReadout(nn.Module):
    """Features of every time step: the projected token of the patch that covers it.

    Parameters
    ----------
    d_model
        ``d``.
    width
        ``k``: features per step.
    """

    def __init__(self, d_model: int, width: int) -> None:
        super().__init__()
        self.width = width
        self.project = nn.Linear(d_model, width)

    def forward(self, tokens: Tensor, starts: Tensor, length: int) -> Tensor:
        """Step features.

        Parameters
        ----------
        tokens
            ``(M, N, d)`` encoded tokens.
        starts
            ``(M, N)`` int64 sorted starts of their patching, ``starts[:, 0] == 0``.
        length
            ``L``.

        Returns
        -------
        Tensor
            ``(M, L, k)``: the features of step ``t`` are those of the token of the patch
            covering ``t``.
        """
        features = self.project(tokens)  # (M, N, k)
        patch = step_patch_index(starts, length)  # (M, L)
        return features.gather(1, patch.unsqueeze(-1).expand(-1, -1, self.width))  # (M, L, k)
