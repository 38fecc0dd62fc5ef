"""LTSF benchmark: ReinPatch against tuned uniform patches, heuristics and darts peers.

One command trains and evaluates every model under the standard LTSF protocol
(``reinpatch_forecast.datasets``: train-only scaler, stride-1 windows, MSE/MAE over *all* test
windows), with early stopping on validation MSE. Every finished run is appended to a cache
(``benchmarks/results/ltsf_runs.jsonl``), so a stopped run resumes and the table fills over
several sessions; the report is rebuilt from the cache at the end of every run.

Examples
--------
python benchmarks/ltsf.py --profile quick                      # ETTh1, H=96
python benchmarks/ltsf.py --datasets ETTh1 ETTh2 --horizons 96 192 336 720
python benchmarks/ltsf.py --report-only                        # rebuild the tables
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import hashlib
import json
import os
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from reinpatch_forecast.foundation import PRETRAINED_SHA256

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"
CACHE = RESULTS / "ltsf_runs.jsonl"
DEFAULT_DATA = REPO.parent / "shared" / "data"

PROFILES = {
    "quick": dict(datasets=["ETTh1"], horizons=[96]),
    "full": dict(datasets=["ETTh1", "ETTh2", "ETTm1", "ETTm2", "weather"],
                 horizons=[96, 192, 336, 720]),
}
UNIFORM_SIZES = (4, 8, 16, 24)
#: Learning rates tried for the darts peers; the one with the lower validation MSE is reported.
PEER_LRS = (1e-3, 1e-4)
PEERS = ("dlinear", "nlinear", "tsmixer")
#: Compression rates (R1, R2) of the two-level rows.
LEVEL2_RATES = (8, 2)
DISPLAY_NAMES = {
    "foundation": "foundation (zero-shot)",
    "learned_init": "learned (init from foundation)",
    "learned_l2": f"learned L2 (R={LEVEL2_RATES[0]},{LEVEL2_RATES[1]})",
    "uniform_l2": f"uniform L2 (R={LEVEL2_RATES[0]},{LEVEL2_RATES[1]})",
}

# Published numbers (other code), MSE for H = 96, 192, 336, 720; see shared/design.md §4.
PUBLISHED = {
    "EntroPE (published, other code)": {
        "ETTh1": (0.3788, 0.4222, 0.4594, 0.4406), "ETTh2": (0.2948, 0.3787, 0.3879, 0.4137),
        "ETTm1": (0.3153, 0.3627, 0.3880, 0.4496), "ETTm2": (0.1803, 0.2462, 0.3085, 0.4066),
        "weather": (0.1673, 0.2123, 0.2677, 0.3412),
    },
    "PatchTST@96 (published, other code; iTransformer Table 10)": {
        "ETTh1": (0.414, 0.460, 0.501, 0.500), "ETTh2": (0.302, 0.388, 0.426, 0.431),
        "ETTm1": (0.329, 0.367, 0.399, 0.454), "ETTm2": (0.175, 0.241, 0.305, 0.402),
        "weather": (0.177, 0.225, 0.278, 0.354),
    },
}


@dataclass
class RunSpec:
    """One model configuration on one dataset and horizon."""

    dataset: str
    horizon: int
    model: str  # family: learned, learned_init, foundation, uniform, random, volatility,
    # dlinear, nlinear, tsmixer, repeat
    params: dict[str, Any] = field(default_factory=dict)
    lookback: int = 96
    settings: dict[str, Any] = field(default_factory=dict)  # training settings shared by all

    @property
    def key(self) -> str:
        settings = {} if self.model == "repeat" else self.settings
        text = json.dumps([self.dataset, self.lookback, self.horizon, self.model, self.params,
                           settings], sort_keys=True)
        return hashlib.sha1(text.encode()).hexdigest()[:16]

    @property
    def label(self) -> str:
        extra = ",".join(f"{k}={v}" for k, v in sorted(self.params.items()))
        return f"{self.model}[{extra}]" if extra else self.model


def git_commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, text=True,
                              capture_output=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def load_cache(path: Path = CACHE) -> dict[str, dict]:
    if not path.exists():
        return {}
    runs = {}
    for line in path.read_text().splitlines():
        if line.strip():
            record = json.loads(line)
            runs[record["key"]] = record
    return runs


def append_cache(record: dict, path: Path = CACHE) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        handle.write(json.dumps(record) + "\n")


# -- training and evaluation -------------------------------------------------------------------


def _darts_predict_fn(model) -> Callable[[np.ndarray], np.ndarray]:
    """Batch forecasts of a trained darts torch model from raw windows (no covariates)."""
    import torch
    from darts.utils.data.torch_datasets.utils import PLModuleInput

    module = model.model
    module.eval()

    def predict(x: np.ndarray) -> np.ndarray:
        with torch.inference_mode():
            tensor = torch.from_numpy(x).to(module.dtype)
            out = module(PLModuleInput(past_target=tensor)).prediction  # (b, H, C, 1)
        return out[..., 0].numpy()

    return predict


def _build_model(spec: RunSpec, args, work_dir: Path):
    from darts.models import DLinearModel, NLinearModel, TSMixerModel
    from pytorch_lightning.callbacks import EarlyStopping

    from reinpatch_forecast import ReinPatchModel

    trainer = {
        "accelerator": "cpu", "enable_progress_bar": args.progress, "logger": False,
        "enable_model_summary": False,
        "callbacks": [EarlyStopping(monitor="val_loss", patience=args.patience, mode="min")],
    }
    common = dict(
        input_chunk_length=spec.lookback, output_chunk_length=spec.horizon,
        batch_size=args.batch_size, n_epochs=args.epochs, random_state=args.seed,
        pl_trainer_kwargs=trainer, save_checkpoints=True, force_reset=True,
        # The process id keeps two processes sharing the cache from deleting each other's
        # checkpoints (force_reset) when they happen to train the same configuration.
        model_name=f"ltsf_{spec.key}_{os.getpid()}", work_dir=str(work_dir),
        optimizer_kwargs={"lr": spec.params.get("lr", args.lr)},
    )
    draws = spec.params.get("draws", "all")
    reinpatch = dict(compression_rate=spec.params.get("R", 8), group_size=spec.params.get("G", 8),
                     backbone_draws=None if draws == "all" else draws,
                     uniform_prior=spec.params.get("prior", 0.0),
                     rollout_fraction=spec.params.get("fraction"),
                     entropy_coef=spec.params.get("entropy", 1e-3),
                     patcher_lr=spec.params.get("patcher_lr"),
                     d_model=args.d_model, n_heads=4, n_layers=args.n_layers,
                     dropout=args.dropout)
    if spec.model in ("learned", "uniform", "random", "volatility"):
        return ReinPatchModel(patcher=spec.model, **reinpatch, **common)
    if spec.model in ("learned_l2", "uniform_l2"):  # two levels: fine R1, coarse R2 per fine
        return ReinPatchModel(patcher=spec.model[:-3], levels=2,
                              **{**reinpatch, "compression_rate": tuple(spec.params["R"])},
                              **common)
    if spec.model == "foundation":  # the shipped patcher, frozen (zero-shot)
        return ReinPatchModel(patcher="pretrained", **reinpatch, **common)
    if spec.model == "learned_init":  # GRPG end to end, started from the shipped patcher
        return ReinPatchModel(patcher="learned", patcher_init="pretrained", **reinpatch, **common)
    if spec.model == "dlinear":
        return DLinearModel(use_reversible_instance_norm=True, **common)
    if spec.model == "nlinear":
        return NLinearModel(use_reversible_instance_norm=True, **common)
    if spec.model == "tsmixer":
        return TSMixerModel(use_reversible_instance_norm=True, **common)
    raise ValueError(f"unknown model family {spec.model!r}")


def run_one(spec: RunSpec, args) -> dict:
    """Train (unless Repeat) and evaluate one configuration; returns its cache record."""
    from darts import TimeSeries

    from reinpatch_forecast.datasets import (evaluate_windows, load_ltsf_frame, prepare_ltsf,
                                             repeat_forecast)

    frame = load_ltsf_frame(spec.dataset, data_dir=args.data_dir)
    splits = prepare_ltsf(frame, spec.dataset, spec.lookback, spec.horizon)
    began = time.perf_counter()
    epochs = 0
    if spec.model == "repeat":
        def predict(x):
            return repeat_forecast(x, spec.horizon)
    else:
        work_dir = args.out_dir / "_ltsf_work"
        model = _build_model(spec, args, work_dir)
        train = TimeSeries.from_values(splits.train)
        val = TimeSeries.from_values(splits.val)
        model.fit(train, val_series=val, load_best=True,
                  max_samples_per_ts=args.max_train_windows, verbose=args.progress)
        epochs = int(model.trainer.current_epoch)  # epochs run before stopping
        predict = _darts_predict_fn(model)
    train_seconds = time.perf_counter() - began
    val_scores = evaluate_windows(predict, splits.val, spec.lookback, spec.horizon)
    test_scores = evaluate_windows(predict, splits.test, spec.lookback, spec.horizon)
    return {
        "key": spec.key, "spec": asdict(spec), "label": spec.label,
        "val_mse": val_scores["mse"], "val_mae": val_scores["mae"],
        "test_mse": test_scores["mse"], "test_mae": test_scores["mae"],
        "test_windows": test_scores["n_windows"], "epochs": epochs,
        "train_seconds": round(train_seconds, 1), "commit": git_commit(),
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "settings": spec.settings,
    }


SETTINGS = ("epochs", "batch_size", "lr", "patience", "d_model", "n_layers", "dropout", "seed",
            "max_train_windows")


def plan(datasets: list[str], horizons: list[int], models: list[str], lookback: int,
         settings: dict[str, Any], learned_draws: int | str = 1,
         learned_prior: float = 0.0, learned_fraction: float | None = None,
         learned_extra: dict[str, Any] | None = None) -> list[RunSpec]:
    """Every run of the table, cell by cell (dataset, horizon), in the order of ``models``."""
    specs = []
    for dataset in datasets:
        for horizon in horizons:
            for model in models:
                specs += _family_runs(dataset, horizon, model, lookback, settings, learned_draws,
                                      learned_prior, learned_fraction, learned_extra)
    return specs


def _family_runs(dataset: str, horizon: int, model: str, lookback: int,
                 settings: dict[str, Any], learned_draws: int | str,
                 learned_prior: float = 0.0,
                 learned_fraction: float | None = None,
                 learned_extra: dict[str, Any] | None = None) -> list[RunSpec]:
    def run(params: dict[str, Any]) -> RunSpec:
        return RunSpec(dataset, horizon, model, params, lookback, settings)

    if model == "uniform":
        return [run({"R": r}) for r in UNIFORM_SIZES]
    if model in PEERS:
        return [run({"lr": lr}) for lr in PEER_LRS]
    if model in ("random", "volatility"):
        return [run({"R": 8})]
    if model == "uniform_l2":
        return [run({"R": list(LEVEL2_RATES)})]
    if model == "foundation":
        # The shipped file's checksum is part of the key: a new patcher, new runs.
        return [run({"R": 8, "patcher": PRETRAINED_SHA256[:10]})]
    if model in ("learned", "learned_init", "learned_l2"):
        # GRPG rows name their group and how many draws train the backbone.
        params = {"R": list(LEVEL2_RATES) if model == "learned_l2" else 8, "G": 8,
                  "draws": learned_draws}
        if learned_prior:
            params["prior"] = learned_prior
        if learned_fraction is not None:
            params["fraction"] = learned_fraction
        params.update(learned_extra or {})
        if model == "learned_init":
            params["patcher"] = PRETRAINED_SHA256[:10]
        return [run(params)]
    return [run({})]


# -- report ------------------------------------------------------------------------------------


def rows_for_report(runs: dict[str, dict], settings: dict[str, Any] | None = None) -> list[dict]:
    """One row per (dataset, horizon, reported model), tuned uniform chosen on validation.

    Only runs trained with ``settings`` are reported (Repeat trains nothing and always is), so
    runs of another protocol in the same cache never mix into one table; foundation rows only
    with the patcher shipped now. A darts peer run at
    several learning rates is reported once, at the rate with the lower validation MSE.
    """
    by_cell: dict[tuple, list[dict]] = {}
    for record in runs.values():
        spec = record["spec"]
        if settings is not None and spec["model"] != "repeat" and spec["settings"] != settings:
            continue
        if spec["params"].get("patcher", PRETRAINED_SHA256[:10]) != PRETRAINED_SHA256[:10]:
            continue  # a run with an earlier shipped patcher
        by_cell.setdefault((spec["dataset"], spec["horizon"]), []).append(record)
    rows = []
    for (dataset, horizon), records in sorted(by_cell.items()):
        uniform = [r for r in records if r["spec"]["model"] == "uniform"]
        peers: dict[str, list[dict]] = {}
        for record in records:
            spec = record["spec"]
            name = spec["model"]
            if name in PEERS:
                peers.setdefault(name, []).append(record)
                continue
            if name == "uniform":
                name = f"uniform R={spec['params']['R']}"
            name = DISPLAY_NAMES.get(name, name)
            if spec["params"].get("draws") == "all":
                name += " [backbone on all G draws]"
            if spec["params"].get("fraction") is not None:
                name += f" [groups on {spec['params']['fraction']:g} of windows]"
            for key, label in (("entropy", "entropy_coef"), ("patcher_lr", "patcher_lr")):
                if key in spec["params"]:
                    name += f" [{label} {spec['params'][key]:g}]"
            if spec["model"].startswith("learned") and spec["params"].get("G", 8) != 8:
                name += f" [G={spec['params']['G']}]"
            if spec["params"].get("prior"):
                name += f" [uniform prior {spec['params']['prior']:g}]"
            rows.append(dict(dataset=dataset, horizon=horizon, model=name, **_scores(record)))
        for name, tried in sorted(peers.items()):
            best = min(tried, key=lambda r: r["val_mse"])
            lr = best["spec"]["params"].get("lr")
            tuned = len(tried) == len(PEER_LRS)
            label = f"{name} (lr={lr:g})" if tuned else f"{name} (lr={lr:g}, untuned)"
            rows.append(dict(dataset=dataset, horizon=horizon, model=label, **_scores(best)))
        if len(uniform) == len(UNIFORM_SIZES):
            best = min(uniform, key=lambda r: r["val_mse"])
            rows.append(dict(dataset=dataset, horizon=horizon,
                             model=f"uniform tuned (R={best['spec']['params']['R']})",
                             **_scores(best)))
    return rows


def _scores(record: dict) -> dict:
    return {k: record[k] for k in ("test_mse", "test_mae", "val_mse", "epochs", "train_seconds",
                                   "commit", "date")}


def write_report(runs: dict[str, dict], out_dir: Path = RESULTS,
                 settings: dict[str, Any] | None = None) -> None:
    rows = rows_for_report(runs, settings)
    out_dir.mkdir(parents=True, exist_ok=True)
    with (out_dir / "ltsf.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=["dataset", "horizon", "model", "test_mse",
                                                    "test_mae", "val_mse", "epochs",
                                                    "train_seconds", "commit", "date"])
        writer.writeheader()
        writer.writerows(rows)
    horizons_of = {}
    for row in rows:
        horizons_of.setdefault(row["dataset"], set()).add(row["horizon"])
    lines = [
        "# LTSF benchmark (normalised MSE / MAE, all test windows)",
        "",
        f"Generated by `python benchmarks/ltsf.py` from `{out_dir.name}/ltsf_runs.jsonl` on "
        f"{dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M UTC}, at commit `{git_commit()}` "
        "(each row also names the commit and date of its own run in `ltsf.csv`).",
        "Protocol: `reinpatch_forecast.datasets` (train-only scaler, stride-1 windows, every test "
        "window, no `drop_last`). Lookback 96. Early stopping on validation MSE with the best "
        "epoch restored. `uniform tuned` picks R in {4, 8, 16, 24} on validation MSE; each darts "
        f"peer (reversible instance norm on) picks its learning rate in {PEER_LRS} on validation "
        "MSE.",
        f"Training settings shared by every trained model: `{json.dumps(settings)}`.",
        "",
    ]
    for dataset in sorted(horizons_of):
        lines += [f"## {dataset}", ""] + _summary(rows, dataset, sorted(horizons_of[dataset]))
        lines += ["", "| model | H | test MSE | test MAE | val MSE | epochs | "
                  "train s | commit |", "|---|---|---|---|---|---|---|---|"]
        for row in sorted((r for r in rows if r["dataset"] == dataset),
                          key=lambda r: (r["model"], r["horizon"])):
            lines.append(
                f"| {row['model']} | {row['horizon']} | {row['test_mse']:.4f} | "
                f"{row['test_mae']:.4f} | {row['val_mse']:.4f} | {row['epochs']} | "
                f"{row['train_seconds']:.0f} | {row['commit']} |"
            )
        for source, table in PUBLISHED.items():
            if dataset in table:
                values = ", ".join(
                    f"H={h}: {v}" for h, v in zip((96, 192, 336, 720), table[dataset])
                )
                lines.append(f"\n{source}: {values}")
        lines.append("")
    (out_dir / "ltsf.md").write_text("\n".join(lines) + "\n")
    _plot(rows, out_dir)


def _summary(rows: list[dict], dataset: str, horizons: list[int]) -> list[str]:
    """Test MSE pivot (model x horizon) with the average over horizons, published rows below.

    Only models with every horizon of the dataset get an average; the best value of each
    column is in bold. Per-size uniform rows stay in the detail table (the tuned row is here).
    """
    table: dict[str, dict[int, float]] = {}
    chosen: dict[tuple[str, int], str] = {}  # the value picked on validation, per cell
    for row in rows:
        if row["dataset"] != dataset or row["model"].startswith("uniform R="):
            continue
        name = row["model"]
        if name.startswith("uniform tuned") or name.split(" ")[0] in PEERS:
            name, _, picked = name.partition(" (")
            chosen[(name, row["horizon"])] = picked.rstrip(")")
        table.setdefault(name, {})[row["horizon"]] = row["test_mse"]
    best = {h: min((v[h] for v in table.values() if h in v), default=None) for h in horizons}
    lines = ["Test MSE (lower is better; bold: best of this repo's runs per column; in brackets "
             "the patch size or learning rate chosen on validation):", "",
             "| model | " + " | ".join(f"H={h}" for h in horizons) + " | avg |",
             "|---|" + "---|" * (len(horizons) + 1)]

    def cell(value: float | None, bold: bool) -> str:
        if value is None:
            return "–"
        return f"**{value:.4f}**" if bold else f"{value:.4f}"

    for model, values in sorted(table.items()):
        complete = all(h in values for h in horizons)
        avg = float(np.mean([values[h] for h in horizons])) if complete else None
        cells = []
        for h in horizons:
            text = cell(values.get(h), values.get(h) == best[h])
            if (model, h) in chosen:
                text += f" [{chosen[(model, h)]}]"
            cells.append(text)
        lines.append(f"| {model} | " + " | ".join(cells) + f" | {cell(avg, False)} |")
    for source, published in PUBLISHED.items():
        if dataset in published:
            values = dict(zip((96, 192, 336, 720), published[dataset]))
            avg = float(np.mean([values[h] for h in horizons]))
            lines.append(f"| *{source}* | " + " | ".join(
                f"*{values[h]:.3f}*" for h in horizons) + f" | *{avg:.3f}* |")
    return lines


def _plot(rows: list[dict], out_dir: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:  # pragma: no cover - matplotlib comes with darts
        return
    datasets = sorted({r["dataset"] for r in rows})
    fig, axes = plt.subplots(1, len(datasets), figsize=(5 * len(datasets), 4), squeeze=False)
    for ax, dataset in zip(axes[0], datasets):
        models = sorted({r["model"] for r in rows if r["dataset"] == dataset})
        for model in models:
            points = sorted((r["horizon"], r["test_mse"]) for r in rows
                            if r["dataset"] == dataset and r["model"] == model)
            ax.plot(*zip(*points), marker="o", label=model)
        ax.set_title(dataset)
        ax.set_xlabel("horizon")
        ax.set_ylabel("test MSE")
    axes[0][-1].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out_dir / "ltsf.png", dpi=100)
    plt.close(fig)


def _extra(args) -> dict[str, Any]:
    """Non-default learned-row settings given on the command line (they enter the run key)."""
    extra = {"G": args.learned_group, "entropy": args.learned_entropy,
             "patcher_lr": args.learned_patcher_lr}
    return {k: v for k, v in extra.items() if v is not None}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", choices=sorted(PROFILES), default="quick")
    parser.add_argument("--datasets", nargs="+")
    parser.add_argument("--horizons", nargs="+", type=int)
    parser.add_argument("--models", nargs="+",
                        default=["repeat", "learned", "uniform", "random", "volatility",
                                 "dlinear", "nlinear", "tsmixer"])
    parser.add_argument("--lookback", type=int, default=96)
    parser.add_argument("--data-dir", default=str(DEFAULT_DATA))
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--patience", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--d-model", type=int, default=64)
    parser.add_argument("--n-layers", type=int, default=2)
    parser.add_argument("--dropout", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-train-windows", type=int, default=2048,
                        help="train on only the most recent training windows (0: all); the "
                             "default keeps the full table within a 2-core CPU budget")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch CPU threads (1 lets two benchmark processes share 2 cores)")
    parser.add_argument("--learned-draws", type=int, default=1,
                        help="GRPG draws per series that train the backbone in the learned "
                             "rows (the others only score rewards); 0: all G")
    parser.add_argument("--learned-prior", type=float, default=0.0,
                        help="uniform_prior of the learned rows (a logit bonus on the uniform "
                             "grid; 0: none)")
    parser.add_argument("--learned-fraction", type=float, default=None,
                        help="rollout_fraction of the learned rows (share of a batch's windows "
                             "that draw a GRPG group; default: all)")
    parser.add_argument("--learned-group", type=int, default=None,
                        help="group size G of the learned rows (default 8)")
    parser.add_argument("--learned-entropy", type=float, default=None,
                        help="entropy_coef of the learned rows (default 1e-3)")
    parser.add_argument("--learned-patcher-lr", type=float, default=None,
                        help="patcher_lr of the learned rows (default 3x --lr)")
    parser.add_argument("--progress", action="store_true")
    parser.add_argument("--report-only", action="store_true")
    parser.add_argument("--out-dir", type=Path, default=RESULTS,
                        help="folder of the run cache and the report")
    args = parser.parse_args(argv)
    if args.max_train_windows == 0:
        args.max_train_windows = None
    cache = args.out_dir / "ltsf_runs.jsonl"
    import torch

    torch.set_num_threads(args.threads)

    runs = load_cache(cache)
    if not args.report_only:
        datasets = args.datasets or PROFILES[args.profile]["datasets"]
        horizons = args.horizons or PROFILES[args.profile]["horizons"]
        settings = {name: getattr(args, name) for name in SETTINGS}
        draws = "all" if args.learned_draws == 0 else args.learned_draws
        for spec in plan(datasets, horizons, args.models, args.lookback, settings, draws,
                         args.learned_prior, args.learned_fraction, _extra(args)):
            runs.update(load_cache(cache))  # another process may share the cache
            if spec.key in runs:
                continue
            print(f"[ltsf] {spec.dataset} H={spec.horizon} {spec.label} ...", flush=True)
            record = run_one(spec, args)
            append_cache(record, cache)
            runs[spec.key] = record
            print(f"[ltsf]   test MSE {record['test_mse']:.4f} MAE {record['test_mae']:.4f} "
                  f"val MSE {record['val_mse']:.4f} ({record['train_seconds']:.0f} s, "
                  f"{record['epochs']} epochs)", flush=True)
            write_report(runs, args.out_dir, settings)
    runs.update(load_cache(cache))
    write_report(runs, args.out_dir, {name: getattr(args, name) for name in SETTINGS})
    print(f"[ltsf] report: {args.out_dir / 'ltsf.md'}")


if __name__ == "__main__":
    sys.exit(main())
