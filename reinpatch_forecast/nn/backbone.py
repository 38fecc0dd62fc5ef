"""The backbone: tokens from variable-size patches, a Transformer encoder and a time-aligned head.

Every patch becomes one token: the sum of the mean of local-encoder features over the patch,
the patch's values area-resampled to ``P`` points, and fixed position features of where the
patch lies and how long it is. A pre-norm Transformer encodes the tokens; the ``copy`` readout
(:mod:`.readout`) gives every time step ``k`` features of the token of its patch, plus a
projection of the step's own local features (the per-step skip), and a linear head reads the
``L * k`` step features. The head's weights are tied to time steps, not to token slots, so a
patching away from the uniform grid costs no accuracy by itself.

With two levels (``ReinPatchConfig.levels == 2``), the encoder runs on the ``N1`` fine tokens,
the fine tokens are pooled by segment mean into ``N2`` coarse tokens (one per coarse patch, a
run of whole fine patches), a second encoder of ``n_layers`` layers runs on those, and the
coarse tokens are read onto the steps of their patches beside the fine ones.

Shape legend
------------
R : rows (series, channels folded into the batch)
G : patchings per row (a GRPG group; 1 at prediction)
L : lookback length
N : patches (tokens) per patching (``N1``, the fine tokens, with two levels)
N2 : coarse (level-2) tokens per patching
P : points each patch is resampled to
d : model width
H : forecast horizon
k : features per time step of the readout (``ReinPatchConfig.step_width``)
Q : parameters per forecast step (``nr_params``; 1 for a point forecast)
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..errors import ReinPatchInputError
from .chunking import map_row_chunks, rows_per_chunk
from .convolution import step_major_conv1d
from .covariates import CovariateEmbedding, Covariates
from .readout import StepReadout
from .segments import (
    coarse_token_starts,
    patch_lengths,
    pool_tokens,
    resample_patches,
    segment_mean,
)

if TYPE_CHECKING:  # pragma: no cover
    from .config import ReinPatchConfig

__all__ = ["PatchTokeniser", "SelfAttention", "EncoderLayer", "Backbone", "group_dropout",
           "GroupDropout", "set_mc_dropout"]


def sinusoidal_features(positions: Tensor, n_frequencies: int, max_period: float) -> Tensor:
    """Fixed sin/cos features of integer positions, ``(..., 2F)`` from ``(...)``."""
    exponents = torch.arange(n_frequencies, device=positions.device, dtype=torch.float32)
    frequencies = torch.exp(-math.log(max_period) * exponents / n_frequencies)  # (F,)
    angles = positions.to(torch.float32).unsqueeze(-1) * frequencies  # (..., F)
    return torch.cat([angles.sin(), angles.cos()], dim=-1)  # (..., 2F)


class PatchTokeniser(nn.Module):
    """One token per patch: local-feature mean + resampled values + position features.

    The local features of a series are computed once and shared by all ``G`` patchings of it.
    The resampled part reads each patch as a step function and takes its mean over ``P`` equal
    sub-intervals (area resampling), so no patch the policy produces loses information a
    uniform ``P``-step patch keeps: up to ``P`` steps nothing is lost, longer patches are
    low-passed rather than aliased.
    Position features are fixed sinusoids of the distance from the window's end and of the
    length, projected linearly: no table is tied to ``L``.

    Parameters
    ----------
    d_model
        ``d``.
    resample_points
        ``P``.
    """

    n_frequencies = 16

    def __init__(self, d_model: int, resample_points: int) -> None:
        super().__init__()
        self.d_model = d_model
        self.resample_points = resample_points
        # One conv from the raw values (a pointwise map followed by a depthwise conv is the
        # same linear family, at a fraction of the cost).
        self.local_conv = nn.Conv1d(1, d_model, 3, padding="same", padding_mode="replicate")
        self.local_out = nn.Linear(d_model, d_model)
        self.resampled_proj = nn.Linear(resample_points, d_model)
        self.position_proj = nn.Linear(4 * self.n_frequencies, d_model)

    def position_features(self, starts: Tensor, length: int) -> Tensor:
        """Fixed features of every patch's distance from the window's end and its length.

        ``(..., N, 4F)`` float32 from ``starts`` ``(..., N)``.
        """
        lengths = patch_lengths(starts, length)  # (..., N)
        return torch.cat(
            [
                sinusoidal_features(length - starts, self.n_frequencies, 4.0 * length),
                sinusoidal_features(lengths, self.n_frequencies, 4.0 * length),
            ],
            dim=-1,
        )  # (..., N, 4F)

    #: Most elements of one ``(rows, L, d)`` intermediate of :meth:`local_features` before the
    #: rows are split into chunks (CPU only; see :mod:`~reinpatch_forecast.nn.chunking`).
    chunk_elements: int = 2**21

    def chunk_rows(self, length: int) -> int:
        """Rows per chunk of :meth:`local_features` on series of ``length`` steps."""
        return rows_per_chunk(self.chunk_elements, length * self.d_model)

    def local_features(self, x: Tensor) -> Tensor:
        """Per-position features ``(R, L, d)`` of a normalised series ``x`` ``(R, L)``: the
        activated local conv, before ``local_out``.

        ``local_out`` is linear, so it commutes with the patch mean: the tokeniser applies it
        to the ``N`` patch means (:meth:`local_tokens`) instead of the ``L`` steps, and the
        per-step skip folds it into its own projection
        (:meth:`~reinpatch_forecast.nn.backbone.Backbone.skip_features`). The function is
        that of ``local_out`` on every step, at ``N / L`` of its cost.

        Rows are independent, so long inputs on the CPU run in chunks of rows (the
        intermediates stay small; only the result is one ``(R, L, d)`` tensor).
        """
        return map_row_chunks(self._local_features, (x,), self.chunk_rows(x.shape[-1]))

    def _local_features(self, x: Tensor) -> Tensor:
        """:meth:`local_features` in one pass, ``(r, L, d)`` from ``(r, L)``."""
        return F.gelu(step_major_conv1d(self.local_conv, x))  # (R, L, d)

    def local_tokens(self, local: Tensor, starts: Tensor) -> Tensor:
        """The local part of every token, ``local_out`` of the patch mean of ``local``.

        ``(R, G, N, d)`` from ``local`` ``(R, L, d)`` and ``starts`` ``(R, G, N)``; equal to
        the patch mean of ``local_out(local)`` (an empty slot of an at-most budget reads
        ``local_out``'s bias, and no step or attention key reads that slot).
        """
        return self.local_out(segment_mean(local, starts))  # (R, G, N, d)

    def forward(self, x: Tensor, starts: Tensor, local: Tensor | None = None) -> Tensor:
        """Tokens of every patching.

        Parameters
        ----------
        x
            ``(R, L)`` normalised series.
        starts
            ``(R, G, N)`` int64 sorted start positions.
        local
            ``(R, L, d)``: :meth:`local_features` of ``x`` if already computed.

        Returns
        -------
        Tensor
            ``(R*G, N, d)``.
        """
        rows, group, n_patches = starts.shape
        length = x.shape[-1]
        if local is None:
            local = self.local_features(x)  # (R, L, d)
        mean = self.local_tokens(local, starts)  # (R, G, N, d)
        values = resample_patches(x, starts, self.resample_points)  # (R, G, N, P)
        position = self.position_features(starts, length)  # (R, G, N, 4F)
        tokens = (mean + self.resampled_proj(values)
                  + self.position_proj(position.to(x.dtype)))  # (R, G, N, d)
        return tokens.reshape(rows * group, n_patches, self.d_model)  # (R*G, N, d)


def group_dropout(h: Tensor, p: float, group: int, training: bool) -> Tensor:
    """Dropout whose mask is shared by the ``G`` patchings of a series.

    The draws of a GRPG group are compared with each other, so they see the same network noise
    (common random numbers: less variance in the reward differences), and one mask per series
    instead of per draw makes dropout ``G`` times cheaper on the CPU, where drawing the mask
    costs more than the matrix products it guards.

    Parameters
    ----------
    h
        ``(R*G, ...)``, rows of the same series consecutive.
    p
        Drop probability.
    group
        ``G``.
    training
        Dropout is the identity when ``False``. :class:`GroupDropout` passes ``True`` in
        training mode and with Monte-Carlo dropout on.
    """
    if not training or p == 0.0:
        return h
    rows = h.shape[0] // group
    keep = torch.empty((rows, 1) + h.shape[1:], device=h.device, dtype=h.dtype)
    keep.bernoulli_(1.0 - p).div_(1.0 - p)  # (R, 1, ...)
    return (h.reshape((rows, group) + h.shape[1:]) * keep).reshape(h.shape)


class GroupDropout(nn.Dropout):
    """:func:`group_dropout` as a module, with Monte-Carlo dropout at prediction.

    It mirrors darts' ``MonteCarloDropout`` without importing darts (``nn`` stays pure
    PyTorch): it drops in training mode, and in evaluation mode too while
    ``_mc_dropout_enabled`` is set (:func:`set_mc_dropout`; darts sets the same attribute of
    its ``MonteCarloDropout`` modules on ``predict(..., mc_dropout=True)``). At prediction
    ``G == 1``, so every row, and so every forecast sample of a tiled batch, draws its own mask.
    The darts model turns these modules into ``MonteCarloDropout`` subclasses so that darts
    finds them.

    Parameters
    ----------
    p
        Drop probability.
    """

    #: Monte-Carlo dropout: drop in evaluation mode as well (off when built).
    _mc_dropout_enabled: bool = False

    @property
    def mc_dropout_enabled(self) -> bool:
        """Whether the next call drops: in training mode or with Monte-Carlo dropout on."""
        return self._mc_dropout_enabled or self.training

    def forward(self, h: Tensor, group: int = 1) -> Tensor:
        """``(R*G, ...) -> (R*G, ...)``, one mask per series shared by its ``G`` rows."""
        return group_dropout(h, self.p, group, self.mc_dropout_enabled)


def set_mc_dropout(module: nn.Module, active: bool) -> None:
    """Switch Monte-Carlo dropout on or off in every :class:`GroupDropout` of ``module``.

    The pure-PyTorch counterpart of darts' ``set_mc_dropout``: with it on, an evaluation-mode
    forward pass drops as in training, so repeated passes give Monte-Carlo samples.
    """
    for child in module.modules():
        if isinstance(child, GroupDropout):
            child._mc_dropout_enabled = active


class SelfAttention(nn.Module):
    """Multi-head self-attention that owns its projections: ``qkv`` ``(d -> 3d)`` and ``out``
    ``(d -> d)``, and calls ``F.scaled_dot_product_attention`` (no attention dropout).

    Its initial weights are those of ``nn.MultiheadAttention(d, heads)`` drawn in the same
    order (``out``'s weight and bias, then a Xavier-uniform ``qkv`` weight; both biases zero),
    so a seed gives the same network as an encoder built on that module. A state dict saved
    with ``nn.MultiheadAttention``'s names (``in_proj_weight``, ``in_proj_bias``,
    ``out_proj.weight``, ``out_proj.bias``) loads under the new names: the weights are the
    same matrices.

    Parameters
    ----------
    d_model
        ``d``; a multiple of ``n_heads``.
    n_heads
        Attention heads.
    """

    #: Old key suffix -> new key suffix of a state dict written by ``nn.MultiheadAttention``.
    legacy_keys = {"in_proj_weight": "qkv.weight", "in_proj_bias": "qkv.bias",
                   "out_proj.weight": "out.weight", "out_proj.bias": "out.bias"}

    def __init__(self, d_model: int, n_heads: int) -> None:
        super().__init__()
        self.n_heads = n_heads
        # Built without drawing, then drawn in nn.MultiheadAttention's order (see above).
        self.qkv = nn.utils.skip_init(nn.Linear, d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)
        nn.init.xavier_uniform_(self.qkv.weight)
        nn.init.zeros_(self.qkv.bias)
        nn.init.zeros_(self.out.bias)

    def forward(self, h: Tensor, unused: Tensor | None = None) -> Tensor:
        """``(M, N, d) -> (M, N, d)``; ``unused`` ``(M, N)`` bool masks keys (empty slots)."""
        rows, tokens, width = h.shape
        heads = self.n_heads
        q, k, v = self.qkv(h).view(rows, tokens, 3, heads, width // heads).permute(2, 0, 3, 1, 4)
        mask = None if unused is None else ~unused[:, None, None, :]  # (M, 1, 1, N): attend
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)  # (M, heads, N, d/heads)
        return self.out(out.transpose(1, 2).reshape(rows, tokens, width))  # (M, N, d)

    def _load_from_state_dict(self, state_dict: dict, prefix: str, *args, **kwargs) -> None:
        for old, new in self.legacy_keys.items():
            if prefix + old in state_dict and prefix + new not in state_dict:
                state_dict[prefix + new] = state_dict.pop(prefix + old)
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)


class EncoderLayer(nn.Module):
    """Pre-norm Transformer encoder layer with group-shared dropout.

    ``h = h + drop(attn(norm(h)))``, then ``h = h + drop(ff(norm(h)))`` with a GELU
    feed-forward network; attention probabilities are not dropped.
    """

    def __init__(self, d_model: int, n_heads: int, d_ff: int, dropout: float) -> None:
        super().__init__()
        # One module for the three sites: it holds no state, only the rate and the MC switch.
        self.dropout = GroupDropout(dropout)
        self.attention_norm = nn.LayerNorm(d_model)
        self.attention = SelfAttention(d_model, n_heads)
        self.ff_norm = nn.LayerNorm(d_model)
        self.ff_in = nn.Linear(d_model, d_ff)
        self.ff_out = nn.Linear(d_ff, d_model)

    def forward(self, h: Tensor, group: int, unused: Tensor | None = None) -> Tensor:
        """``(R*G, N, d) -> (R*G, N, d)``; ``unused`` ``(R*G, N)`` bool masks empty token
        slots as keys (their own outputs are never read)."""
        h = h + self.dropout(self.attention(self.attention_norm(h), unused), group)
        inner = self.dropout(F.gelu(self.ff_in(self.ff_norm(h))), group)  # (R*G, N, d_ff)
        return h + self.dropout(self.ff_out(inner), group)


class Backbone(nn.Module):
    """Pre-norm Transformer encoder over the ``N`` tokens and a head ``L*k -> H*Q`` over steps.

    The encoded tokens become step features ``(L, k)`` (``step_readout``, the ``copy``
    readout) to which ``skip_projection`` adds every step's own local features; the head is
    ``Linear(L*k, H*Q)``. Dropout (:class:`GroupDropout`, in every encoder layer and before the
    head) shares one mask across the ``G`` patchings of a series.

    With two levels it also holds ``coarse_layers`` (as many as ``layers``), ``coarse_norm``,
    a projection of the coarse patches' position features (``coarse_position_proj``) and
    ``coarse_step_readout``. A single-level backbone has none of these, so its state dict and
    its initial weights do not depend on the two-level option.

    Parameters
    ----------
    config
        The network's configuration: its backbone sizes, ``L``, ``H``, ``N`` (and ``N2``),
        ``Q``, the budget and the covariate widths.
    """

    def __init__(self, config: ReinPatchConfig) -> None:
        super().__init__()
        self.config = config
        sizes = config.backbone
        d = sizes.d_model
        self.n_patches = config.n_patches
        self.n_coarse_patches = config.n_coarse_patches
        # An at-most budget leaves token slots unused: a slot whose start is ``L`` holds an
        # empty patch, which attention masks and no step reads.
        self.variable_tokens = config.budget == "at_most"
        self.tokeniser = PatchTokeniser(d, sizes.resample_points)
        layer = (d, sizes.n_heads, sizes.ff_multiplier * d, sizes.dropout)
        self.layers = nn.ModuleList(EncoderLayer(*layer) for _ in range(sizes.n_layers))
        self.final_norm = nn.LayerNorm(d)
        # Before the head; it has no weights, so building it draws nothing and the weights a
        # seed gives stay the same.
        self.dropout = GroupDropout(sizes.dropout)
        if self.n_coarse_patches is not None:
            # Only at two levels: building a module draws its initial weights from the global
            # generator, so the single-level weights of a seed must not depend on these.
            self.coarse_layers = nn.ModuleList(EncoderLayer(*layer) for _ in range(sizes.n_layers))
            self.coarse_norm = nn.LayerNorm(d)
            # A mean of fine tokens blurs where the coarse patch lies and how long it is; its
            # own position features say it again.
            self.coarse_position_proj = nn.Linear(4 * PatchTokeniser.n_frequencies, d)
        width = config.step_width
        self.step_readout = StepReadout(d, width)
        if self.n_coarse_patches is not None:
            self.coarse_step_readout = StepReadout(d, width)
        self.skip_projection = nn.Linear(d, width)
        self.head = nn.Linear(config.input_length * width,
                              config.output_length * config.nr_params)
        self.covariates = None
        if config.uses_covariates:
            # Built last and only with covariates: the other weights a seed draws stay those
            # of a network without covariates.
            self.covariates = CovariateEmbedding(
                config.n_past_covariates, config.n_future_covariates,
                config.n_static_covariates, d, config.nr_params,
            )

    def local_features(self, x: Tensor) -> Tensor:
        """The tokeniser's per-step features ``(R, L, d)`` of ``x`` ``(R, L)``, shared by every
        patching of a series (token means and the per-step skip)."""
        return self.tokeniser.local_features(x)

    def skip_features(self, local: Tensor) -> Tensor:
        """The per-step skip ``(R, L, k)``: ``skip_projection(local_out(local))`` for
        ``local`` ``(R, L, d)`` (:meth:`PatchTokeniser.local_features`).

        The two linear maps compose into one ``(k, d)`` map, so the step costs ``L * d * k``
        instead of ``L * d * d``; gradients reach both maps' weights.
        """
        local_out, skip = self.tokeniser.local_out, self.skip_projection
        weight = skip.weight @ local_out.weight  # (k, d)
        bias = F.linear(local_out.bias, skip.weight, skip.bias)  # (k,)
        return F.linear(local, weight, bias)  # (R, L, k)

    def _coarse_tokens(self, fine: Tensor, x: Tensor, starts: Tensor,
                       coarse_starts: Tensor) -> Tensor:
        """Coarse tokens ``(R*G, N2, d)``: segment means of the encoded fine tokens.

        ``fine`` is ``(R*G, N1, d)``, ``starts`` ``(R, G, N1)``, ``coarse_starts``
        ``(R, G, N2)``.
        """
        rows, group, n_coarse = coarse_starts.shape
        token_starts = coarse_token_starts(starts, coarse_starts)  # (R, G, N2) in [0, N1)
        h = pool_tokens(fine, token_starts.reshape(rows * group, n_coarse))  # (R*G, N2, d)
        position = self.tokeniser.position_features(coarse_starts, x.shape[-1])  # (R,G,N2,4F)
        return h + self.coarse_position_proj(position.to(h.dtype)).reshape(h.shape)

    def forward(self, x: Tensor, starts: Tensor, local: Tensor | None = None,
                coarse_starts: Tensor | None = None,
                chunk_rows: int | None = None,
                covariates: Covariates | None = None) -> Tensor:
        """Normalised forecast of every patching.

        Large inputs on the CPU run in chunks of whole series (all ``G`` patchings of a series
        in the same chunk, so group dropout is unchanged) of at most :attr:`chunk_elements`
        elements in the widest activation; see :meth:`chunk_rows`. Every row is computed
        independently, so chunking gives the same forecasts (dropout masks are drawn from the
        same distribution, in a different order).

        Parameters
        ----------
        x
            ``(R, L)`` normalised series.
        starts
            ``(R, G, N)`` int64 sorted start positions.
        local
            ``(R, L, d)``: the tokeniser's local features of ``x`` if already computed.
        coarse_starts
            ``(R, G, N2)`` int64 sorted coarse starts, each one of ``starts`` (nested):
            required with two levels, refused with one.
        chunk_rows
            Series per chunk on the CPU; default :meth:`chunk_rows`.
        covariates
            The rows' covariates (:meth:`Covariates.rows`: ``past`` ``(R, L, Cp)``, ``future``
            ``(R, H, Cf)``, ``static`` ``(R, Cs)``); exactly the kinds the config names.

        Returns
        -------
        Tensor
            ``(R*G, H, Q)``.
        """
        two_levels = self.n_coarse_patches is not None
        if two_levels != (coarse_starts is not None):
            raise ReinPatchInputError(
                "This backbone has two levels (n_coarse_patches set): pass coarse_starts."
                if two_levels else
                "This backbone has one level (n_coarse_patches=None): coarse_starts must be None."
            )
        if self.covariates is not None:
            self.covariates.check(covariates)
        elif covariates is not None and any(
                value is not None for value in (covariates.past, covariates.future,
                                                covariates.static)):
            raise ReinPatchInputError(
                "This network was built without covariates: pass covariates=None, or build it "
                "with n_past_covariates / n_future_covariates / n_static_covariates."
            )
        given = covariates or Covariates()
        if chunk_rows is None:
            rows, group, _ = starts.shape
            chunk_rows = self.chunk_rows(rows, group, x.shape[-1], local is None)
        return map_row_chunks(self._forward, (x, starts, local, coarse_starts, given.past,
                                              given.future, given.static),
                              chunk_rows)  # (R*G, H, Q)

    #: Most elements (float32: 4 bytes each) of one activation tensor of a backbone pass
    #: before the rows are split into chunks (CPU only; see :mod:`~reinpatch_forecast.nn.chunking`
    #: for the page faults that larger tensors pay: with ``G = 8`` and ``L >= 384`` they doubled
    #: the cost of a training step). Chunks of 8 MiB stay in the heap and are reused.
    chunk_elements: int = 2**21

    def chunk_rows(self, rows: int, group: int, length: int, with_local: bool = True) -> int:
        """Series per chunk of a pass over ``rows`` series of ``group`` patchings each.

        The widest activations per series are the feed-forward layer's ``G * N * d_ff``, the
        step features ``G * L * k`` and, when the tokeniser computes them (``with_local``),
        the local features' ``L * d``.
        """
        config = self.config
        sizes = config.backbone
        n_tokens = max(self.n_patches, self.n_coarse_patches or 0)
        per_row = group * n_tokens * sizes.d_model * max(sizes.ff_multiplier, 1)
        per_row = max(per_row, group * length * config.step_width)
        if with_local:
            per_row = max(per_row, length * sizes.d_model)
        return rows_per_chunk(self.chunk_elements, per_row)

    def _step_features(self, tokens: Tensor, coarse: Tensor | None, starts: Tensor,
                       coarse_starts: Tensor | None, local: Tensor) -> Tensor:
        """Time-aligned features ``(R*G, L, k)`` of the encoded tokens.

        ``tokens`` ``(R*G, N, d)`` and ``coarse`` ``(R*G, N2, d)`` (two levels, else ``None``)
        are read onto the steps of their own patchings (``starts`` ``(R, G, N)``,
        ``coarse_starts`` ``(R, G, N2)``) and summed; ``local`` ``(R, L, d)`` adds the skip.
        """
        rows, group, n_patches = starts.shape
        length = self.config.input_length
        steps = self.step_readout(tokens, starts.reshape(rows * group, n_patches), length)
        if coarse is not None:
            steps = steps + self.coarse_step_readout(
                coarse, coarse_starts.reshape(rows * group, -1), length)  # (R*G, L, k)
        skip = self.skip_features(local)  # (R, L, k): the same for every patching
        return (steps.reshape(rows, group, length, -1) + skip.unsqueeze(1)).flatten(0, 1)

    def _forward(self, x: Tensor, starts: Tensor, local: Tensor | None,
                 coarse_starts: Tensor | None, past: Tensor | None = None,
                 future: Tensor | None = None, static: Tensor | None = None) -> Tensor:
        """:meth:`forward` on one chunk of series, ``(r*G, H, Q)``."""
        group = starts.shape[1]
        rows = Covariates(past=past, future=future, static=static)
        if local is None:
            local = self.local_features(x)  # (R, L, d), shared by the tokens and the skip
        h = self.tokeniser(x, starts, local)  # (R*G, N, d)
        unused = None
        if self.variable_tokens:
            unused = (starts >= x.shape[-1]).flatten(0, 1)  # (R*G, N): empty slots
        if self.covariates is not None:
            offsets = self.covariates.token_offsets(rows, starts)  # (R, G|1, N|1, d)
            if offsets is not None:
                h = (h.reshape(*starts.shape, -1) + offsets).flatten(0, 1)  # (R*G, N, d)
        for layer in self.layers:
            h = layer(h, group, unused)  # (R*G, N, d)
        coarse = None
        if coarse_starts is not None:
            # Pool the encoded (not the raw) fine tokens: each coarse token starts from what
            # its fine tokens learnt in context.
            coarse = self._coarse_tokens(h, x, starts, coarse_starts)  # (R*G, N2, d)
            for layer in self.coarse_layers:
                coarse = layer(coarse, group)  # (R*G, N2, d)
            coarse = self.coarse_norm(coarse)  # (R*G, N2, d)
        steps = self._step_features(self.final_norm(h), coarse, starts, coarse_starts, local)
        out = self.head(self.dropout(steps.flatten(1), group))  # (R*G, H*Q)
        out = out.reshape(-1, self.config.output_length, self.config.nr_params)  # (R*G, H, Q)
        if self.covariates is not None and self.covariates.n_future:
            horizon = self.covariates.horizon_offsets(rows)  # (R, H, Q)
            out = out + horizon.repeat_interleave(group, dim=0)  # (R*G, H, Q)
        return out
