"""Event-rich benchmark: ReinPatch on electricity prices and demand, with and without their
covariates, beside tuned uniform patches, untrained baselines and darts peers.

Two datasets of ``reinpatch_forecast.data.EVENT_DATASETS`` whose signal comes in local events
(price spikes, demand peaks, holidays), where learned patch boundaries should matter most:

- ``EPF_FR_BE``: targets ``BE_price`` and ``FR_price`` (EUR/MWh), H = 24, lookback 168;
  covariates: the day-ahead generation and load forecasts (``gen_forecast``,
  ``system_load``) as future covariates.
- ``vic_elec``: target ``demand`` (MWh), H = 48 and 336, lookback 336; covariates: the
  temperature as a past covariate, the holiday flag and the local calendar (Melbourne's hour
  of day, day of week and month, encoded as ``covariates.py`` does: each scaled to [0, 1]) as
  future covariates. The file's dates are UTC; the calendar reads them on Melbourne's clock.

Both are split by the 70/10/20 rule of ``reinpatch_forecast.data.split_borders``; the targets
and the covariates are each standard-scaled with statistics of the training rows only
(``prepare_ltsf``). Two settings: ``target`` (the targets alone) and ``covariates`` (plus the
covariates above). Every trained model is fitted and scored as in ``covariates.py``
(``covariates.run_one``: ltsf.py's model builder and budget, darts ``fit`` / ``predict`` with the
covariates, early stopping on validation MSE; ``_protocol.evaluate_windows`` over every
stride-1 validation and test window). Rows: ReinPatch with the learned patcher (the default
policy) at R = 8 and tuned over R in {4, 8, 16, 24} on validation MSE (``learned_tuned``),
uniform patches at R = 8 and tuned the same way, on ltsf.py's default backbone; the untrained
NaiveSeasonal (K = one day: 24 steps for EPF, 48 for vic_elec) and Repeat (last value);
darts' DLinear, NLinear, TSMixer (ltsf.py's peers) and TiDE (covariates.py's), each with its
learning rate picked on validation MSE from ltsf.py's ``PEER_LRS``, with the same covariates.

The budget is ltsf.py's (``--epochs``, ...), but the number of (most recent) training windows
is the dataset's own (``TRAIN_WINDOWS``): 2048 for EPF_FR_BE (85 days), 8192 for vic_elec
(about 170 days; ltsf.py's 2048 would be 43 days, all in the southern summer, so that the test
months' calendar and temperatures lie outside what a model saw). ``--max-train-windows N``
sets one number for every dataset (``0``: every window, for vic_elec about 4.5 times 8192).
Runs of the full protocol (``--epochs 10 --patience 3 --max-train-windows 0``) are reported
in a section of their own, beside the same rows under the reduced budget.

Scores: MSE and MAE on the scaled data, and the MAE in the original unit (forecast and truth
mapped back through the train-fitted scaler, per target column, averaged over columns and
windows). Every finished run is appended to ``benchmarks/results/events_runs.jsonl`` (keyed
like ltsf.py's ``RunSpec``; a stopped run resumes, ``--shard i/n`` shares the work between
processes); ``events.md`` and ``events.csv`` are rebuilt from it after every run.

Examples
--------
python benchmarks/events.py                                     # everything, seeds 0 1 2
python benchmarks/events.py --datasets EPF_FR_BE --seeds 0      # EPF, H = 24, one seed
python benchmarks/events.py --datasets vic_elec --horizons 48 --settings covariates \\
    --models learned uniform tide
python benchmarks/events.py --shard 0/2                         # and --shard 1/2 beside it
python benchmarks/events.py --datasets EPF_FR_BE --settings target --models learned uniform \\
    dlinear --seeds 0 --epochs 10 --patience 3 --max-train-windows 0  # full protocol
python benchmarks/events.py --report-only
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, NamedTuple, Sequence

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (RESULTS, format_mean_std, git_commit, load_jsonl, set_threads,  # noqa: E402
                     shard, utc_now, write_csv, write_markdown)
from _protocol import BASELINES  # noqa: E402

import covariates  # noqa: E402
import ltsf  # noqa: E402

CACHE_NAME = "events_runs.jsonl"
DATASETS = ("EPF_FR_BE", "vic_elec")
HORIZONS = {"EPF_FR_BE": (24,), "vic_elec": (48, 336)}
LOOKBACKS = {"EPF_FR_BE": 168, "vic_elec": 336}
#: Most recent training windows a trained run sees (the reduced budget), per dataset.
TRAIN_WINDOWS = {"EPF_FR_BE": 2048, "vic_elec": 8192}
#: NaiveSeasonal's period K: one day of rows.
SEASONS = {"EPF_FR_BE": 24, "vic_elec": 48}
#: Datasets whose covariates include the calendar, and the zone of its clock (the file's dates
#: are naive UTC; see ``reinpatch_forecast.data.EVENT_DATASETS``).
CALENDAR_ZONES = {"vic_elec": "Australia/Melbourne"}
UNITS = {"EPF_FR_BE": "EUR/MWh", "vic_elec": "MWh"}
SETTINGS = ("target", "covariates")
SETTING_NAMES = {"target": "target only", "covariates": "+ covariates"}
#: ``learned``: R = 8; ``learned_tuned``: R in ltsf.py's ``UNIFORM_SIZES`` (the tuned row);
#: ``uniform``: R in ``UNIFORM_SIZES`` (the R = 8 and the tuned rows).
MODELS = ("learned", "learned_tuned", "uniform", "naive", "repeat", "dlinear", "nlinear",
          "tsmixer", "tide")
DARTS_PEERS = ltsf.PEERS + ("tide",)
#: The rows of the at-a-glance tables, by ``ltsf.glance_name`` (TiDE: ``tide``), and their names.
GLANCE = {"learned": "ReinPatch learned (R=8)", "learned tuned": "ReinPatch learned tuned",
          "uniform R=8": "ReinPatch uniform (R=8)", "uniform tuned": "ReinPatch uniform tuned",
          "dlinear": "DLinear", "nlinear": "NLinear", "tsmixer": "TSMixer", "tide": "TiDE",
          "naive": "NaiveSeasonal", "repeat": "Repeat (last value)"}
#: Target c: the learned patcher's margin below uniform R = 8, and the seeds it is judged on.
BOUNDARY_MARGIN = 0.03
SEEDS_NEEDED = 3
#: The code a run's commit stamp answers for (uncommitted changes to it are named).
CODE_PATHS = covariates.CODE_PATHS + ("benchmarks/events.py",)


# -- data --------------------------------------------------------------------------------------


def event_roles(dataset: str):
    """The column roles (``EventDataset``) of one of :data:`DATASETS`; ``ValueError`` otherwise."""
    from reinpatch_forecast.data import EVENT_DATASETS

    if dataset not in DATASETS:
        raise ValueError(f"unknown event dataset {dataset!r}: use one of {list(DATASETS)}")
    return EVENT_DATASETS[dataset]


@dataclass(frozen=True)
class EventData:
    """The scaled targets of each split and the scaled covariates over all rows.

    ``covariates.run_one`` and ``covariates.score`` read it as they read their
    ``CovariateData`` (``target``, ``array``, ``covariates``).

    Attributes
    ----------
    dataset
        One of :data:`DATASETS`.
    splits
        The targets' ``LTSFSplits`` (train-only scaler: ``mean``, ``std``,
        ``inverse_transform``).
    covariate_splits
        The covariate columns' ``LTSFSplits``, scaled by their own train-only scaler.
    target
        ``{"train" | "val" | "test": TimeSeries}``, time-indexed; val and test include their
        lookback rows.
    past, future
        The past and the future covariates over every row of the splits (``None``: none).
    """

    dataset: str
    splits: Any
    covariate_splits: Any
    target: dict
    past: Any
    future: Any

    def array(self, split: str) -> np.ndarray:
        """The targets of ``split`` as ``(T, C)`` float32 (what ``evaluate_windows`` scores)."""
        return self.target[split].values(copy=False)

    def covariates(self, setting: str) -> dict[str, Any]:
        """The ``past_covariates`` / ``future_covariates`` of a setting (darts' names)."""
        if setting not in SETTINGS:
            raise ValueError(f"unknown setting {setting!r}: use one of {list(SETTINGS)}")
        if setting == "target":
            return {}
        found = {"past_covariates": self.past, "future_covariates": self.future}
        return {name: value for name, value in found.items() if value is not None}


def event_data(dataset: str, lookback: int, horizon: int, data_dir: str) -> EventData:
    """The targets (ltsf.py's ``load_splits``) and the covariates of ``dataset`` from
    ``data_dir``, each scaled with statistics of the training rows only."""
    from reinpatch_forecast.data import load_ltsf_frame, prepare_ltsf

    roles = event_roles(dataset)
    splits = ltsf.load_splits(dataset, lookback, horizon, data_dir)
    frame = load_ltsf_frame(dataset, data_dir=data_dir)
    covariate_splits = prepare_ltsf(frame, dataset, lookback, horizon,
                                    target_columns=roles.covariates)
    rows, index = covariates.split_rows(covariate_splits)
    columns = list(covariate_splits.columns)

    def columns_of(names: Sequence[str]):
        if not names:
            return None
        return covariates.time_series(rows[:, [columns.index(c) for c in names]], index, names,
                                      index.freq)

    future = columns_of(roles.future_covariates)
    if dataset in CALENDAR_ZONES:
        future = future.stack(covariates.calendar_covariates(index, CALENDAR_ZONES[dataset]))
    return EventData(
        dataset=dataset, splits=splits, covariate_splits=covariate_splits,
        target={name: covariates.time_series(splits.split(name), splits.dates[name],
                                             splits.columns, index.freq)
                for name in ("train", "val", "test")},
        past=columns_of(roles.past_covariates), future=future)


def original_scale_mae(mae_per_channel: Sequence[float], std: Sequence[float]) -> float:
    """The MAE in the data's own unit, averaged over the target columns.

    The scaler maps a value ``v`` of column ``c`` to ``(v - mean_c) / std_c``, so forecast and
    truth mapped back differ by ``std_c`` times their scaled difference: column ``c``'s MAE in
    its unit is ``std_c`` times its scaled MAE (``evaluate_windows``' ``mae_per_channel``).

    Parameters
    ----------
    mae_per_channel
        The scaled MAE of each target column, ``(C,)``.
    std
        The train-fitted scaler's standard deviation of each column, ``(C,)``.

    Returns
    -------
    float
        ``mean_c(std_c * mae_c)``.
    """
    mae, std = np.asarray(mae_per_channel, dtype=np.float64), np.asarray(std, dtype=np.float64)
    if mae.shape != std.shape:
        raise ValueError(f"{mae.shape[0]} channel MAEs for a scaler of {std.shape[0]} columns")
    return float(np.mean(mae * std))


# -- runs --------------------------------------------------------------------------------------


def setting_params(dataset: str, setting: str) -> dict[str, Any]:
    """The params a setting adds to a run's ``RunSpec`` (part of its key): the setting and,
    with covariates, their columns by role and the calendar's encoding and zone."""
    roles = event_roles(dataset)
    if setting not in SETTINGS:
        raise ValueError(f"unknown setting {setting!r}: use one of {list(SETTINGS)}")
    params: dict[str, Any] = {"covariates": setting}
    if setting == "covariates":
        params["future"] = ",".join(roles.future_covariates)
        if roles.past_covariates:
            params["past"] = ",".join(roles.past_covariates)
        if dataset in CALENDAR_ZONES:
            params["calendar"] = f"{covariates.CALENDAR_KEY}@{CALENDAR_ZONES[dataset]}"
    return params


def make_plan(datasets: Sequence[str], horizons_of: dict[str, Sequence[int]],
              settings: Sequence[str], models: Sequence[str], training: dict[str, Any],
              seeds: Sequence[int], lookbacks: dict[str, int] | None = None,
              backbone: str = ltsf.DEFAULT_BACKBONE,
              windows_of: dict[str, int | None] | None = None) -> list[ltsf.RunSpec]:
    """Every run, without repeats: the untrained baselines once per cell, then seed by seed
    (the first seed of every cell first) each cell, setting and model in the given order.

    The trained runs are ltsf.py's (``ltsf.plan``: learned with the default policy, uniform
    at every R of ``UNIFORM_SIZES``, the peers at every rate of ``PEER_LRS``, ReinPatch on
    ``backbone``) and covariates.py's TiDE runs, with :func:`setting_params` in their params.
    ``windows_of`` gives a dataset's own ``max_train_windows`` (default: ``training``'s).
    """
    lookbacks = {**LOOKBACKS, **(lookbacks or {})}
    unknown = sorted(set(models) - set(MODELS))
    if unknown:
        raise ValueError(f"unknown model(s) {unknown}: use some of {list(MODELS)}")
    specs = []
    for dataset in datasets:
        event_roles(dataset)
        for horizon in horizons_of[dataset]:
            if "naive" in models:
                specs.append(ltsf.RunSpec(dataset, horizon, "naive", {"K": SEASONS[dataset]},
                                          lookbacks[dataset], {}))
            if "repeat" in models:
                specs.append(ltsf.RunSpec(dataset, horizon, "repeat", {}, lookbacks[dataset],
                                          {}))
    for seed in seeds:
        for dataset in datasets:
            seeded = {**dataset_training(training, dataset, windows_of), "seed": seed}
            lookback = lookbacks[dataset]
            for horizon in horizons_of[dataset]:
                for setting in settings:
                    extra = setting_params(dataset, setting)
                    for model in models:
                        if model in BASELINES:
                            continue
                        if model == "tide":
                            found = covariates.tide_runs(dataset, horizon, lookback, seeded)
                        else:
                            tuned = model == "learned_tuned"
                            found = ltsf.plan(
                                [dataset], [horizon], ["learned" if tuned else model],
                                lookback, seeded, seeds=[seed],
                                learned_sizes=ltsf.UNIFORM_SIZES if tuned else (8,),
                                backbone=backbone)
                        specs += [replace(s, params={**s.params, **extra}) for s in found]
    return list({spec.key: spec for spec in specs}.values())  # learned R=8 may come twice


def run_one(spec: ltsf.RunSpec, data: EventData, out_dir: Path, progress: bool = False,
            commit: str | None = None) -> dict:
    """``covariates.run_one`` of ``spec`` on ``data``, with the test MAE in the original unit."""
    record = covariates.run_one(spec, data, out_dir, progress,
                                commit=commit or git_commit(CODE_PATHS))
    record["test_mae_original"] = original_scale_mae(record["test_mae_per_channel"],
                                                     data.splits.std)
    record["unit"] = UNITS[spec.dataset]
    return record


# -- report ------------------------------------------------------------------------------------


def _aggregated_rows(records: list[dict]) -> list[dict]:
    """``ltsf.rows_for_report`` of ``records`` (ltsf.py's families and the baselines): seeds
    averaged, per-size and tuned rows, each peer at the rate picked on validation; with the
    original-scale MAE averaged the same way."""
    if not records:
        return []
    rows = ltsf.rows_for_report({r["key"]: r for r in records})
    # The same call with the original-scale MAE in the test MAE's place gives its mean over
    # the same seeds for each row: the choices are made on validation MSE, so the rows match.
    original = ltsf.rows_for_report({r["key"]: {**r, "test_mae": r.get("test_mae_original")}
                                     for r in records})
    if [r["model"] for r in rows] != [r["model"] for r in original]:
        raise RuntimeError("the rows of the original-scale MAE do not match the report's")
    for row, twin in zip(rows, original):
        row["test_mae_original"] = twin["test_mae"]
    return rows


def _tide_rows(records: list[dict]) -> list[dict]:
    """TiDE's row per (dataset, horizon): seeds averaged (``ltsf._aggregate``), at the learning
    rate picked on validation as ``ltsf.rows_for_report`` picks its peers'
    (``ltsf.pick_on_validation``)."""
    groups: dict[tuple, dict[float, list[dict]]] = {}
    for record in records:
        spec = record["spec"]
        groups.setdefault((spec["dataset"], spec["horizon"]), {}).setdefault(
            spec["params"]["lr"], []).append(record)
    rows = []
    for (dataset, horizon), by_lr in sorted(groups.items()):
        tried = sorted(by_lr.items())
        lr, group = tried[ltsf.pick_on_validation([group for _, group in tried])]
        row = dict(dataset=dataset, horizon=horizon, family="tide", v1=False,
                   **ltsf._aggregate(group))
        row["test_mae_original"] = float(np.mean([r["test_mae_original"] for r in group]))
        row["model"] = f"tide (lr={lr:g}" + ("" if len(tried) == len(ltsf.PEER_LRS)
                                             else ", untuned") + ")"
        rows.append(row)
    return rows


def glance_name(row: dict) -> str:
    """The at-a-glance name of a row (``ltsf.glance_name``; TiDE: ``tide``)."""
    return "tide" if row["family"] == "tide" else ltsf.glance_name(row)


def dataset_training(training: dict[str, Any], dataset: str,
                     windows_of: dict[str, int | None] | None) -> dict[str, Any]:
    """``training`` with ``dataset``'s own ``max_train_windows`` when ``windows_of`` has one."""
    if windows_of and dataset in windows_of:
        return {**training, "max_train_windows": windows_of[dataset]}
    return training


def rows_for_report(runs: list[dict], training: dict[str, Any] | None,
                    windows_of: dict[str, int | None] | None = None) -> list[dict]:
    """One row per (dataset, horizon, setting, model): the runs of the training settings
    ``training`` (a dataset's own ``max_train_windows`` from ``windows_of``; any seed; all
    runs when ``training`` is ``None``) and the untrained baselines, which take no covariates:
    they stand under ``target`` and under any other setting with runs."""
    def wanted(run: dict) -> bool:
        if training is None or run["spec"]["model"] in BASELINES:
            return True
        own = dataset_training(training, run["spec"]["dataset"], windows_of)
        return ltsf.protocol(run["spec"]["settings"]) == ltsf.protocol(own)

    kept = [r for r in runs if wanted(r)]
    rows = []
    for setting in SETTINGS:
        here = [r for r in kept if r["spec"]["model"] in BASELINES
                or r["spec"]["params"].get("covariates") == setting]
        if setting != "target" and all(r["spec"]["model"] in BASELINES for r in here):
            continue  # the baselines stand under a setting with runs of its own
        found = (_aggregated_rows([r for r in here if r["spec"]["model"] != "tide"])
                 + _tide_rows([r for r in here if r["spec"]["model"] == "tide"]))
        rows += [dict(row, setting=setting, name=glance_name(row)) for row in found]
    order = list(GLANCE)
    return sorted(rows, key=lambda r: (r["dataset"], r["horizon"], SETTINGS.index(r["setting"]),
                                       order.index(r["name"]) if r["name"] in order else 99,
                                       r["model"]))


class Score(NamedTuple):
    """A row's test MSE over seeds: mean, standard deviation and number of seeds."""

    mean: float
    std: float
    n: int


def cells(rows: list[dict], name: str, setting: str) -> dict[tuple[str, int], Score]:
    """The test MSE of the rows of ``name`` (:func:`glance_name`) in ``setting``, per
    (dataset, horizon)."""
    return {(r["dataset"], r["horizon"]): Score(r["test_mse"], r["test_mse_std"] or 0.0,
                                                r["n_seeds"])
            for r in rows if r["setting"] == setting and r["name"] == name}


def _worst(verdicts: list[str]) -> str:
    """``NOT met`` if any part is, else ``not met yet`` if any part is, else ``met``."""
    for verdict in ("NOT met", "not met yet"):
        if verdict in verdicts:
            return verdict
    return "met"


def _boundary_cell(ours: Score | None, theirs: Score | None, margin: float,
                   seeds: int) -> tuple[str, str]:
    """Verdict and detail of target c in one cell."""
    if ours is None or theirs is None:
        return "not met yet", "missing"
    change = ours.mean / theirs.mean - 1
    spread = max(ours.std, theirs.std)
    passes = change <= -margin and theirs.mean - ours.mean > spread
    detail = (f"{ours.mean:.4f} vs {theirs.mean:.4f}, {100 * change:+.1f} %, std "
              f"{spread:.4f}, {min(ours.n, theirs.n)} seed(s)")
    if min(ours.n, theirs.n) < seeds:
        return "not met yet", detail
    return ("met" if passes else "NOT met"), detail


def verdict_boundaries(learned: dict[tuple[str, int], Score],
                       uniform8: dict[tuple[str, int], Score],
                       horizons_of: dict[str, Sequence[int]], setting: str = "target only",
                       margin: float = BOUNDARY_MARGIN, seeds: int = SEEDS_NEEDED) -> str:
    """Target c (where boundaries matter), per dataset: learned R=8 below uniform R=8 by at
    least ``margin`` (relative) and by more than one standard deviation over seeds (the larger
    of the two rows'), on every horizon of the dataset, each row the mean of ``seeds`` seeds.

    A dataset is ``NOT met`` once one of its cells with every seed fails, ``not met yet``
    while a cell is missing or short of seeds, else ``met``.
    """
    parts = []
    for dataset, horizons in horizons_of.items():
        judged = {h: _boundary_cell(learned.get((dataset, h)), uniform8.get((dataset, h)),
                                    margin, seeds) for h in horizons}
        detail = "; ".join(f"H={h}: {text}" for h, (_, text) in judged.items())
        parts.append(f"{dataset} **{_worst([v for v, _ in judged.values()])}** ({detail})")
    return (f"- c. where boundaries matter ({setting}): learned (R=8) below uniform R=8 by "
            f">= {100 * margin:g} % and by more than one seed std, mean of {seeds} seeds, on "
            f"every horizon: " + "; ".join(parts) + ".")


def verdict_covariates(learned: dict[tuple[str, int], Score],
                       peers: dict[str, dict[tuple[str, int], Score]],
                       horizons_of: dict[str, Sequence[int]],
                       uniform_tuned: dict[tuple[str, int], Score] | None = None,
                       seeds: int = SEEDS_NEEDED) -> str:
    """Target d (with covariates): ReinPatch learned (R=8) with covariates at or below the best
    darts peer (``peers``: name -> cells, every one expected) with the same covariates, on
    every horizon of every dataset, means of ``seeds`` seeds. ``uniform_tuned`` is shown beside
    it, not judged.

    ``NOT met`` once a peer with every seed is below learned with every seed in some cell;
    ``not met yet`` while a row is missing or short of seeds; else ``met``.
    """
    verdicts, parts = [], []
    for dataset, horizons in horizons_of.items():
        for horizon in horizons:
            cell = (dataset, horizon)
            ours = learned.get(cell)
            present = {name: found[cell] for name, found in peers.items() if cell in found}
            if ours is None or not present:
                verdicts.append("not met yet")
                parts.append(f"{dataset} H={horizon}: missing")
                continue
            best = min(present, key=lambda name: present[name].mean)
            complete = lambda s: s.n >= seeds  # noqa: E731
            beaten = [n for n, s in present.items()
                      if s.mean < ours.mean and complete(s) and complete(ours)]
            if beaten:
                verdict = "NOT met"
            elif len(present) < len(peers) or not complete(ours) \
                    or not all(complete(s) for s in present.values()):
                verdict = "not met yet"
            else:
                verdict = "met"
            verdicts.append(verdict)
            uniform = (uniform_tuned or {}).get(cell)
            shown = "" if uniform is None else f", uniform tuned {uniform.mean:.4f}"
            missing = sorted(set(peers) - set(present))
            parts.append(f"{dataset} H={horizon} {verdict}: learned {ours.mean:.4f} vs best peer "
                         f"{best} {present[best].mean:.4f}{shown}"
                         + (f" (no run yet: {', '.join(missing)})" if missing else ""))
    return ("- d. with covariates: ReinPatch learned (R=8) with covariates at or below the best "
            "darts peer with the same covariates on both event datasets: "
            f"**{_worst(verdicts) if verdicts else 'not met yet'}** — " + "; ".join(parts) + ".")


def verdicts(rows: list[dict], horizons_of: dict[str, Sequence[int]]) -> list[str]:
    """The targets' sentences from the report's rows, judging the cells of ``horizons_of``
    (a: every dataset of it, by ``ltsf.verdict_tuned``)."""
    lines = [verdict_boundaries(cells(rows, "learned", "target"),
                                cells(rows, "uniform R=8", "target"), horizons_of),
             verdict_boundaries(cells(rows, "learned", "covariates"),
                                cells(rows, "uniform R=8", "covariates"), horizons_of,
                                "+ covariates, reported beside the target"),
             verdict_covariates(cells(rows, "learned", "covariates"),
                                {name: cells(rows, name, "covariates") for name in DARTS_PEERS},
                                horizons_of, cells(rows, "uniform tuned", "covariates"))]
    for setting in SETTINGS:
        means = {name: {c: s.mean for c, s in cells(rows, name, setting).items()}
                 for name in ("learned tuned", "uniform tuned")}
        text = ltsf.verdict_tuned(means["learned tuned"], means["uniform tuned"],
                                  needed=len(horizons_of), n_datasets=len(horizons_of))
        lines.append(text.replace("- a. tuned against tuned", "- a. tuned against tuned ("
                                  f"{SETTING_NAMES[setting]})", 1))
    return lines


CSV_FIELDS = ["protocol", "dataset", "horizon", "setting", "model", "test_mse", "test_mse_std",
              "n_seeds", "seeds", "test_mae", "test_mae_original", "val_mse", "epochs",
              "train_seconds", "grid_distance", "commit", "date"]


def full_protocol_rows(runs: list[dict], training: dict[str, Any] | None) -> list[dict]:
    """The trained rows of the same settings as ``training`` but under the full protocol
    (``ltsf.FULL_PROTOCOL``: every training window, more epochs); none when ``training`` is
    ``None`` or already that protocol."""
    if training is None or all(training.get(k) == v for k, v in ltsf.FULL_PROTOCOL.items()):
        return []
    return [dict(row, protocol="full")
            for row in rows_for_report(runs, {**training, **ltsf.FULL_PROTOCOL})
            if row["family"] not in BASELINES]


def _full_protocol(rows: list[dict], full_rows: list[dict]) -> list[str]:
    """The cells also run under the full protocol, beside their reduced-budget rows."""
    if not full_rows:
        return []
    reduced = {(r["dataset"], r["horizon"], r["setting"], r["name"]): r for r in rows}
    lines = ["## Full protocol against the reduced budget", "",
             "The same cells trained on every training window for up to "
             f"{ltsf.FULL_PROTOCOL['epochs']} epochs (patience {ltsf.FULL_PROTOCOL['patience']}) "
             "instead of the reduced budget above: test MSE (in brackets what was picked on "
             "validation), the full protocol's MAE in the original unit, its epochs run and "
             "training seconds.", "",
             "| dataset | H | setting | model | reduced | full | change | MAE (unit, full) | "
             "epochs (full) | train s (full) |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    order = list(GLANCE)
    for row in sorted(full_rows, key=lambda r: (r["dataset"], r["horizon"],
                                                SETTINGS.index(r["setting"]),
                                                order.index(r["name"]) if r["name"] in order
                                                else 99)):
        before = reduced.get((row["dataset"], row["horizon"], row["setting"], row["name"]))
        full = ltsf._with_choice(row, row["name"])
        if before is None:
            then, change = "–", "–"
        else:
            then = ltsf._with_choice(before, before["name"])
            change = f"{100 * (row['test_mse'] / before['test_mse'] - 1):+.1f} %"
        lines.append(f"| {row['dataset']} | {row['horizon']} | {SETTING_NAMES[row['setting']]} "
                     f"| {GLANCE.get(row['name'], row['name'])} | {then} | {full} | {change} | "
                     f"{row['test_mae_original']:.2f} {UNITS[row['dataset']]} | "
                     f"{row['epochs']:.3g} | {row['train_seconds']:.0f} |")
    return lines + [""]


def _glance_cell(row: dict | None, best: bool) -> str:
    if row is None:
        return "– | – | –"
    mse = format_mean_std(row["test_mse"], row["test_mse_std"], row["n_seeds"])
    mse = (f"**{mse}**" if best else mse) + ltsf._picked(row, row["name"])
    return f"{mse} | {row['test_mae']:.4f} | {row['test_mae_original']:.2f}"


def _at_a_glance(rows: list[dict], dataset: str, horizon: int) -> list[str]:
    here = [r for r in rows if (r["dataset"], r["horizon"]) == (dataset, horizon)]
    best = {s: min((r["test_mse"] for r in here if r["setting"] == s and r["name"] in GLANCE),
                   default=None) for s in SETTINGS}
    unit = UNITS[dataset]
    header = " | ".join(f"{SETTING_NAMES[s]}: test MSE | MAE | MAE ({unit})" for s in SETTINGS)
    lines = [f"### {dataset}, H = {horizon}", "", f"| model | {header} |",
             "|---|" + "---|---|---|" * len(SETTINGS)]
    for name, shown in GLANCE.items():
        by_setting = {r["setting"]: r for r in here if r["name"] == name}
        if not by_setting:
            continue
        if name == "naive":
            shown += f" (K={SEASONS[dataset]})"
        lines.append(f"| {shown} | " + " | ".join(
            _glance_cell(by_setting.get(s), by_setting.get(s) is not None
                         and by_setting[s]["test_mse"] == best[s]) for s in SETTINGS) + " |")
    return lines + [""]


#: The ReinPatch rows whose wins the report counts, and the rows they are counted against.
WIN_ROWS = ("learned", "learned tuned")
WIN_REFERENCES = ("uniform R=8", "uniform tuned") + DARTS_PEERS + ("naive", "repeat")


def _win_counts(rows: list[dict], setting: str) -> list[str]:
    """Per learned row, its wins (lower mean test MSE; a tie counts as a loss) over the cells
    of ``setting`` that it shares with each reference row, per dataset in brackets."""
    means = {name: {cell: score.mean for cell, score in cells(rows, name, setting).items()}
             for name in WIN_ROWS + WIN_REFERENCES}
    present = [name for name in WIN_REFERENCES if means[name]]
    if not present or not any(means[name] for name in WIN_ROWS):
        return []
    lines = [f"Wins in the {SETTING_NAMES[setting]} setting (cells of lower mean test MSE; "
             "ties count as losses), per dataset in brackets:", "",
             "| model | " + " | ".join(f"vs {GLANCE[name]}" for name in present) + " |",
             "|---|" + "---|" * len(present)]
    for name in WIN_ROWS:
        if means[name]:
            lines.append(f"| {GLANCE[name]} | " + " | ".join(
                ltsf._wins(means[name], means[reference]) for reference in present) + " |")
    return lines + [""]


#: The rows drawn in ``events.png``.
PLOTTED = ("learned", "uniform R=8", "uniform tuned", "dlinear", "nlinear", "tsmixer", "tide")


def _plot(rows: list[dict], out_dir: Path) -> bool:
    """``events.png``: test MSE of :data:`PLOTTED` per cell and setting, the seeds' std as
    error bars. ``False`` when there is nothing to draw."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = sorted({(r["dataset"], r["horizon"]) for r in rows})
    if not panels:
        return False
    fig, axes = plt.subplots(1, len(panels), figsize=(4.5 * len(panels), 3.8), squeeze=False)
    width = 0.8 / len(SETTINGS)
    for ax, (dataset, horizon) in zip(axes[0], panels):
        for offset, setting in enumerate(SETTINGS):
            found = {r["name"]: r for r in rows
                     if (r["dataset"], r["horizon"], r["setting"]) == (dataset, horizon, setting)}
            positions = [i + (offset - (len(SETTINGS) - 1) / 2) * width
                         for i, name in enumerate(PLOTTED) if name in found]
            shown = [found[name] for name in PLOTTED if name in found]
            ax.bar(positions, [r["test_mse"] for r in shown], width,
                   yerr=[r["test_mse_std"] or 0.0 for r in shown], label=SETTING_NAMES[setting])
        ax.set_xticks(range(len(PLOTTED)))
        ax.set_xticklabels([GLANCE[name].replace("ReinPatch ", "") for name in PLOTTED],
                           rotation=45, ha="right", fontsize=7)
        ax.set_title(f"{dataset}, H = {horizon}")
        ax.set_ylabel("test MSE")
    axes[0][-1].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out_dir / "events.png", dpi=100)
    plt.close(fig)
    return True


def write_report(runs: list[dict], out_dir: Path, training: dict[str, Any] | None,
                 command: str, horizons_of: dict[str, Sequence[int]] = HORIZONS,
                 windows_of: dict[str, int | None] | None = None) -> list[dict]:
    """``events.md`` and ``events.csv`` from the cached runs of the training settings
    ``training``; the verdicts judge the cells of ``horizons_of`` (the targets' cells: both
    datasets at their own horizons, whichever cells a process runs)."""
    rows = [dict(row, protocol="reduced") for row in rows_for_report(runs, training, windows_of)]
    full_rows = full_protocol_rows(runs, training)
    out_dir.mkdir(parents=True, exist_ok=True)
    write_csv(out_dir / "events.csv", rows + full_rows, CSV_FIELDS)
    shown = {k: v for k, v in (training or {}).items() if k != "seed"}
    if windows_of and training is not None:
        shown["max_train_windows"] = {d: windows_of.get(d, training["max_train_windows"])
                                      for d in DATASETS}
    commits = sorted({c for r in rows for c in r["commit"].split("/")})
    machines = sorted({r["machine"] for r in runs if r.get("machine")})
    lines = [
        "# Event-rich benchmark: EPF_FR_BE and vic_elec, with and without covariates",
        "",
        f"Generated by `{command}` from `{out_dir.name}/{CACHE_NAME}` on {utc_now()} at commit "
        f"`{git_commit()}`; the runs were made at commit(s) "
        f"{', '.join(f'`{c}`' for c in commits) or '–'} (each row's commit and date are in "
        "`events.csv`).",
        "",
        "Test scores over every stride-1 test window, mean ± std over seeds (n seeds in the "
        "detail table): MSE and MAE on the scaled data (train-only scaler), and the MAE in the "
        "original unit (EUR/MWh for EPF_FR_BE's two prices, averaged over both; MWh for "
        "vic_elec's demand). In brackets what was picked on validation MSE: R of the tuned "
        f"rows in {{{', '.join(map(str, ltsf.UNIFORM_SIZES))}}}, the darts peers' learning rate "
        f"in {ltsf.PEER_LRS}. Bold: the lowest test MSE of a column. NaiveSeasonal and Repeat "
        "train nothing and take no covariates: the same numbers stand in both settings.",
        "",
        "Covariates: EPF_FR_BE's `gen_forecast` and `system_load` (future); vic_elec's "
        "`temperature` (past), `holiday` and the calendar on Melbourne's clock (hour/23, "
        "weekday/6, month index/11; future). ReinPatch rows run on ltsf.py's default backbone "
        f"(`{ltsf.DEFAULT_BACKBONE}`); lookback {LOOKBACKS['EPF_FR_BE']} (EPF_FR_BE) and "
        f"{LOOKBACKS['vic_elec']} (vic_elec).",
        f"Training settings of every trained run (seeds aside): `{json.dumps(shown)}`. "
        f"Made on: {'; '.join(machines) or '–'} (train s are of that machine).",
        "",
        "## At a glance",
        "",
    ]
    for dataset, horizon in sorted({(r["dataset"], r["horizon"]) for r in rows}):
        lines += _at_a_glance(rows, dataset, horizon)
    for setting in SETTINGS:
        lines += _win_counts(rows, setting)
    if _plot(rows, out_dir):
        lines += ["Test MSE per cell (bars: mean over seeds; whiskers: their std):", "",
                  "![Event-rich test MSE](events.png)", ""]
    lines += ["## Targets", "",
              "Target d judges ReinPatch learned (R=8) with covariates (uniform tuned is shown "
              "beside it, not judged); the darts peers are DLinear, NLinear, TSMixer and TiDE at "
              "their validation-picked learning rate. Target a compares each dataset's average "
              "over its horizons.", ""]
    lines += verdicts(rows, horizons_of) + [""]
    lines += _full_protocol(rows, full_rows)
    lines += ["## Every row", "",
              "| dataset | H | setting | model | test MSE | test MAE | MAE (unit) | val MSE | "
              "seeds | epochs | train s | grid distance | commit |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        grid = "" if row.get("grid_distance") is None else f"{row['grid_distance']:.2f}"
        lines.append(
            f"| {row['dataset']} | {row['horizon']} | {row['setting']} | {row['model']} | "
            f"{format_mean_std(row['test_mse'], row['test_mse_std'], row['n_seeds'])} | "
            f"{row['test_mae']:.4f} | {row['test_mae_original']:.2f} {UNITS[row['dataset']]} | "
            f"{row['val_mse']:.4f} | {row['seeds']} | {row['epochs']:.3g} | "
            f"{row['train_seconds']:.0f} | {grid} | {row['commit']} |")
    write_markdown(out_dir / "events.md", lines + [""])
    return rows


# -- command line ------------------------------------------------------------------------------


def horizons_of(datasets: Sequence[str], horizons: Sequence[int] | None) -> dict[str, tuple]:
    """The horizons of each dataset: ``horizons`` for all, or each dataset's own."""
    if horizons is not None and any(h < 1 for h in horizons):
        raise ValueError(f"horizons must be >= 1, got {list(horizons)}")
    return {d: tuple(horizons) if horizons else HORIZONS[d] for d in datasets}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", choices=DATASETS, default=list(DATASETS))
    parser.add_argument("--horizons", nargs="+", type=int, default=None,
                        help="horizons of every dataset (default: 24 for EPF_FR_BE, 48 and 336 "
                             "for vic_elec)")
    parser.add_argument("--lookback", type=int, default=None,
                        help="lookback of every dataset (default: 168 for EPF_FR_BE, 336 for "
                             "vic_elec)")
    parser.add_argument("--settings", nargs="+", choices=SETTINGS, default=list(SETTINGS))
    parser.add_argument("--models", nargs="+", choices=MODELS, default=list(MODELS))
    parser.add_argument("--backbone", choices=sorted(ltsf.BACKBONES),
                        default=ltsf.DEFAULT_BACKBONE, help="backbone of the ReinPatch rows")
    ltsf.add_training_arguments(parser)
    parser.set_defaults(seeds=[0, 1, 2], max_train_windows=None)
    parser.add_argument("--shard", default=None, help="i/n: run every n-th run from the i-th")
    parser.add_argument("--out-dir", type=Path, default=RESULTS,
                        help="folder of the run cache and the report")
    parser.add_argument("--report-only", action="store_true")
    args = parser.parse_args(argv)
    try:
        cells_of = horizons_of(args.datasets, args.horizons)
    except ValueError as error:
        parser.error(str(error))
    lookbacks = {d: args.lookback or LOOKBACKS[d] for d in args.datasets}
    short = [f"{d} (K={SEASONS[d]})" for d in args.datasets if lookbacks[d] < SEASONS[d]]
    if args.lookback is not None and (args.lookback < 1 or short):
        parser.error(f"--lookback {args.lookback} is below 1 or shorter than the season of "
                     f"{', '.join(short) or 'a dataset'}")
    set_threads(args.threads)
    windows_of = None if args.max_train_windows is not None else dict(TRAIN_WINDOWS)
    if windows_of is not None:
        args.max_train_windows = TRAIN_WINDOWS[DATASETS[0]]  # overridden per dataset
    training = ltsf.training_settings(args, args.seeds[0])
    cache = args.out_dir / CACHE_NAME
    given = sys.argv[1:] if argv is None else argv
    command = " ".join(["python benchmarks/events.py", *given])

    if not args.report_only:
        specs = shard(make_plan(args.datasets, cells_of, args.settings, args.models, training,
                                args.seeds, lookbacks, args.backbone, windows_of), args.shard)
        commit = git_commit(CODE_PATHS)  # the code this process has loaded, whatever HEAD
        # becomes; every cell's data is read first, so a horizon too long for a split fails
        # before any training
        data_of = {(d, h): event_data(d, lookbacks[d], h, args.data_dir)
                   for d, h in sorted({(s.dataset, s.horizon) for s in specs})}

        def fit(spec: ltsf.RunSpec) -> dict:
            record = run_one(spec, data_of[(spec.dataset, spec.horizon)], args.out_dir,
                             args.progress, commit=commit)
            print(f"[events]   test MAE {record['test_mae']:.4f} "
                  f"({record['test_mae_original']:.2f} {record['unit']}), val MSE "
                  f"{record['val_mse']:.4f}, scored in {record['score_seconds']:.0f} s",
                  flush=True)
            return record

        for spec in specs:  # one at a time, so that the report follows every finished run
            ltsf.run_missing([spec], cache, fit, "events")
            write_report(load_jsonl(cache), args.out_dir, training, command,
                         windows_of=windows_of)
    write_report(load_jsonl(cache), args.out_dir, training, command, windows_of=windows_of)
    print(f"[events] report: {args.out_dir / 'events.md'}")


if __name__ == "__main__":
    sys.exit(main())
