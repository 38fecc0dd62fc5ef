"""Pretraining a foundation patcher: a standalone patcher trained on many series.

:func:`pretrain_patcher` trains a patcher by GRPG over a corpus of univariate series with a
throwaway backbone, through the one training engine (:class:`~reinpatch_forecast.ReinPatchModel`
on a list of series); :func:`~reinpatch_forecast.patcher_io.save_patcher` writes it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd
import torch

from ..checks import check_finite_values, check_numeric_columns
from ..errors import ReinPatchInputError
from .._lightning import quiet_trainer_kwargs
from ..nn import LearnedPatcher
from ..nn.learned_patcher import DEFAULT_PATCHER_SIZES
from ..options import PRETRAINING, option_default
from ..patcher_io import patcher_from_state, patcher_state

__all__ = ["PretrainEpoch", "PretrainResult", "pretrain_patcher"]


@dataclass
class PretrainEpoch:
    """Scores of one pretraining epoch.

    Attributes
    ----------
    epoch
        0-based epoch.
    reward
        Mean GRPG reward (minus the training loss of a draw) over the epoch.
    val_mse
        MSE of the throwaway backbone on the held-out tails, with the patcher's greedy boundaries.
    """

    epoch: int
    reward: float
    val_mse: float


@dataclass
class PretrainResult:
    """Output of :func:`pretrain_patcher`.

    Attributes
    ----------
    patcher
        The pretrained patcher (trainable; :func:`save_patcher` writes it).
    history
        One :class:`PretrainEpoch` per epoch.
    n_series
        Series in the corpus.
    n_train_windows
        Training windows drawn per epoch (after ``max_windows_per_series``).
    settings
        The arguments of the run, for the record.
    """

    patcher: LearnedPatcher
    history: list[PretrainEpoch]
    n_series: int
    n_train_windows: int
    settings: dict[str, Any] = field(default_factory=dict)


def _corpus_arrays(corpus: Mapping[str, Any] | Sequence[Any]) -> dict[str, np.ndarray]:
    """Named 1-D float arrays from a corpus of darts/pandas/numpy univariate series."""
    from darts import TimeSeries

    items = corpus.items() if isinstance(corpus, Mapping) else enumerate(corpus)
    arrays = {}
    for name, series in items:
        if isinstance(series, TimeSeries):
            if series.n_components != 1 or series.n_samples != 1:
                raise ReinPatchInputError(
                    f"Corpus series {name!r} has {series.n_components} components and "
                    f"{series.n_samples} samples; the corpus takes univariate deterministic "
                    "series: split a multivariate series into its components."
                )
            values = series.values(copy=False)[:, 0]
        else:
            raw = np.asarray(series)
            if raw.dtype.kind not in "biuf":  # not numbers or booleans: name the series
                check_numeric_columns(pd.DataFrame({str(name): raw.reshape(-1)}).infer_objects(),
                                      "The corpus", fix="convert the series to numbers or leave "
                                      "it out.")
            values = raw.astype(np.float64)
            if values.ndim == 2 and 1 in values.shape:
                values = values.reshape(-1)
            if values.ndim != 1:
                raise ReinPatchInputError(
                    f"Corpus series {name!r} has shape {values.shape}; the corpus takes "
                    "univariate series (1-D): split a multivariate series into its columns."
                )
        # the corpus is standardised in float32, so the limit of the faces applies
        check_finite_values(values, f"Corpus series {name!r}", getattr(series, "index", None)
                            if not isinstance(series, TimeSeries) else series.time_index,
                            fix="Fill them (e.g. pandas' interpolate) or leave the series out.")
        arrays[str(name)] = values.astype(np.float32)
    if not arrays:
        raise ReinPatchInputError("The corpus is empty: pass at least one series.")
    return arrays


def pretrain_patcher(
    corpus: Mapping[str, Any] | Sequence[Any],
    input_chunk_length: int = PRETRAINING.input_chunk_length,
    output_chunk_length: int = PRETRAINING.output_chunk_length,
    compression_rate: float = option_default("compression_rate"),
    group_size: int = option_default("group_size"),
    scored_share: float = PRETRAINING.scored_share,
    n_epochs: int = PRETRAINING.n_epochs,
    batch_size: int = PRETRAINING.batch_size,
    max_windows_per_series: int | None = PRETRAINING.max_windows_per_series,
    val_fraction: float = 0.2,
    d_model: int = PRETRAINING.d_model,
    n_layers: int = PRETRAINING.n_layers,
    learning_rate: float = 1e-3,
    kl_coef: float = option_default("kl_coef"),
    hidden_size: int = DEFAULT_PATCHER_SIZES["hidden_size"],
    decode_margin: float = PRETRAINING.decode_margin,
    random_state: int = 0,
    verbose: bool = False,
    pl_trainer_kwargs: dict | None = None,
) -> PretrainResult:
    """Pretrain a standalone patcher by GRPG over a corpus of univariate series.

    Every series is split in time: its last ``val_fraction`` (at least ``output_chunk_length``
    steps) is held out for validation, with the look-back overlap; each series is standardised
    with the mean and standard deviation of its training part. A small throwaway backbone is
    trained jointly with the patcher through :class:`~reinpatch_forecast.ReinPatchModel` on the
    list of series, then discarded. The patcher has no parameter tied to the lookback or the
    compression rate, so the result works at any of them.

    Parameters
    ----------
    corpus
        Univariate series of any lengths: a mapping of names to series, or a sequence; each a
        darts ``TimeSeries``, a pandas ``Series`` or a 1-D array.
    input_chunk_length, output_chunk_length, compression_rate, group_size
        The pretraining task (lookback, horizon, average patch length, GRPG group size).
    scored_share
        Share of each batch's windows whose group of patchings is scored by GRPG (the model
        option of that name, at the shipped patcher's 0.25 here; a larger share gives the
        patcher a less noisy gradient).
    n_epochs, batch_size, learning_rate, kl_coef
        Training settings (the patcher's learning rate is ``PRETRAINING.patcher_lr_factor``
        times ``learning_rate``, the shipped patcher's).
    max_windows_per_series
        Most recent training windows used per series (``None``: all), so long series do not
        drown short ones.
    val_fraction
        Share of each series held out for validation.
    d_model, n_layers
        Size of the throwaway backbone.
    hidden_size
        Channels of the patcher's convolutions.
    decode_margin
        The patcher's decode margin, in units of its exploration scale
        (:class:`~reinpatch_forecast.nn.LearnedPatcher`): its decode keeps the uniform grid
        wherever its scores stay within the margin. The pretraining decodes with it too, so
        the group's rewards are measured against the patching the patcher will predict with.
    random_state
        Seed: the same seed and corpus give the same patcher.
    verbose
        Show Lightning's progress bar.
    pl_trainer_kwargs
        Extra arguments of the Lightning trainer (CPU, quiet by default).

    Returns
    -------
    PretrainResult

    Raises
    ------
    ValueError
        If the corpus is empty, a series is not univariate, has NaN/inf values, or is too short
        for one training and one validation window (the message lists them).
    """
    from darts import TimeSeries
    from pytorch_lightning.callbacks import Callback

    from ..darts import ReinPatchModel

    if not 0.0 < val_fraction < 1.0:
        raise ReinPatchInputError(f"val_fraction must be in (0, 1), got {val_fraction}.")
    arrays = _corpus_arrays(corpus)
    window = input_chunk_length + output_chunk_length
    train, val, too_short = [], [], []
    for name, values in arrays.items():
        n_val = max(output_chunk_length, int(round(val_fraction * len(values))))
        if len(values) - n_val < window:
            too_short.append(f"{name} ({len(values)} steps)")
            continue
        # Standardised by the training part, so the backbone's loss weighs every series alike
        # (the raw scales of a corpus span orders of magnitude).
        head = values[:-n_val]
        scale = head.std() if head.std() > 0 else 1.0
        values = (values - head.mean()) / scale
        train.append(TimeSeries.from_values(values[:-n_val]))
        val.append(TimeSeries.from_values(values[-(n_val + input_chunk_length):]))
    if too_short:
        need = window + output_chunk_length
        raise ReinPatchInputError(
            f"{len(too_short)} corpus series are too short for a training window "
            f"(input_chunk_length + output_chunk_length = {window}) plus a held-out tail of "
            f"val_fraction={val_fraction} (at least {output_chunk_length} steps), i.e. about "
            f"{need}+ steps: {', '.join(too_short[:10])}{' ...' if len(too_short) > 10 else ''}. "
            "Leave them out or use a shorter input_chunk_length."
        )

    history: list[PretrainEpoch] = []

    class _History(Callback):
        # Runs after validation, so the epoch's val_loss (MSE) is in callback_metrics.
        def on_train_epoch_end(self, trainer, pl_module) -> None:
            metrics = trainer.callback_metrics
            history.append(PretrainEpoch(
                epoch=int(trainer.current_epoch),
                reward=float(metrics["train_reward"]),
                val_mse=float(metrics["val_loss"]),
            ))

    trainer_kwargs = quiet_trainer_kwargs(verbose, enable_checkpointing=False,
                                          **(pl_trainer_kwargs or {}))
    trainer_kwargs["callbacks"] = [*trainer_kwargs.get("callbacks", []), _History()]
    with torch.random.fork_rng():
        torch.manual_seed(random_state)  # the patcher's initial weights follow the seed
        initial = LearnedPatcher(hidden_size=hidden_size, decode_margin=decode_margin)
    model = ReinPatchModel(
        input_chunk_length=input_chunk_length, output_chunk_length=output_chunk_length,
        compression_rate=compression_rate, patcher="learned", patcher_init=initial,
        group_size=group_size, scored_share=scored_share, kl_coef=kl_coef, d_model=d_model,
        n_layers=n_layers,
        dropout=PRETRAINING.dropout, batch_size=batch_size, n_epochs=n_epochs,
        optimizer_kwargs={"lr": learning_rate},
        patcher_lr=PRETRAINING.patcher_lr_factor * learning_rate, ema_decay=None,
        random_state=random_state,
        pl_trainer_kwargs=trainer_kwargs,
    )
    model.fit(train, val_series=val, max_samples_per_ts=max_windows_per_series,
              verbose=verbose)
    patcher = patcher_from_state(patcher_state(model.model.network.patcher))
    n_windows = sum(
        min(len(s) - window + 1, max_windows_per_series or len(s)) for s in train
    )
    settings = dict(input_chunk_length=input_chunk_length,
                    output_chunk_length=output_chunk_length, compression_rate=compression_rate,
                    group_size=group_size, scored_share=scored_share, n_epochs=n_epochs,
                    batch_size=batch_size,
                    max_windows_per_series=max_windows_per_series, val_fraction=val_fraction,
                    d_model=d_model, n_layers=n_layers, learning_rate=learning_rate,
                    kl_coef=kl_coef, hidden_size=hidden_size, decode_margin=decode_margin,
                    random_state=random_state)
    return PretrainResult(patcher=patcher, history=history, n_series=len(arrays),
                          n_train_windows=n_windows, settings=settings)
