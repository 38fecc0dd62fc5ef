"""Time-aligned readouts: the encoded tokens of a patching mapped back onto the time steps.

A flatten head over token slots (``Linear(N*d -> H)``) gives slot ``j`` fixed weights, which
assume that slot ``j`` always covers the same span of the window. Only the uniform grid keeps
that promise, so under a flatten head any other patching costs accuracy and a policy trained
on the forecast loss learns to stay on the grid. A time-aligned readout instead gives every
time step ``k`` features read from the patch that covers it; the head then reads ``L * k``
step features whose meaning does not depend on where the boundaries fall.

Readouts (``READOUTS``):

``"profile"``
    Each token is decoded into a within-patch profile of ``P`` points of ``k`` features,
    stretched over its patch: step ``t`` of a patch ``[s, e)`` reads point
    ``floor((t - s) * P / (e - s))``. A patch of ``P`` steps or fewer reads its points one by
    one; a longer one holds each point over several steps.
``"copy"``
    Each step reads its patch's token (projected to ``k`` features), constant over the patch.
``"interpolate"``
    Step features are interpolated linearly between the projected tokens of neighbouring
    patches, anchored at the patch centres: a smooth readout, whose steps near a boundary also
    read the neighbour patch.
``"query"``
    No step features: ``H`` learned horizon queries attend to the encoded tokens (whose
    position features say where each patch lies), and each query's output is mapped to its
    step's forecast. The tokens are read as a set, by content and position, so no weight is
    tied to a token slot or to a step of the window.
``"flatten"``
    No step features: the backbone keeps the flatten head over token slots (an ablation).

Shape legend
------------
M : patchings (rows times group)
N : patches (tokens) per patching
L : lookback length
P : profile points per patch
d : model width
k : features per step
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from ..errors import ReinPatchInputError
from .segments import patch_lengths

__all__ = ["READOUTS", "STEP_READOUTS", "DEFAULT_READOUT", "step_patch_index", "StepReadout",
           "HorizonQueryReadout"]

#: The backbone's readouts, the default first.
READOUTS = ("copy", "profile", "interpolate", "query", "flatten")
#: The readouts that map the tokens onto the ``L`` steps (:class:`StepReadout`).
STEP_READOUTS = ("copy", "profile", "interpolate")
#: Chosen by measurement (with the local skip): the readout that keeps a non-grid patching's
#: cost smallest while uniform patches forecast as well as under the flatten head.
DEFAULT_READOUT = "copy"


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
    """Features of every time step from the encoded tokens of its patching.

    Parameters
    ----------
    mode
        One of :data:`READOUTS` except ``"flatten"``.
    d_model
        ``d``.
    points
        ``P``: profile points per patch (``"profile"`` only).
    width
        ``k``: features per step.
    """

    def __init__(self, mode: str, d_model: int, points: int, width: int) -> None:
        super().__init__()
        if mode not in STEP_READOUTS:
            raise ReinPatchInputError(
                f"StepReadout reads tokens onto steps: mode must be one of {STEP_READOUTS}, "
                f"got {mode!r}."
            )
        self.mode = mode
        self.points = points
        self.width = width
        self.project = nn.Linear(d_model, (points if mode == "profile" else 1) * width)

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
            ``(M, L, k)``: the features of step ``t`` depend only on the token of the patch
            covering ``t`` and on that patch's span (``"interpolate"``: also on the
            neighbouring patch's token and span).
        """
        rows, n_patches, _ = tokens.shape
        width = self.width
        features = self.project(tokens)  # (M, N, P*k) or (M, N, k)
        patch = step_patch_index(starts, length)  # (M, L)
        steps = torch.arange(length, device=starts.device).expand(rows, length)  # (M, L)
        if self.mode == "copy":
            return features.gather(1, patch.unsqueeze(-1).expand(-1, -1, width))  # (M, L, k)
        if self.mode == "profile":
            points = self.points
            start = starts.gather(1, patch)  # (M, L)
            span = patch_lengths(starts, length).gather(1, patch)  # (M, L)
            point = torch.div((steps - start) * points, span, rounding_mode="floor")
            index = patch * points + point.clamp(max=points - 1)  # (M, L) in [0, N*P)
            profile = features.reshape(rows, n_patches * points, width)  # (M, N*P, k)
            return profile.gather(1, index.unsqueeze(-1).expand(-1, -1, width))  # (M, L, k)
        # interpolate: between the centres of the step's patch and the neighbour on its side.
        centres = starts.to(tokens.dtype) + (patch_lengths(starts, length).to(tokens.dtype) - 1) / 2
        position = steps.to(tokens.dtype)  # (M, L)
        own_centre = centres.gather(1, patch)  # (M, L)
        after = position >= own_centre
        left = torch.where(after, patch, (patch - 1).clamp(min=0))  # (M, L)
        last = (starts < length).sum(dim=1, keepdim=True) - 1  # (M, 1): the last used patch
        right = torch.where(after, torch.minimum(patch + 1, last), patch)  # (M, L)
        left_centre, right_centre = centres.gather(1, left), centres.gather(1, right)
        gap = right_centre - left_centre
        weight = torch.where(gap > 0, (position - left_centre) / gap.clamp(min=1e-6),
                             torch.zeros_like(gap)).clamp(0.0, 1.0).unsqueeze(-1)  # (M, L, 1)

        def read(index: Tensor) -> Tensor:
            return features.gather(1, index.unsqueeze(-1).expand(-1, -1, width))  # (M, L, k)

        return read(left) * (1 - weight) + read(right) * weight  # (M, L, k)


class HorizonQueryReadout(nn.Module):
    """The forecast read from the tokens by one learned query per horizon step.

    Parameters
    ----------
    d_model, n_heads
        ``d`` and the attention heads.
    horizon
        ``H``.
    nr_params
        ``Q``.
    """

    def __init__(self, d_model: int, n_heads: int, horizon: int, nr_params: int) -> None:
        super().__init__()
        self.queries = nn.Parameter(0.02 * torch.randn(horizon, d_model))
        self.attention = nn.MultiheadAttention(d_model, n_heads, batch_first=True)
        self.norm = nn.LayerNorm(d_model)
        self.output = nn.Linear(d_model, nr_params)

    def attend(self, tokens: Tensor) -> Tensor:
        """Per-step features ``(M, H, d)`` of tokens ``(M, N, d)``."""
        queries = self.queries.unsqueeze(0).expand(tokens.shape[0], -1, -1)  # (M, H, d)
        read = self.attention(queries, tokens, tokens, need_weights=False)[0]  # (M, H, d)
        return self.norm(read + queries)

    def forward(self, features: Tensor) -> Tensor:
        """The forecast ``(M, H, Q)`` from the features of :meth:`attend`."""
        return self.output(features)
