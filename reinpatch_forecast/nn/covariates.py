"""Covariates: what the backbone reads besides the target, and how each kind enters it.

The patcher reads only the target (so a pretrained patcher works with any covariates); the
covariates enter the backbone, the same way for every patching of a GRPG group:

- **past** covariates (known over the lookback, including the history of future covariates)
  are averaged over each of the target's own patches and projected onto that patch's token;
- **future** covariates (known over the horizon) are mapped, step by step, to an offset of
  the normalised forecast of that step (a small MLP shared by the steps);
- **static** covariates become an embedding added to every token of the series.

Covariates are used at the scale they are given (scale them like any darts covariates, e.g.
with ``darts.dataprocessing.transformers.Scaler``); the target's instance normalisation does
not touch them.

Shape legend
------------
B : batch (windows)
C : target channels
R : rows, ``B * C`` (channels folded into the batch)
G : patchings per row
L : lookback length
N : patches per patching
H : horizon
Q : parameters per forecast step
Cp, Cf, Cs : past, future and static covariate features
d : model width
"""

from __future__ import annotations

from dataclasses import dataclass

from torch import Tensor, nn

from ..errors import ReinPatchInputError
from .segments import segment_mean

__all__ = ["Covariates", "CovariateEmbedding"]


@dataclass
class Covariates:
    """The covariates of a batch of windows; each kind is optional.

    Attributes
    ----------
    past
        ``(B, L, Cp)``: values over the lookback window.
    future
        ``(B, H, Cf)``: values over the forecast horizon.
    static
        ``(B, S, Cs)``: one row per target channel (``S = C``) or one shared row (``S = 1``).
    """

    past: Tensor | None = None
    future: Tensor | None = None
    static: Tensor | None = None

    def rows(self, channels: int) -> "Covariates":
        """The covariates of every row ``R = B * C`` (rows ordered ``b * C + c``).

        Past and future covariates are shared by the channels of a window; static ones are
        per channel, or shared when ``S = 1``.
        """
        def repeat(tensor: Tensor | None) -> Tensor | None:
            return None if tensor is None else tensor.repeat_interleave(channels, dim=0)

        static = self.static
        if static is not None:
            if static.shape[1] == channels:
                static = static.reshape(-1, static.shape[-1])  # (R, Cs)
            elif static.shape[1] == 1:
                static = repeat(static[:, 0])  # (R, Cs)
            else:
                raise ReinPatchInputError(
                    f"Static covariates have {static.shape[1]} rows but the target has "
                    f"{channels} channels: give one row per channel or one shared row."
                )
        return Covariates(past=repeat(self.past), future=repeat(self.future), static=static)


class CovariateEmbedding(nn.Module):
    """Projections of the covariates onto the tokens and the forecast (see the module).

    Parameters
    ----------
    n_past, n_future, n_static
        ``Cp``, ``Cf``, ``Cs``; a kind with 0 features gets no parameters.
    d_model
        ``d``.
    n_params
        ``Q``.
    """

    def __init__(self, n_past: int, n_future: int, n_static: int, d_model: int,
                 n_params: int) -> None:
        super().__init__()
        self.n_past, self.n_future, self.n_static = n_past, n_future, n_static
        if n_past:
            self.past_proj = nn.Linear(n_past, d_model)
        if n_static:
            self.static_proj = nn.Linear(n_static, d_model)
        if n_future:
            self.future_head = nn.Sequential(
                nn.Linear(n_future, d_model), nn.GELU(), nn.Linear(d_model, n_params)
            )

    def check(self, covariates: Covariates | None) -> None:
        """Raise a ``ValueError`` unless ``covariates`` has exactly the kinds and widths this
        embedding was built for."""
        given = covariates or Covariates()
        for kind, expected in (("past", self.n_past), ("future", self.n_future),
                               ("static", self.n_static)):
            tensor = getattr(given, kind)
            width = 0 if tensor is None else tensor.shape[-1]
            if width != expected:
                raise ReinPatchInputError(
                    f"The network was built for {expected} {kind} covariate feature(s) but got "
                    f"{width}: pass the same covariates at training and at prediction."
                )

    def token_offsets(self, rows: Covariates, starts: Tensor) -> Tensor | None:
        """What the covariates add to every token: ``(R, G, N, d)``, or ``None``.

        ``rows`` holds ``past`` ``(R, L, Cp)`` and ``static`` ``(R, Cs)``; ``starts`` is
        ``(R, G, N)``.
        """
        offsets = None
        if self.n_past:
            # mean over each patch, then project: a linear map commutes with the mean, so this
            # is the mean of the projected covariates at a fraction of the cost.
            offsets = self.past_proj(segment_mean(rows.past, starts))  # (R, G, N, d)
        if self.n_static:
            static = self.static_proj(rows.static)[:, None, None, :]  # (R, 1, 1, d)
            offsets = static if offsets is None else offsets + static
        return offsets

    def horizon_offsets(self, rows: Covariates) -> Tensor | None:
        """What the future covariates add to the normalised forecast: ``(R, H, Q)``, or
        ``None``; ``rows.future`` is ``(R, H, Cf)``."""
        if not self.n_future:
            return None
        return self.future_head(rows.future)  # (R, H, Q)
