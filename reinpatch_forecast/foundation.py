"""The foundation patcher: pretrain a standalone patcher, save it, load it, ship it.

A patcher is stored as a plain state (format name, version, a JSON-able config and a tensor
state dict), written with ``torch.save`` and read with ``torch.load(weights_only=True)``, so
loading never unpickles arbitrary objects.

:func:`pretrain_patcher` trains a patcher by GRPG over a corpus of univariate series with a
throwaway backbone, through the one training engine (:class:`~reinpatch_forecast.ReinPatchModel`
on a list of series). The package ships one such patcher
(:func:`pretrained_patcher_path`), used by ``ReinPatchModel(patcher="pretrained")``.
"""

from __future__ import annotations

import hashlib
import importlib.resources
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import torch

from .nn import DEFAULT_POLICY, LearnedPatcher

__all__ = ["PATCHER_FORMAT", "PATCHER_VERSION", "PRETRAINED_SHA256", "patcher_state",
           "patcher_from_state", "save_patcher", "load_patcher", "pretrained_patcher_path",
           "load_pretrained_patcher", "PretrainEpoch", "PretrainResult", "pretrain_patcher"]

#: SHA-256 of the shipped ``pretrained/patcher.pt`` (checked by the test suite).
PRETRAINED_SHA256 = "bbe2c992e8ee543299f28d3a6c2de51f2eb6e296dfcd1d0a2fe90bffdc70aff3"

PATCHER_FORMAT = "reinpatch-forecast/patcher"
#: Version 2: the policy-v2 patcher (its config names its policy). Version-1 files hold a
#: top-k policy with a uniform-prior bonus that no longer exists, so they are refused.
PATCHER_VERSION = 2


def patcher_state(patcher: LearnedPatcher) -> dict[str, Any]:
    """The plain state of a learned patcher (tensors and primitives only)."""
    if not isinstance(patcher, LearnedPatcher):
        raise TypeError(
            f"Only a LearnedPatcher can be saved or reused, got {type(patcher).__name__}."
        )
    return {
        "format": PATCHER_FORMAT,
        "version": PATCHER_VERSION,
        "config": patcher.config(),
        "state_dict": {k: v.detach().cpu().clone() for k, v in patcher.state_dict().items()},
    }


def patcher_from_state(state: dict[str, Any], source: str = "the patcher state") -> LearnedPatcher:
    """Rebuild a :class:`LearnedPatcher` from :func:`patcher_state`'s output.

    Raises
    ------
    ValueError
        If the state is not a patcher of a supported format and version, or its weights do not
        fit its config.
    """
    if not isinstance(state, dict) or state.get("format") != PATCHER_FORMAT:
        raise ValueError(
            f"{source} is not a reinpatch-forecast patcher (expected format "
            f"{PATCHER_FORMAT!r}). Save patchers with reinpatch_forecast.foundation.save_patcher."
        )
    if state.get("version") == 1:
        raise ValueError(
            f"{source} is a version-1 patcher (the first, top-k policy with a uniform prior), "
            f"which this version of reinpatch-forecast no longer runs: it reads version "
            f"{PATCHER_VERSION}. Pretrain a new patcher with "
            "reinpatch_forecast.foundation.pretrain_patcher (or `reinpatch-forecast "
            "pretrain-patcher`), or use the shipped one (patcher='pretrained')."
        )
    if state.get("version") != PATCHER_VERSION:
        raise ValueError(
            f"{source} has patcher format version {state.get('version')!r}; this version of "
            f"reinpatch-forecast reads version {PATCHER_VERSION}. Re-save it with a matching "
            "version of the package."
        )
    try:
        patcher = LearnedPatcher(**state["config"])
        patcher.load_state_dict(state["state_dict"])
    except (KeyError, TypeError, RuntimeError) as error:
        raise ValueError(f"{source} is damaged: its weights do not fit its config ({error}).")
    return patcher


def save_patcher(patcher: LearnedPatcher, path: str | os.PathLike) -> None:
    """Write a learned patcher to ``path``."""
    torch.save(patcher_state(patcher), path)


def load_patcher(path: str | os.PathLike) -> LearnedPatcher:
    """Read a patcher written by :func:`save_patcher`.

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    ValueError
        If the file is truncated, corrupted, or not a patcher of this format and version.
    """
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"No patcher file at {path!r}.")
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as error:  # torch raises several types for a bad file
        raise ValueError(
            f"Cannot read the patcher file {path!r}: it is truncated, corrupted or not a "
            f"patcher saved by reinpatch-forecast ({type(error).__name__}: {error})."
        ) from error
    return patcher_from_state(state, source=f"The file {path!r}")


def pretrained_patcher_path() -> Path:
    """Path of the foundation patcher shipped in the package (``pretrained/patcher.pt``)."""
    return Path(str(importlib.resources.files("reinpatch_forecast") / "pretrained" / "patcher.pt"))


def file_sha256(path: str | os.PathLike) -> str:
    """SHA-256 hex digest of a file."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def load_pretrained_patcher() -> LearnedPatcher:
    """The foundation patcher shipped in the package (trainable; freeze it to reuse it frozen).

    Raises
    ------
    ValueError
        If the shipped file does not match :data:`PRETRAINED_SHA256` (a damaged install).
    """
    path = pretrained_patcher_path()
    if not path.is_file():
        raise FileNotFoundError(
            f"The shipped foundation patcher is missing ({path}); reinstall reinpatch-forecast."
        )
    digest = file_sha256(path)
    if digest != PRETRAINED_SHA256:
        raise ValueError(
            f"The shipped foundation patcher {path} is damaged (SHA-256 {digest}, expected "
            f"{PRETRAINED_SHA256}); reinstall reinpatch-forecast."
        )
    return load_patcher(path)


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
                raise ValueError(
                    f"Corpus series {name!r} has {series.n_components} components and "
                    f"{series.n_samples} samples; the corpus takes univariate deterministic "
                    "series: split a multivariate series into its components."
                )
            values = series.values(copy=False)[:, 0]
        else:
            values = np.asarray(series, dtype=np.float64)
            if values.ndim == 2 and 1 in values.shape:
                values = values.reshape(-1)
            if values.ndim != 1:
                raise ValueError(
                    f"Corpus series {name!r} has shape {values.shape}; the corpus takes "
                    "univariate series (1-D): split a multivariate series into its columns."
                )
        if not np.isfinite(values).all():
            raise ValueError(
                f"Corpus series {name!r} has NaN or infinite values; fill them (e.g. "
                "pandas' interpolate) or leave the series out."
            )
        arrays[str(name)] = values.astype(np.float32)
    if not arrays:
        raise ValueError("The corpus is empty: pass at least one series.")
    return arrays


def pretrain_patcher(
    corpus: Mapping[str, Any] | Sequence[Any],
    input_chunk_length: int = 64,
    output_chunk_length: int = 16,
    compression_rate: float = 8,
    group_size: int = 4,
    n_epochs: int = 4,
    batch_size: int = 64,
    max_windows_per_series: int | None = 256,
    val_fraction: float = 0.2,
    d_model: int = 32,
    n_layers: int = 1,
    learning_rate: float = 1e-3,
    kl_coef: float = 0.1,
    hidden_size: int = 32,
    policy: str = DEFAULT_POLICY,
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
    n_epochs, batch_size, learning_rate, kl_coef
        Training settings (the patcher's learning rate is 3x ``learning_rate``).
    max_windows_per_series
        Most recent training windows used per series (``None``: all), so long series do not
        drown short ones.
    val_fraction
        Share of each series held out for validation.
    d_model, n_layers
        Size of the throwaway backbone.
    hidden_size
        Channels of the patcher's convolutions.
    policy
        The patcher's boundary policy (``"offset"``, ``"density"`` or ``"topk"``).
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

    from .darts import ReinPatchModel

    if not 0.0 < val_fraction < 1.0:
        raise ValueError(f"val_fraction must be in (0, 1), got {val_fraction}.")
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
        raise ValueError(
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

    trainer_kwargs = {"accelerator": "cpu", "enable_progress_bar": verbose, "logger": False,
                      "enable_model_summary": False, "enable_checkpointing": False}
    trainer_kwargs.update(pl_trainer_kwargs or {})
    trainer_kwargs["callbacks"] = [*trainer_kwargs.get("callbacks", []), _History()]
    with torch.random.fork_rng():
        torch.manual_seed(random_state)  # the patcher's initial weights follow the seed
        initial = LearnedPatcher(policy=policy, hidden_size=hidden_size)
    model = ReinPatchModel(
        input_chunk_length=input_chunk_length, output_chunk_length=output_chunk_length,
        compression_rate=compression_rate, patcher="learned", patcher_init=initial,
        group_size=group_size, kl_coef=kl_coef, d_model=d_model, n_layers=n_layers,
        n_heads=4, batch_size=batch_size, n_epochs=n_epochs,
        optimizer_kwargs={"lr": learning_rate}, random_state=random_state,
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
                    group_size=group_size, n_epochs=n_epochs, batch_size=batch_size,
                    max_windows_per_series=max_windows_per_series, val_fraction=val_fraction,
                    d_model=d_model, n_layers=n_layers, learning_rate=learning_rate,
                    kl_coef=kl_coef, hidden_size=hidden_size, policy=policy,
                    random_state=random_state)
    return PretrainResult(patcher=patcher, history=history, n_series=len(arrays),
                          n_train_windows=n_windows, settings=settings)
