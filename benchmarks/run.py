"""The benchmark runner: plan the runs of an experiment spec (``specs.EXPERIMENTS``), fit and
score the missing ones under the evaluation protocol (``_protocol``), append one JSONL record
per run, and rebuild the experiment's CSV and markdown table from all its records.

Examples
--------
python benchmarks/run.py list                                   # experiments and model names
python benchmarks/run.py ltsf                                   # ETTh1, H=96, default rows
python benchmarks/run.py ltsf --datasets all --horizons all --seeds 0 1 2 --budget full
python benchmarks/run.py events --datasets EPF_FR_BE --settings target --seeds 0
python benchmarks/run.py readout --models uniform learned --require R=8
python benchmarks/run.py report                                 # rebuild every table
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import itertools
import json
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

from pytorch_lightning.callbacks import Callback

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import git_commit, utc_now  # noqa: E402
from _data import DEFAULT_DATA, Data, event_data, ltsf_data, original_scale_mae  # noqa: E402
from _protocol import (baseline_predict_fn, decoded_patch_statistics,  # noqa: E402
                       evaluate_windows)
from specs import (BUDGETS, EXPERIMENTS, PUBLISHED, RECIPE_BY_LOOKBACK,  # noqa: E402
                   RECIPE_LOOKBACKS, SUMMARY_FROM_RECIPE, SUMMARY_LABELS, SUMMARY_MODELS,
                   TABLES, TRAINING_OVERRIDES, by_lookback)
from tables import (RESULTS, append_jsonl, load_jsonl, report_rows,  # noqa: E402
                    write_report, write_summary)


def run_key(run: dict[str, Any]) -> str:
    """A run's identity in its JSONL file: a hash of everything that defines it."""
    return hashlib.sha1(json.dumps(run, sort_keys=True).encode()).hexdigest()[:16]


# -- planning ----------------------------------------------------------------------------------


def _per_dataset(value: Any, dataset: str) -> Any:
    return value[dataset] if isinstance(value, dict) else value


def _as_list(value: Any) -> list:
    return list(value) if isinstance(value, (list, tuple)) else [value]


def select_models(experiment: dict, wanted: list[str] | None, require: list[str] | None,
                  dataset: str | None = None) -> list[str]:
    """Model names of ``experiment`` named in ``wanted`` or tagged with one of its entries
    (default: the spec's ``default_models``), keeping those tagged with every ``require``."""
    models = experiment["models"]
    wanted = wanted or _per_dataset(experiment["default_models"], dataset)
    unknown = [w for w in wanted if w not in models
               and not any(w in m.get("tags", ()) for m in models.values())]
    if unknown:
        raise SystemExit(f"unknown model or tag {unknown}: see `python benchmarks/run.py list`")
    required = require if require is not None else experiment.get("require", [])
    return [name for name, m in models.items()
            if (name in wanted or set(wanted) & set(m.get("tags", ())))
            and all(r == name or r in m.get("tags", ()) for r in required)]


def plan(name: str, args: argparse.Namespace) -> list[dict[str, Any]]:
    """Every run of the command line, seed-major (the first seed of every cell first)."""
    experiment = EXPERIMENTS[name]
    datasets = _choose(args.datasets, experiment.get("default_datasets", experiment["datasets"]),
                       experiment["datasets"], "dataset")
    seeds = args.seeds if args.seeds is not None else experiment["seeds"]
    runs = []
    for seed in seeds:
        for dataset in datasets:
            all_horizons = _per_dataset(experiment["horizons"], dataset)
            horizons = _choose(args.horizons, experiment.get("default_horizons", all_horizons),
                               all_horizons, "horizon")
            lookbacks = args.lookback or _as_list(_per_dataset(experiment["lookback"], dataset))
            settings = args.settings or experiment.get("settings", ["target"])
            models = select_models(experiment, args.models, args.require, dataset)
            for horizon, lookback, setting, model in itertools.product(horizons, lookbacks,
                                                                       settings, models):
                run = _forecast_run(name, experiment, dataset, horizon, lookback, setting,
                                    model, seed, args.budget)
                if run is not None:
                    runs.append(run)
    return list({run_key(r): r for r in runs}.values())


def _choose(given: list | None, default: list, known: list, what: str) -> list:
    if given is None:
        return list(default)
    if given == ["all"]:
        return list(known)
    given = [type(known[0])(g) for g in given]
    unknown = [g for g in given if g not in known]
    if unknown and what == "dataset":
        raise SystemExit(f"unknown {what} {unknown}: use some of {known}")
    return given


def _forecast_run(name, experiment, dataset, horizon, lookback, setting, model, seed,
                  budget) -> dict | None:
    spec, budget = experiment["models"][model], budget or experiment["budget"]
    if lookback not in spec.get("lookbacks", [lookback]) or \
            setting not in spec.get("settings", [setting]):
        return None
    baseline = spec["family"] in ("repeat", "naive")
    # a row of its own early stopping or epochs
    training = {**BUDGETS[budget], **{k: spec[k] for k in TRAINING_OVERRIDES if k in spec}}
    windows = experiment.get("max_train_windows")
    if windows and budget == "reduced":
        training["max_train_windows"] = windows[dataset]
    kwargs = {**spec.get("kwargs", {}), **spec.get("dataset_kwargs", {}).get(dataset, {})}
    run = {"experiment": name, "dataset": dataset, "horizon": horizon, "lookback": lookback,
           "setting": setting, "model": model, "family": spec["family"], "kwargs": kwargs,
           "seed": 0 if baseline else seed, "budget": budget,
           "training": {} if baseline else training,
           **{k: spec[k] for k in ("lr", "drop_last") if k in spec}}
    if spec["family"] == "naive":
        run["season"] = experiment["season"][dataset]
    if "pretrained" in (run["kwargs"].get("patcher"), run["kwargs"].get("patcher_init")):
        run["shipped_patcher"] = shipped_patcher()  # a new shipped patcher: new runs
    return run


def shipped_patcher() -> str:
    """The first ten hex digits of the SHA-256 of the package's shipped patcher files."""
    import reinpatch_forecast

    digest = hashlib.sha256()
    folder = Path(reinpatch_forecast.__file__).parent / "pretrained"
    for path in sorted(folder.glob("*")):
        if path.is_file() and path.suffix not in (".md", ".py"):
            digest.update(path.read_bytes())
    return digest.hexdigest()[:10]


# -- running -----------------------------------------------------------------------------------


def load_data(experiment: dict, run: dict, data_dir: str) -> Data:
    load = event_data if experiment["data"] == "events" else ltsf_data
    return load(run["dataset"], run["lookback"], run["horizon"], data_dir)


class ValidationCurve(Callback):
    """Keeps the validation loss of every epoch in ``losses`` (the number the early stopper
    reads), so that one run shows what any patience up to its epochs would have picked."""

    def __init__(self) -> None:
        self.losses: list[float] = []

    def on_validation_end(self, trainer, pl_module) -> None:
        if not trainer.sanity_checking and "val_loss" in trainer.callback_metrics:
            self.losses.append(float(trainer.callback_metrics["val_loss"]))


def build_model(run: dict, work_dir: Path, progress: bool, callbacks: tuple = ()):
    """The darts model of a trained run: ``ReinPatchModel`` for ReinPatch, darts' own
    models (reversible instance norm on) for the peers, every one with early stopping on
    validation loss and the best epoch restored; ``callbacks`` join the trainer's."""
    from pytorch_lightning.callbacks import EarlyStopping

    from reinpatch_forecast._lightning import quiet_trainer_kwargs

    training = run["training"]
    stopper = EarlyStopping(monitor="val_loss", patience=training["patience"], mode="min")
    common = dict(
        input_chunk_length=run["lookback"], output_chunk_length=run["horizon"],
        batch_size=training["batch_size"], n_epochs=training["epochs"],
        random_state=run["seed"], pl_trainer_kwargs=quiet_trainer_kwargs(
            progress, callbacks=[stopper, *callbacks]), save_checkpoints=True, force_reset=True,
        # the process id keeps processes sharing a results file off each other's checkpoints
        model_name=f"bench_{run_key(run)}_{os.getpid()}", work_dir=str(work_dir),
        optimizer_kwargs={"lr": run.get("lr", training["lr"])})
    kwargs = dict(run["kwargs"])
    ema = kwargs.pop("ema", None)  # a decay, or the callback's keyword arguments
    if run["family"] == "reinpatch":
        # a record that names no average ran without one (the default back then); an average
        # with the default warmup is the model's own option, any other a callback
        from reinpatch_forecast.darts import WeightEMA
        from reinpatch_forecast.darts.model import DEFAULT_EMA_WARMUP

        if isinstance(ema, dict) and ema.get("warmup") == DEFAULT_EMA_WARMUP:
            kwargs["ema_decay"] = ema["decay"]
        else:
            kwargs["ema_decay"] = None
            if ema is not None:
                common["pl_trainer_kwargs"]["callbacks"].append(
                    WeightEMA(**ema) if isinstance(ema, dict) else WeightEMA(ema))
    common["optimizer_kwargs"].update(kwargs.pop("optimizer_kwargs", {}))
    for key, module in (("optimizer_cls", "optim"), ("lr_scheduler_cls", "optim.lr_scheduler")):
        if isinstance(kwargs.get(key), str):  # a class of torch.optim named in the record
            kwargs[key] = getattr(importlib.import_module(f"torch.{module}"), kwargs[key])
    if isinstance(kwargs.get("compression_rate"), list):
        kwargs["compression_rate"] = tuple(kwargs["compression_rate"])
    if run["family"] == "reinpatch":
        # a record that names no schedule ran at darts' constant rate (the default back then)
        kwargs.setdefault("lr_scheduler_cls", None)
        settings = kwargs.pop("patcher_settings", None)
        if settings:  # a new learned patcher with other density-policy settings
            import torch

            from reinpatch_forecast.nn import LearnedPatcher

            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(run["seed"])
                kwargs["patcher_init"] = LearnedPatcher(**settings)
        from reinpatch_forecast import ReinPatchModel

        return ReinPatchModel(**kwargs, **common)
    from darts import models

    if run["family"] == "patchtst":  # its own instance norm (RevIN) is part of the model
        return models.NeuralForecastModel(model="PatchTST", model_kwargs=kwargs, **common)
    classes = {"dlinear": models.DLinearModel, "nlinear": models.NLinearModel,
               "tsmixer": models.TSMixerModel, "tide": models.TiDEModel}
    return classes[run["family"]](use_reversible_instance_norm=True, **kwargs, **common)


def fit_and_score(run: dict, data: Data, work_dir: Path, progress: bool = False,
                  patch_stats: bool = False) -> dict[str, Any]:
    """Fit one run (none for an untrained baseline) and score it on every stride-1 validation
    and test window; returns the measured fields."""
    lookback, horizon, setting = run["lookback"], run["horizon"], run["setting"]
    covariates = data.covariates(setting)
    began = time.perf_counter()
    model, epochs, curve = None, 0, None
    if run["family"] not in ("repeat", "naive"):
        work_dir.mkdir(parents=True, exist_ok=True)
        curve = ValidationCurve()
        model = build_model(run, work_dir, progress, callbacks=(curve,))
        model.fit(data.series("train"), val_series=data.series("val"), load_best=True,
                  max_samples_per_ts=run["training"]["max_train_windows"], verbose=progress,
                  **covariates, **{f"val_{k}": v for k, v in covariates.items()})
        epochs = int(model.trainer.current_epoch)
    train_seconds = time.perf_counter() - began
    scores = {}
    for split in ("val", "test"):
        predict = (baseline_predict_fn(run["family"], horizon, {"K": run.get("season")})
                   if model is None else data.predict_fn(model, split, horizon, setting))
        scores[split] = evaluate_windows(predict, data.arrays[split], lookback, horizon,
                                         drop_last_batch_size=run.get("drop_last"))
    measured = {"val_mse": scores["val"]["mse"], "val_mae": scores["val"]["mae"],
                "test_mse": scores["test"]["mse"], "test_mae": scores["test"]["mae"],
                "test_windows": scores["test"]["n_windows"], "epochs": epochs,
                "val_loss_by_epoch": [round(loss, 6) for loss in curve.losses] if curve else [],
                "train_seconds": round(train_seconds, 1),
                "score_seconds": round(time.perf_counter() - began - train_seconds, 1)}
    if data.std is not None:
        measured["test_mae_original"] = original_scale_mae(scores["test"]["mae_per_channel"],
                                                           data.std)
    if patch_stats and model is not None:
        measured.update(decoded_patch_statistics(model, data.arrays["test"], lookback))
    return measured


def record_of(run: dict, measured: dict, experiment: dict,
              code: str | None = None) -> dict[str, Any]:
    """The JSONL record of a finished run: its row's identity, seed, measures, and the stamp
    of the code that made it (``code``: the commit when the process started)."""
    spec = experiment["models"][run["model"]]
    row = {"experiment": run["experiment"], "dataset": run["dataset"], "model": run["model"],
           "protocol": run["budget"], "horizon": run["horizon"], "lookback": run["lookback"],
           "setting": run["setting"]}
    rate = run["kwargs"].get("compression_rate")
    if isinstance(rate, (int, float)):
        row.update(R=rate, N=math.ceil(run["lookback"] / rate))
    row.update(spec.get("row", {}))
    return {**row, "seed": run["seed"], **measured,
            **{k: spec[k] for k in ("pick", "reference") if k in spec},  # for the table writer
            "commit": code or git_commit(), "date": utc_now(), "key": run_key(run), "run": run}


def is_recorded(run: dict, name: str, records: list[dict]) -> bool:
    """Whether ``records`` hold ``run``: its row's identity (the table's keys) and its seed.
    Records converted from earlier scripts carry no run hash, so the identity is what counts."""
    table = TABLES[name]
    row = record_of(run, {}, EXPERIMENTS[name], code="-")
    identity = tuple(row.get(k) for k in table.keys) + (run["seed"],)
    return identity in {tuple({**table.defaults, **r}.get(k) for k in table.keys)
                        + (r.get("seed"),) for r in records}


def run_in_process(name: str, args: argparse.Namespace) -> None:
    """Soak each selected face (``soak.py``, one record a face), time each selected model's
    predict calls on the panel (``panel.py``, one record a size) or train it on the demo's spike
    task (``run_spike_task``, one record a seed) in this process; what this commit has measured
    (a soak: for as many cycles) is skipped, so a stopped command resumes. With ``--dry-run``
    it prints the plan and runs nothing."""
    import panel
    import soak
    from reinpatch_forecast.cli.demo import run_spike_task

    experiment, code = EXPERIMENTS[name], git_commit()
    results = args.out_dir / f"{name}_runs.jsonl"
    kind = experiment["kind"]
    key = "face" if kind == "soak" else "model"
    seeds = (args.seeds or experiment["seeds"]) if kind == "spike" else [0]
    for model, seed in itertools.product(select_models(experiment, args.models, None), seeds):
        cycles = (args.cycles or experiment["cycles"][model]) if kind == "soak" else None
        recorded = (model, cycles, seed, code) in {(r[key], r.get("cycles"), r["seed"],
                                                    r["commit"]) for r in load_jsonl(results)}
        if args.dry_run:
            print(f"[{name}] {model} seed {seed}{' (recorded)' if recorded else ''}")
            continue
        if recorded:
            continue
        if kind == "soak":
            measured = [soak.soak(model, cycles, experiment["every"][model],
                                  experiment["from_cycle"][model], args.threads)]
        elif kind == "spike":
            result = run_spike_task(seed=seed, **experiment["models"][model]["kwargs"])
            measured = [{"test_mse": result.mse, "near_spike": result.near_spike,
                         "seconds": result.seconds}]
        else:
            measured = panel.panel(model)
        described = experiment["models"][model].get("row", {})  # a face: what a cycle does
        for row in measured:
            append_jsonl({"experiment": name, key: model, **described, "seed": seed, **row,
                          "commit": code, "date": utc_now()}, results)
            shown = {k: v for k, v in row.items() if k != "samples"}
            print(f"[{name}] {model} seed {seed} {shown}", flush=True)
    if not args.dry_run:
        report(name, args.out_dir)


# -- command line ------------------------------------------------------------------------------


def report(name: str, out_dir: Path) -> None:
    """``<name>.csv`` and ``<name>.md``; for ``ltsf`` the markdown is the summary beside
    published numbers, and its every row goes to ``ltsf_rows.md``."""
    recipe = []
    if name == "ltsf":  # recipe rows by their summary names, and their picks of the lookback
        picks = {model: by_lookback(row, 1, len(RECIPE_LOOKBACKS)) for row, models in
                 RECIPE_BY_LOOKBACK.items() for model in models}
        recipe = [{**row, "model": SUMMARY_FROM_RECIPE.get(row["model"], row["model"])}
                  for row in report_rows([{**r, "pick": picks.get(r["model"])} for r in
                                          load_jsonl(out_dir / "recipe_runs.jsonl")],
                                         TABLES["recipe"])
                  if row["model"] in SUMMARY_FROM_RECIPE or row["model"] in RECIPE_BY_LOOKBACK]
    picked = [row for row in recipe if row["model"] in RECIPE_BY_LOOKBACK]
    models = EXPERIMENTS[name].get("models", {})
    # a record takes the picks its model's spec names now (a spec may join a later contest,
    # such as the lookback pick, after some of its runs were recorded)
    records = [{**r, "pick": models[r["model"]]["pick"]}
               if "pick" in models.get(r.get("model"), {}) else r
               for r in load_jsonl(out_dir / f"{name}_runs.jsonl")]
    rows = write_report(name, TABLES[name], records, out_dir,
                        markdown="ltsf_rows.md" if name == "ltsf" else None, extra=picked)
    if name == "ltsf":
        rows = [{**row, "model": SUMMARY_LABELS.get(row["model"], row["model"])} for row in rows
                if row["model"] not in RECIPE_BY_LOOKBACK]
        write_summary(name, "LTSF benchmark", [*rows, *recipe], SUMMARY_MODELS, PUBLISHED,
                      EXPERIMENTS[name]["horizons"], out_dir, rows_file="ltsf_rows.md")
    print(f"[{name}] {len(rows)} rows: {out_dir / (name + '.csv')}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("experiment", choices=[*EXPERIMENTS, "report", "list"])
    parser.add_argument("--datasets", nargs="+", help="names, or `all` (default: the spec's)")
    parser.add_argument("--horizons", nargs="+", help="horizons, or `all`")
    parser.add_argument("--lookback", nargs="+", type=int, help="lookbacks (default: spec's)")
    parser.add_argument("--settings", nargs="+", help="covariate settings (default: spec's)")
    parser.add_argument("--models", nargs="+", help="model names or tags (`list` shows them)")
    parser.add_argument("--require", nargs="+", help="keep models with every one of these tags")
    parser.add_argument("--seeds", nargs="+", type=int)
    parser.add_argument("--budget", choices=sorted(BUDGETS), help="default: the spec's")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    parser.add_argument("--data-dir", default=str(DEFAULT_DATA))
    parser.add_argument("--out-dir", type=Path, default=RESULTS)
    parser.add_argument("--dry-run", action="store_true", help="print the plan, run nothing")
    parser.add_argument("--progress", action="store_true")
    parser.add_argument("--cycles", type=int, help="soak: cycles of each face (default: spec's)")
    args = parser.parse_args(argv)
    if args.experiment == "list":
        for name, experiment in EXPERIMENTS.items():
            print(f"{name}: {', '.join(experiment['models'])}")
        return
    if args.experiment == "report":
        for name in TABLES:
            report(name, args.out_dir)
        return
    import torch
    if args.threads < 1:
        raise SystemExit(f"--threads must be >= 1, got {args.threads}")
    torch.set_num_threads(args.threads)
    name, experiment = args.experiment, EXPERIMENTS[args.experiment]
    if experiment["kind"] in ("soak", "panel", "spike"):
        return run_in_process(name, args)
    runs = plan(name, args)
    results = args.out_dir / f"{name}_runs.jsonl"
    code = git_commit()  # the code this process loaded, wherever the branch moves meanwhile
    data: dict[tuple, Data] = {}

    def recorded(run: dict) -> bool:
        return is_recorded(run, name, load_jsonl(results))

    for run in runs:
        label = " ".join(f"{k}={run[k]}" for k in ("dataset", "horizon", "lookback",
                                                   "setting", "model", "seed"))
        if args.dry_run:
            print(f"[{name}] {label}{' (recorded)' if recorded(run) else ''}")
            continue
        if recorded(run):
            continue  # done, perhaps by another process
        print(f"[{name}] {label} ...", flush=True)
        cell = (run["dataset"], run["lookback"], run["horizon"])
        if cell not in data:
            data[cell] = load_data(experiment, run, args.data_dir)
        tags = set(experiment["models"][run["model"]].get("tags", ()))
        measured = fit_and_score(run, data[cell], args.out_dir / "_ltsf_work", args.progress,
                                 bool(tags & set(experiment.get("patch_stats", ()))))
        append_jsonl(record_of(run, measured, experiment, code), results)
        print(f"[{name}]   {json.dumps({k: v for k, v in measured.items() if 'mse' in k})}",
              flush=True)
    if not args.dry_run:
        report(name, args.out_dir)


if __name__ == "__main__":
    main()
