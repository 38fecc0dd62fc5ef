"""LTSF benchmark: ReinPatch against tuned uniform patches, heuristics and darts peers.

One command trains and evaluates every model under the standard LTSF protocol (the split and
train-only scaler of ``reinpatch_forecast.data``; ``_protocol.py``: MSE/MAE over *all*
stride-1 test windows, each forecast by the model's darts ``predict``), with early stopping on
validation MSE. Every finished run is appended to a cache
(``benchmarks/results/ltsf_runs.jsonl``), so a stopped run resumes and the table fills over
several sessions; the report is rebuilt from the cache at the end of every run. Runs of several
seeds (``--seeds``) are reported as mean ± std.

Learned rows name their policy: ``learned`` is the package's default policy (density),
``learned [offset]`` the offset policy, ``learned [topk] (v1 ablation)`` the first policy run
with the v2 training step. Runs of the first version (a commit before ``bc2ea1b``) stay in the
cache and are reported as ``learned v1 (topk)``.

Examples
--------
python benchmarks/ltsf.py --profile quick                      # ETTh1, H=96
python benchmarks/ltsf.py --datasets ETTh1 ETTh2 --horizons 96 192 336 720
python benchmarks/ltsf.py --datasets ETTh1 --horizons 96 --models learned uniform \\
    --policy offset density topk --seeds 0 1 2
python benchmarks/ltsf.py --report-only                        # rebuild the tables
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (DEFAULT_DATA, POLICY_V2_COMMIT, RESULTS, append_jsonl,  # noqa: E402
                     commit_predates, decoded_patch_statistics, format_mean_std, git_commit,
                     load_jsonl, mean_std, set_threads, utc_now, write_csv, write_markdown)
from _protocol import darts_predict_fn, evaluate_windows, repeat_forecast  # noqa: E402

from reinpatch_forecast._lightning import quiet_trainer_kwargs  # noqa: E402
from reinpatch_forecast.patcher_io import PRETRAINED_SHA256  # noqa: E402
from reinpatch_forecast.nn import DEFAULT_POLICY  # noqa: E402

CACHE = RESULTS / "ltsf_runs.jsonl"

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
POLICIES = ("offset", "density", "topk")
DEFAULT_GROUP = 4  # ReinPatchModel's group_size
V1_GROUP = 8  # the first version's default group size
#: Model families whose patcher is a learned policy (relabelled "v1" before POLICY_V2_COMMIT).
LEARNED_FAMILIES = ("learned", "learned_init", "learned_l2", "foundation")
DISPLAY_NAMES = {
    "foundation": "foundation (zero-shot)",
    "learned_init": "learned (init from foundation)",
    "learned_l2": f"learned L2 (R={LEVEL2_RATES[0]},{LEVEL2_RATES[1]})",
    "uniform_l2": f"uniform L2 (R={LEVEL2_RATES[0]},{LEVEL2_RATES[1]})",
}
V1_NAMES = {
    "learned": "learned v1 (topk)",
    "foundation": "foundation v1 (topk, zero-shot)",
    "learned_init": "learned v1 (topk, init from foundation)",
    "learned_l2": f"learned v1 (topk) L2 (R={LEVEL2_RATES[0]},{LEVEL2_RATES[1]})",
}
POLICY_SUFFIX = {"density": "", "offset": " [offset]", "topk": " [topk] (v1 ablation)"}
#: The backbones a ReinPatch row can run on: the package's default (the ``copy`` readout with
#: the per-step skip) and the flatten head over token slots, which every run before the
#: time-aligned readout used and whose key therefore carries no readout.
BACKBONES: dict[str, dict[str, Any]] = {"copy+skip": {"readout": "copy", "skip": True},
                                        "flatten": {}}
DEFAULT_BACKBONE = "copy+skip"
#: Suffix of the rows run on the flatten head (kept as an ablation of the backbone).
FLATTEN_SUFFIX = " [flatten head]"
#: Model families built on ReinPatch's backbone (their key names the backbone).
REINPATCH_FAMILIES = LEARNED_FAMILIES + ("uniform", "uniform_l2", "random", "volatility")
#: Learned-row settings that differ from the package's defaults (``learned_settings``).
LEARNED_EXTRA = ("kl", "patcher_lr", "sample_weight", "warmup", "kl_schedule", "sigma", "knots",
                 "budget")
#: Other benchmarks whose cached runs are LTSF runs of this harness (same ``RunSpec`` keys,
#: same fitting and scoring): their runs of the table's configurations are reported here too.
SHARED_CACHES = ("readout_runs.jsonl",)

#: Batch size of the LTSF-Linear test loader whose last incomplete batch was dropped.
REPEAT_DROP_LAST = 32

#: The standard protocol's training budget (issue 16, item 3), against the reduced default.
FULL_PROTOCOL = {"epochs": 10, "patience": 3, "max_train_windows": None}
#: The published row the reduced-budget target compares against.
PATCHTST = "PatchTST@96 (published, other code; iTransformer Table 10)"
#: Rows drawn in the plot (the at-a-glance names), beside the published PatchTST@96.
PLOTTED = ("learned", "uniform R=8", "uniform tuned", "foundation (zero-shot)") + PEERS

# Published numbers (other code), MSE for H = 96, 192, 336, 720; see shared/design.md §4.
PUBLISHED = {
    "Repeat (published, LTSF-Linear; truncated test set)": {
        "ETTh1": (1.295, 1.325, 1.323, 1.339), "ETTh2": (0.432, 0.534, 0.591, 0.588),
        "ETTm1": (1.214, 1.261, 1.283, 1.319), "ETTm2": (0.266, 0.340, 0.412, 0.521),
        "weather": (0.259, 0.309, 0.377, 0.465),
    },
    "EntroPE (published, other code)": {
        "ETTh1": (0.3788, 0.4222, 0.4594, 0.4406), "ETTh2": (0.2948, 0.3787, 0.3879, 0.4137),
        "ETTm1": (0.3153, 0.3627, 0.3880, 0.4496), "ETTm2": (0.1803, 0.2462, 0.3085, 0.4066),
        "weather": (0.1673, 0.2123, 0.2677, 0.3412),
    },
    PATCHTST: {
        "ETTh1": (0.414, 0.460, 0.501, 0.500), "ETTh2": (0.302, 0.388, 0.426, 0.431),
        "ETTm1": (0.329, 0.367, 0.399, 0.454), "ETTm2": (0.175, 0.241, 0.305, 0.402),
        "weather": (0.177, 0.225, 0.278, 0.354),
    },
}


@dataclass
class RunSpec:
    """One model configuration on one dataset and horizon, trained with ``settings``."""

    dataset: str
    horizon: int
    model: str  # family: learned, learned_init, learned_l2, foundation, uniform, uniform_l2,
    # random, volatility, dlinear, nlinear, tsmixer, repeat
    params: dict[str, Any] = field(default_factory=dict)
    lookback: int = 96
    settings: dict[str, Any] = field(default_factory=dict)  # training settings (incl. seed)

    @property
    def key(self) -> str:
        settings = {} if self.model == "repeat" else self.settings
        text = json.dumps([self.dataset, self.lookback, self.horizon, self.model, self.params,
                           settings], sort_keys=True)
        return hashlib.sha1(text.encode()).hexdigest()[:16]

    @property
    def label(self) -> str:
        extra = ",".join(f"{k}={v}" for k, v in sorted(self.params.items()))
        name = f"{self.model}[{extra}]" if extra else self.model
        seed = self.settings.get("seed", 0)
        return f"{name} seed={seed}" if seed else name


def load_cache(path: Path = CACHE) -> dict[str, dict]:
    """The cached runs by key (a later line of the same key wins), with the table's runs found
    in ``SHARED_CACHES`` beside it (a run of this cache wins over theirs)."""
    runs: dict[str, dict] = {}
    for name in SHARED_CACHES:
        runs.update({record["key"]: record for record in load_jsonl(path.parent / name)
                     if is_table_run(record)})
    runs.update({record["key"]: record for record in load_jsonl(path)})
    return runs


def is_table_run(record: dict) -> bool:
    """Whether a run is one this table plans: an LTSF dataset at lookback 96, a ReinPatch row
    on one of ``BACKBONES`` with the learned rows' default settings."""
    spec = record["spec"]
    params = spec["params"]
    if spec["dataset"] not in PROFILES["full"]["datasets"] or spec["lookback"] != 96:
        return False
    if spec["model"] not in REINPATCH_FAMILIES:
        return True
    backbone = {k: params[k] for k in ("readout", "skip") if k in params}
    return (backbone in BACKBONES.values() and not any(k in params for k in LEARNED_EXTRA)
            and params.get("G", DEFAULT_GROUP) == DEFAULT_GROUP
            and params.get("R", 8) in UNIFORM_SIZES + (list(LEVEL2_RATES),))


def append_cache(record: dict, path: Path = CACHE) -> None:
    append_jsonl(record, path)


# -- training and evaluation -------------------------------------------------------------------

#: Training settings every trained run records (they enter its cache key).
SETTINGS = ("epochs", "batch_size", "lr", "patience", "d_model", "n_layers", "dropout", "seed",
            "max_train_windows")


def add_training_arguments(parser: argparse.ArgumentParser) -> None:
    """The training budget shared by ltsf.py and the scripts that reuse its fitting code."""
    parser.add_argument("--data-dir", default=str(DEFAULT_DATA))
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--patience", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--d-model", type=int, default=64)
    parser.add_argument("--n-layers", type=int, default=2)
    parser.add_argument("--dropout", type=float, default=0.1)
    parser.add_argument("--seeds", nargs="+", type=int, default=[0],
                        help="seeds of every trained run (several: mean ± std in the report)")
    parser.add_argument("--max-train-windows", type=int, default=2048,
                        help="train on only the most recent training windows (0: all); the "
                             "default keeps the full table within a 2-core CPU budget")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch CPU threads (1 lets two benchmark processes share 2 cores)")
    parser.add_argument("--progress", action="store_true")


def training_settings(args: argparse.Namespace, seed: int) -> dict[str, Any]:
    """The settings of a run of ``seed`` (``--max-train-windows 0`` recorded as ``None``)."""
    values = {name: getattr(args, name) for name in SETTINGS if name != "seed"}
    values["seed"] = seed
    if values["max_train_windows"] == 0:
        values["max_train_windows"] = None
    return {name: values[name] for name in SETTINGS}


def reinpatch_arguments(spec: RunSpec) -> dict[str, Any]:
    """``ReinPatchModel`` arguments of a ReinPatch run (patcher, levels, policy, sizes)."""
    params, settings = spec.params, spec.settings
    # A run without a readout in its key is a flatten-head run: every cached run before the
    # time-aligned readout became the default was one.
    sizes = dict(d_model=settings["d_model"], n_heads=4, n_layers=settings["n_layers"],
                 dropout=settings["dropout"], readout=params.get("readout", "flatten"),
                 readout_skip=params.get("skip", False))
    rate = params.get("R", 8)
    if spec.model in ("uniform", "random", "volatility"):
        return dict(patcher=spec.model, compression_rate=rate, **sizes)
    if spec.model == "uniform_l2":  # two levels: fine R1, coarse R2 per fine
        return dict(patcher="uniform", levels=2, compression_rate=tuple(rate), **sizes)
    if spec.model == "foundation":  # the shipped patcher, frozen (zero-shot)
        return dict(patcher="pretrained", compression_rate=rate, **sizes)
    learned = dict(compression_rate=tuple(rate) if isinstance(rate, list) else rate,
                   group_size=params.get("G", DEFAULT_GROUP), kl_coef=params.get("kl", 0.1),
                   patcher_lr=params.get("patcher_lr"),
                   sample_loss_weight=params.get("sample_weight", 0.0),
                   patcher_warmup=params.get("warmup", 0),
                   kl_schedule=params.get("kl_schedule", "constant"),
                   budget=params.get("budget", "exact"), **sizes)
    policy_settings = {name: params[key] for key, name in (("sigma", "density_sigma"),
                                                           ("knots", "density_knots"))
                       if key in params}
    if policy_settings and spec.model == "learned":
        # A new patcher with other policy settings: zero-initialised heads, so it starts on
        # the grid as the default one does; GRPG trains it end to end from there.
        from reinpatch_forecast.nn import LearnedPatcher

        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(settings["seed"])
            start = LearnedPatcher(policy=params.get("policy", DEFAULT_POLICY), **policy_settings)
        return dict(patcher="learned", patcher_init=start, **learned)
    if spec.model == "learned_init":  # GRPG end to end from the shipped patcher (its policy)
        return dict(patcher="learned", patcher_init="pretrained", **learned)
    if spec.model in ("learned", "learned_l2"):
        return dict(patcher="learned", levels=2 if spec.model == "learned_l2" else 1,
                    policy=params.get("policy", DEFAULT_POLICY), **learned)
    raise ValueError(f"not a ReinPatch model family: {spec.model!r}")


def _build_model(spec: RunSpec, work_dir: Path, progress: bool = False):
    from darts.models import DLinearModel, NLinearModel, TSMixerModel
    from pytorch_lightning.callbacks import EarlyStopping

    from reinpatch_forecast import ReinPatchModel

    settings = spec.settings
    stopper = EarlyStopping(monitor="val_loss", patience=settings["patience"], mode="min")
    trainer = quiet_trainer_kwargs(progress, callbacks=[stopper])
    common = dict(
        input_chunk_length=spec.lookback, output_chunk_length=spec.horizon,
        batch_size=settings["batch_size"], n_epochs=settings["epochs"],
        random_state=settings["seed"],
        pl_trainer_kwargs=trainer, save_checkpoints=True, force_reset=True,
        # The process id keeps two processes sharing the cache from deleting each other's
        # checkpoints (force_reset) when they happen to train the same configuration.
        model_name=f"ltsf_{spec.key}_{os.getpid()}", work_dir=str(work_dir),
        optimizer_kwargs={"lr": spec.params.get("lr", settings["lr"])},
    )
    if spec.model == "dlinear":
        return DLinearModel(use_reversible_instance_norm=True, **common)
    if spec.model == "nlinear":
        return NLinearModel(use_reversible_instance_norm=True, **common)
    if spec.model == "tsmixer":
        return TSMixerModel(use_reversible_instance_norm=True, **common)
    return ReinPatchModel(**reinpatch_arguments(spec), **common)


def load_splits(dataset: str, lookback: int, horizon: int, data_dir: str):
    """The scaled LTSF splits of a dataset (``reinpatch_forecast.data``).

    An event-rich dataset (``EVENT_DATASETS``: EPF_FR_BE, vic_elec) keeps only its target
    columns; its covariates are not used by this harness yet.
    """
    from reinpatch_forecast.data import EVENT_DATASETS, load_ltsf_frame, prepare_ltsf

    frame = load_ltsf_frame(dataset, data_dir=data_dir)
    event = EVENT_DATASETS.get(dataset)
    targets = None if event is None else event.target_columns
    return prepare_ltsf(frame, dataset, lookback, horizon, target_columns=targets)


def run_one(spec: RunSpec, args, splits=None, keep_model: bool = False):
    """Train (unless Repeat) and evaluate one configuration; returns its cache record.

    ``splits`` (an object with scaled ``train``, ``val`` and ``test`` arrays ``(T, C)``, val
    and test including their lookback rows) defaults to the LTSF splits of ``spec.dataset``
    read from ``args.data_dir``. ``args`` supplies ``out_dir`` (checkpoints) and
    ``progress``. With ``keep_model`` the fitted model (``None`` for Repeat) comes back too.
    """
    from darts import TimeSeries

    if splits is None:
        splits = load_splits(spec.dataset, spec.lookback, spec.horizon, args.data_dir)
    began = time.perf_counter()
    epochs = 0
    model = None
    # The LTSF-Linear code's test loader dropped the last incomplete batch; Repeat run that way
    # checks this pipeline against the published Repeat numbers.
    drop_last = spec.params.get("drop_last")
    if spec.model == "repeat":
        def predict(x):
            return repeat_forecast(x, spec.horizon)
    else:
        work_dir = Path(args.out_dir) / "_ltsf_work"
        work_dir.mkdir(parents=True, exist_ok=True)
        model = _build_model(spec, work_dir, getattr(args, "progress", False))
        train = TimeSeries.from_values(splits.train)
        val = TimeSeries.from_values(splits.val)
        model.fit(train, val_series=val, load_best=True,
                  max_samples_per_ts=spec.settings["max_train_windows"],
                  verbose=getattr(args, "progress", False))
        epochs = int(model.trainer.current_epoch)  # epochs run before stopping
        predict = darts_predict_fn(model, spec.horizon)
    train_seconds = time.perf_counter() - began
    val_scores = evaluate_windows(predict, splits.val, spec.lookback, spec.horizon,
                                  drop_last_batch_size=drop_last)
    test_scores = evaluate_windows(predict, splits.test, spec.lookback, spec.horizon,
                                   drop_last_batch_size=drop_last)
    record = {
        "key": spec.key, "spec": asdict(spec), "label": spec.label,
        "val_mse": val_scores["mse"], "val_mae": val_scores["mae"],
        "test_mse": test_scores["mse"], "test_mae": test_scores["mae"],
        "test_windows": test_scores["n_windows"], "epochs": epochs,
        "train_seconds": round(train_seconds, 1), "commit": git_commit(), "date": utc_now(),
        "settings": spec.settings,
    }
    if spec.model in LEARNED_FAMILIES:
        # Where the decoded boundaries sit (test windows): the grid, or far from it.
        record["patches"] = decoded_patch_statistics(model, splits.test, spec.lookback)
    return (record, model) if keep_model else record


def plan(datasets: list[str], horizons: list[int], models: list[str], lookback: int,
         settings: dict[str, Any], policies: tuple[str, ...] | list[str] = (DEFAULT_POLICY,),
         learned_extra: dict[str, Any] | None = None,
         seeds: list[int] | None = None,
         uniform_sizes: tuple[int, ...] | list[int] = UNIFORM_SIZES,
         learned_sizes: tuple[int, ...] | list[int] = (8,),
         backbone: str = DEFAULT_BACKBONE) -> list[RunSpec]:
    """Every run of the table, cell by cell (dataset, horizon), seed by seed, in the order of
    ``models``; ``seeds`` (default: the seed in ``settings``) replace the settings' seed.
    ReinPatch rows run on ``backbone`` (a name of ``BACKBONES``); the learned rows at every
    patch size of ``learned_sizes`` (all of ``UNIFORM_SIZES``: the ``learned tuned`` row)."""
    seeds = seeds if seeds is not None else [settings.get("seed", 0)]
    specs = []
    for dataset in datasets:
        for horizon in horizons:
            for seed in seeds:
                seeded = {**settings, "seed": seed} if settings else settings
                for model in models:
                    specs += _family_runs(dataset, horizon, model, lookback, seeded, policies,
                                          learned_extra, uniform_sizes, learned_sizes,
                                          BACKBONES[backbone])
    return specs


def _family_runs(dataset: str, horizon: int, model: str, lookback: int,
                 settings: dict[str, Any], policies=(DEFAULT_POLICY,),
                 learned_extra: dict[str, Any] | None = None,
                 uniform_sizes=UNIFORM_SIZES, learned_sizes=(8,),
                 backbone: dict[str, Any] | None = None) -> list[RunSpec]:
    on_backbone = backbone if model in REINPATCH_FAMILIES else {}

    def run(params: dict[str, Any]) -> RunSpec:
        return RunSpec(dataset, horizon, model, {**params, **(on_backbone or {})}, lookback,
                       settings)

    extra = dict(learned_extra or {})
    group = extra.pop("G", DEFAULT_GROUP)
    if model == "uniform":
        return [run({"R": r}) for r in uniform_sizes]
    if model in PEERS:
        return [run({"lr": lr}) for lr in PEER_LRS]
    if model in ("random", "volatility"):
        return [run({"R": 8})]
    if model == "uniform_l2":
        return [run({"R": list(LEVEL2_RATES)})]
    if model == "repeat":  # every test window, and the published (truncated) protocol
        return [run({}), run({"drop_last": REPEAT_DROP_LAST})]
    if model == "foundation":
        # The shipped file's checksum is part of the key: a new patcher, new runs.
        return [run({"R": 8, "patcher": PRETRAINED_SHA256[:10]})]
    if model == "learned_init":  # the shipped patcher's own policy
        return [run({"R": 8, "G": group, "patcher": PRETRAINED_SHA256[:10], **extra})]
    if model == "learned_l2":
        return [run({"R": list(LEVEL2_RATES), "G": group, "policy": policy, **extra})
                for policy in policies]
    if model == "learned":
        return [run({"R": rate, "G": group, "policy": policy, **extra})
                for rate in learned_sizes for policy in policies]
    return [run({})]


# -- report ------------------------------------------------------------------------------------


def is_v1(record: dict) -> bool:
    """Whether a run used the first (top-k) policy version: a learned-family run of a commit
    before ``POLICY_V2_COMMIT`` (where git cannot tell: one with the removed options' keys)."""
    spec = record["spec"]
    if spec["model"] not in LEARNED_FAMILIES:
        return False
    predates = commit_predates(record.get("commit", "unknown"))
    if predates is not None:
        return predates
    params = spec["params"]
    return "draws" in params or (spec["model"] in ("learned", "learned_l2")
                                 and "policy" not in params)


def display_name(record: dict) -> str:
    """The report's name of a run (seeds of one configuration share it)."""
    spec = record["spec"]
    model, params = spec["model"], spec["params"]
    if model == "uniform":
        return f"uniform R={params['R']}{backbone_suffix(params, model)}"
    if model == "repeat" and params.get("drop_last"):
        return f"repeat (test truncated: drop_last={params['drop_last']})"
    if is_v1(record):
        name = V1_NAMES.get(model, model)
        if params.get("draws") == "all":
            name += " [backbone on all G draws]"
        if params.get("fraction") is not None:
            name += f" [groups on {params['fraction']:g} of windows]"
        if "entropy" in params:
            name += f" [entropy_coef {params['entropy']:g}]"
        if model != "foundation" and params.get("G", V1_GROUP) != V1_GROUP:
            name += f" [G={params['G']}]"
        if params.get("prior"):
            name += f" [uniform prior {params['prior']:g}]"
    else:
        name = DISPLAY_NAMES.get(model, model)
        if model in ("learned", "learned_l2"):
            name += POLICY_SUFFIX.get(params.get("policy", DEFAULT_POLICY),
                                      f" [{params.get('policy')}]")
        if model.startswith("learned") and params.get("G", DEFAULT_GROUP) != DEFAULT_GROUP:
            name += f" [G={params['G']}]"
        if "kl" in params:
            name += f" [kl_coef {params['kl']:g}]"
        if model == "learned" and params.get("R", 8) != 8:
            name = name.replace("learned", f"learned R={params['R']}", 1)
        name += backbone_suffix(params, model)
    if "patcher_lr" in params:
        name += f" [patcher_lr {params['patcher_lr']:g}]"
    return name


def backbone_suffix(params: dict[str, Any], model: str) -> str:
    """``FLATTEN_SUFFIX`` for a ReinPatch row run on the flatten head (its params name no
    readout), nothing for the default backbone and the other models."""
    return FLATTEN_SUFFIX if model in REINPATCH_FAMILIES and "readout" not in params else ""


#: Names of the rows a ``tuned`` row picks from, by their patch size (``uniform R=16``,
#: ``learned R=16 [flatten head]``, ``learned`` for R=8); group 1 is the family, 2 the size.
PER_SIZE_NAME = re.compile(r"^(uniform|learned) R=(\d+)(.*)$")


def _tuned_candidate(row: dict) -> tuple[str, int, str] | None:
    """(family, R, suffix) of a per-size uniform or default learned row that a tuned row picks
    from, or ``None``."""
    if row["v1"] or row["family"] not in ("uniform", "learned"):
        return None
    found = PER_SIZE_NAME.match(row["model"])
    if found:
        return found.group(1), int(found.group(2)), found.group(3)
    if row["model"] in ("learned", "learned" + FLATTEN_SUFFIX):
        return "learned", 8, row["model"][len("learned"):]
    return None


def protocol(settings: dict[str, Any] | None) -> str:
    """The settings that make two runs comparable: all but the seed."""
    return json.dumps({k: v for k, v in (settings or {}).items() if k != "seed"}, sort_keys=True)


def run_missing(specs: list[RunSpec], cache: Path, fit: Callable[[RunSpec], dict],
                tag: str) -> None:
    """Fit every spec whose key is not in ``cache`` yet and append its record.

    The cache is re-read before each fit: another process may share it (``--shard``).
    """
    for spec in specs:
        if spec.key in {r["key"] for r in load_jsonl(cache)}:
            continue  # done (perhaps by another process)
        where = "" if spec.lookback == 96 else f" L={spec.lookback}"
        print(f"[{tag}] {spec.dataset} H={spec.horizon}{where} {spec.label} ...", flush=True)
        record = fit(spec)
        append_jsonl(record, cache)
        print(f"[{tag}]   test MSE {record['test_mse']:.4f} ({record['train_seconds']:.0f} s, "
              f"{record['epochs']} epochs)", flush=True)


def cached_runs_like(specs: list[RunSpec], cache: Path) -> tuple[list[dict], dict[str, Any]]:
    """Every cached run with the training settings of ``specs`` (any seed, also of cells not
    planned this time), and those settings without the seed."""
    if not specs:
        return [], {}
    settings = specs[0].settings
    records = [r for r in load_jsonl(cache)
               if protocol(r["spec"]["settings"]) == protocol(settings)]
    return records, {k: v for k, v in settings.items() if k != "seed"}


PATCH_FIELDS = ("first_length", "last_length", "one_step_share", "length_std", "grid_distance")


def _seed(record: dict) -> int:
    return record["spec"]["settings"].get("seed", 0)


def _aggregate(records: list[dict]) -> dict:
    """Scores of one configuration: means over its seeds (a seed run twice: the latest)."""
    by_seed: dict[int, dict] = {}
    for record in sorted(records, key=lambda r: r.get("date", "")):
        by_seed[_seed(record)] = record
    runs = [by_seed[s] for s in sorted(by_seed)]
    test_mse, test_std = mean_std([r["test_mse"] for r in runs])
    row = {
        "test_mse": test_mse, "test_mse_std": test_std,
        "test_mae": mean_std([r["test_mae"] for r in runs])[0],
        "val_mse": mean_std([r["val_mse"] for r in runs])[0],
        "n_seeds": len(runs), "seeds": " ".join(str(s) for s in sorted(by_seed)),
        "epochs": mean_std([r["epochs"] for r in runs])[0],
        "train_seconds": mean_std([r["train_seconds"] for r in runs])[0],
        "commit": "/".join(sorted({r["commit"] for r in runs})),
        "date": max(r.get("date", "") for r in runs),
    }
    patches = [r["patches"] for r in runs if r.get("patches")]
    for name in PATCH_FIELDS:
        row[name] = mean_std([p[name] for p in patches])[0] if patches else None
    return row


def pick_on_validation(candidates: list[list[dict]]) -> int:
    """Index of the candidate (a configuration's runs, one per seed) with the lowest mean
    validation MSE over the seeds every candidate has.

    Candidates with more seeds would otherwise be judged on other draws than the rest (a size
    run at seed 0 only against one with three seeds); where they share no seed, each is judged
    on all of its own.
    """
    if not candidates:
        raise ValueError("no candidate to pick from")
    common = set.intersection(*({_seed(r) for r in group} for group in candidates))
    scores = [_aggregate([r for r in group if _seed(r) in common] or group)["val_mse"]
              for group in candidates]
    return int(np.argmin(scores))


def rows_for_report(runs: dict[str, dict], settings: dict[str, Any] | None = None) -> list[dict]:
    """One row per (dataset, horizon, reported model), tuned uniform chosen on validation.

    Only runs trained with ``settings`` (any seed) are reported (Repeat trains nothing and
    always is), so runs of another protocol in the same cache never mix into one table;
    foundation rows only with the patcher shipped now. The seeds of one configuration make one
    row (mean, and std over seeds). A darts peer run at several learning rates is reported once,
    at the rate with the lower mean validation MSE; ``uniform tuned`` and ``learned tuned``
    likewise pick ``R`` (all three over the seeds every candidate has: ``pick_on_validation``).
    """
    wanted = None if settings is None else protocol(settings)
    by_cell: dict[tuple, list[dict]] = {}
    for record in runs.values():
        spec = record["spec"]
        if (wanted is not None and spec["model"] != "repeat"
                and protocol(spec["settings"]) != wanted):
            continue
        if spec["params"].get("patcher", PRETRAINED_SHA256[:10]) != PRETRAINED_SHA256[:10]:
            continue  # a run with an earlier shipped patcher
        by_cell.setdefault((spec["dataset"], spec["horizon"]), []).append(record)
    rows = []
    for (dataset, horizon), records in sorted(by_cell.items()):
        groups: dict[tuple, list[dict]] = {}
        for record in records:
            spec = record["spec"]
            if spec["model"] in PEERS:
                name = (spec["model"], spec["params"].get("lr"))
            else:
                name = display_name(record)
            protocol_key = "" if spec["model"] == "repeat" else protocol(spec["settings"])
            groups.setdefault((name, protocol_key), []).append(record)

        def row(model: str, group: list[dict]) -> dict:
            family = group[0]["spec"]["model"]
            return dict(dataset=dataset, horizon=horizon, model=model, family=family,
                        v1=is_v1(group[0]), **_aggregate(group))

        peers: dict[tuple, list[tuple[float, list[dict]]]] = {}
        # per (family, backbone suffix, protocol): the rows at each patch size
        sized: dict[tuple[str, str, str], list[tuple[int, dict]]] = {}
        for (name, protocol_key), group in sorted(groups.items(), key=lambda item: str(item[0])):
            if isinstance(name, tuple):  # a peer at one learning rate
                peers.setdefault((name[0], protocol_key), []).append((name[1], group))
                continue
            rows.append(row(name, group))
            candidate = _tuned_candidate(rows[-1])
            if candidate is not None:
                family, rate, suffix = candidate
                sized.setdefault((family, suffix, protocol_key), []).append(
                    (rate, rows[-1], group))
        for (peer, _), tried in sorted(peers.items()):
            lr, group = tried[pick_on_validation([group for _, group in tried])]
            best = row(peer, group)
            tuned = len(tried) == len(PEER_LRS)
            best["model"] = f"{peer} (lr={lr:g})" if tuned else f"{peer} (lr={lr:g}, untuned)"
            rows.append(best)
        for (family, suffix, _), sizes in sorted(sized.items(), key=str):
            if sorted(rate for rate, _, _ in sizes) == sorted(UNIFORM_SIZES):
                rate, best, _ = sizes[pick_on_validation([group for _, _, group in sizes])]
                rows.append({**best, "model": f"{family} tuned (R={rate}){suffix}"})
    return rows


CSV_FIELDS = ["protocol", "dataset", "horizon", "model", "test_mse", "test_mse_std", "n_seeds",
              "seeds",
              "test_mae", "val_mse", "epochs", "train_seconds", "grid_distance",
              "one_step_share", "first_length", "last_length", "commit", "date"]


def _mse(row: dict) -> str:
    return format_mean_std(row["test_mse"], row["test_mse_std"], row["n_seeds"])


def _patches(row: dict) -> str:
    if row.get("grid_distance") is None:
        return ""
    return (f"{row['first_length']:.1f} / {row['last_length']:.1f} / "
            f"{row['one_step_share']:.2f} / {row['grid_distance']:.2f}")


def write_report(runs: dict[str, dict], out_dir: Path = RESULTS,
                 settings: dict[str, Any] | None = None) -> None:
    rows = [dict(row, protocol="reduced") for row in rows_for_report(runs, settings)]
    full_rows = []
    if settings is not None and any(settings.get(k) != v for k, v in FULL_PROTOCOL.items()):
        full_rows = [dict(row, protocol="full")
                     for row in rows_for_report(runs, {**settings, **FULL_PROTOCOL})
                     if row["family"] != "repeat"]
    out_dir.mkdir(parents=True, exist_ok=True)
    write_csv(out_dir / "ltsf.csv", rows + full_rows, CSV_FIELDS)
    horizons_of: dict[str, set] = {}
    for row in rows:
        horizons_of.setdefault(row["dataset"], set()).add(row["horizon"])
    shown = {k: v for k, v in (settings or {}).items() if k != "seed"}
    lines = [
        "# LTSF benchmark (normalised MSE / MAE, all test windows)",
        "",
        f"Generated by `python benchmarks/ltsf.py` from `{out_dir.name}/ltsf_runs.jsonl` on "
        f"{utc_now()}, at commit `{git_commit()}` "
        "(each row also names the commit and date of its own run in `ltsf.csv`).",
        "Protocol: the split and train-only scaler of `reinpatch_forecast.data`, scored by "
        "`benchmarks/_protocol.py` (stride-1 windows forecast by darts `predict`, every test "
        "window, no `drop_last`). Lookback 96. Early stopping on validation MSE with the best "
        "epoch restored. `uniform tuned` picks R in {4, 8, 16, 24} on validation MSE; each darts "
        f"peer (reversible instance norm on) picks its learning rate in {PEER_LRS} on validation "
        "MSE. Several seeds: mean ± std over seeds (choices on the mean validation MSE).",
        f"Training settings shared by every trained model (seeds aside): `{json.dumps(shown)}`.",
        f"Learned rows: `learned` = policy `{DEFAULT_POLICY}` (the default), `learned [offset]`, "
        f"`learned [topk] (v1 ablation)` = the first policy under the v2 training step; G = "
        f"{DEFAULT_GROUP} unless named. Rows marked `v1` are runs of the first version (a "
        f"commit before `{POLICY_V2_COMMIT}`: top-k policy, v1 training step, G = {V1_GROUP} "
        "unless named), kept for reference.",
        "",
    ]
    lines += _at_a_glance(rows, horizons_of)
    lines += _full_protocol(rows, full_rows)
    for dataset in sorted(horizons_of):
        lines += [f"## {dataset}", ""] + _summary(rows, dataset, sorted(horizons_of[dataset]))
        lines += ["", "Decoded patches (learned rows, test windows): mean first / last patch "
                  "length, share of one-step patches, mean distance of a start from the "
                  "uniform grid.", "",
                  "| model | H | test MSE | test MAE | val MSE | seeds | epochs | train s | "
                  "decoded patches | commit |", "|---|---|---|---|---|---|---|---|---|---|"]
        for row in sorted((r for r in rows if r["dataset"] == dataset),
                          key=lambda r: (r["model"], r["horizon"])):
            lines.append(
                f"| {row['model']} | {row['horizon']} | {_mse(row)} | "
                f"{row['test_mae']:.4f} | {row['val_mse']:.4f} | {row['seeds']} | "
                f"{row['epochs']:.3g} | {row['train_seconds']:.0f} | {_patches(row)} | "
                f"{row['commit']} |"
            )
        for source, table in PUBLISHED.items():
            if dataset in table:
                values = ", ".join(
                    f"H={h}: {v}" for h, v in zip((96, 192, 336, 720), table[dataset])
                )
                lines.append(f"\n{source}: {values}")
        lines.append("")
    write_markdown(out_dir / "ltsf.md", lines)
    _plot(rows, out_dir)


def _is_learned_row(row: dict) -> bool:
    return row["family"] in LEARNED_FAMILIES


#: A tuned row's name, whose `` (R=..)`` names what it picked on validation.
TUNED_NAME = re.compile(r"^(uniform|learned) tuned \(R=\d+\)")


def glance_name(row: dict) -> str:
    """The name a row is summarised under: a darts peer or tuned uniform whatever it picked on
    validation in each cell (``dlinear``, ``uniform tuned``), any other row by its model."""
    if TUNED_NAME.match(row["model"]):
        return TUNED_NAME.sub(r"\1 tuned", row["model"])
    if row["family"] in PEERS:
        return row["family"]
    return row["model"]


def _cells(rows: list[dict], name: str) -> dict[tuple[str, int], float]:
    """Test MSE per (dataset, horizon) of the rows summarised as ``name``."""
    return {(r["dataset"], r["horizon"]): r["test_mse"] for r in rows if glance_name(r) == name}


def _averages(rows: list[dict], horizons_of: dict[str, set]) -> dict[str, dict[str, float]]:
    """Average test MSE per name and dataset, for names with every horizon of the dataset."""
    averages: dict[str, dict[str, float]] = {}
    for name in {glance_name(r) for r in rows}:
        cells = _cells(rows, name)
        for dataset, horizons in horizons_of.items():
            values = [cells.get((dataset, h)) for h in sorted(horizons)]
            if None not in values:
                averages.setdefault(name, {})[dataset] = float(np.mean(values))
    return averages


def _published_average(source: str, dataset: str, horizons: set) -> float | None:
    table = PUBLISHED[source].get(dataset)
    if table is None:
        return None
    values = dict(zip((96, 192, 336, 720), table))
    return float(np.mean([values[h] for h in sorted(horizons)]))


#: The horizon every trained row runs with several seeds.
GLANCE_HORIZON = 96


def _horizon_table(rows: list[dict], datasets: list[str], horizon: int) -> list[str]:
    """Test MSE at one horizon per dataset and summarised row (mean ± std over seeds; in
    brackets what a tuned row or peer picked on validation); per-size rows but R=8 left out."""
    cells: dict[str, dict[str, str]] = {}
    for row in rows:
        per_size = PER_SIZE_NAME.match(row["model"])
        if row["horizon"] != horizon or (per_size and per_size.group(2) != "8"):
            continue
        name = glance_name(row)
        cells.setdefault(name, {})[row["dataset"]] = _with_choice(row, name)
    lines = [f"Test MSE at H={horizon} (mean ± std over seeds; in brackets the patch size or "
             "learning rate picked on validation):", "",
             "| model | " + " | ".join(datasets) + " |", "|---|" + "---|" * len(datasets)]
    for name in sorted(cells):
        lines.append(f"| {name} | " + " | ".join(cells[name].get(d, "–") for d in datasets)
                     + " |")
    return lines


def _at_a_glance(rows: list[dict], horizons_of: dict[str, set]) -> list[str]:
    """Average test MSE per dataset and model, win counts of the learned rows, the plot, the
    targets."""
    datasets = sorted(horizons_of)
    averages = _averages(rows, horizons_of)
    lines = ["## At a glance", "",
             "Average test MSE over the horizons of each dataset (only models with every horizon "
             "of that dataset; mean over seeds where there are several; darts peers and tuned "
             "uniform at what they picked on validation per cell). Published rows, in italics, "
             "come from other code and full training; they are not bolded:", "",
             "| model | " + " | ".join(datasets) + " |", "|---|" + "---|" * len(datasets)]
    best = {d: min((v[d] for v in averages.values() if d in v), default=None) for d in datasets}
    for model in sorted(averages):
        cells = []
        for d in datasets:
            value = averages[model].get(d)
            cells.append("–" if value is None else
                         (f"**{value:.4f}**" if value == best[d] else f"{value:.4f}"))
        lines.append(f"| {model} | " + " | ".join(cells) + " |")
    for source in PUBLISHED:
        values = [_published_average(source, d, horizons_of[d]) for d in datasets]
        lines.append(f"| *{source}* | " + " | ".join(
            "–" if v is None else f"*{v:.4f}*" for v in values) + " |")
    lines += [""] + _horizon_table(rows, datasets, GLANCE_HORIZON)

    references = ["uniform R=8", "uniform tuned", "foundation (zero-shot)", *PEERS, "repeat"]
    references = [name for name in references if _cells(rows, name)]
    learned = sorted({glance_name(r) for r in rows if _is_learned_row(r) and not r["v1"]})
    lines += ["", "Wins of the learned rows per cell (lower mean test MSE; ties count as "
              "losses), per dataset in brackets (first-version rows: in the tables below):", "",
              "| model | " + " | ".join(f"vs {name}" for name in references) + " |",
              "|---|" + "---|" * len(references)]
    for model in learned:
        cells = _cells(rows, model)
        lines.append(f"| {model} | " + " | ".join(
            "–" if name == model else _wins(cells, _cells(rows, name))
            for name in references) + " |")

    lines += ["", "Test MSE by horizon of the main rows, beside PatchTST@96's published numbers "
              "(dashed):", "", "![LTSF test MSE by horizon](ltsf.png)"]
    lines += ["", "**Targets** (the default backbone; a dataset's average is over the horizons "
              "both rows have, named where not all four):", "",
              verdict_tuned(_cells(rows, "learned tuned"), _cells(rows, "uniform tuned")),
              verdict_equal_r(_cells(rows, "learned"), _cells(rows, "uniform R=8"))]
    lines += ["", "**Each learned row against uniform R=8 on its backbone** (average test MSE "
              "not above uniform R=8 on each dataset; no cell worse by more than 1 %):", ""]
    targets = [m for m in learned
               if any(r["model"] == m and r["family"] == "learned" for r in rows)
               and not PER_SIZE_NAME.match(m)]
    if not targets:
        lines.append("- no runs of the learned rows yet.")
    for model in targets:
        suffix = FLATTEN_SUFFIX if model.endswith(FLATTEN_SUFFIX) else ""
        reference = _cells(rows, "uniform R=8" + suffix)
        lines.append(f"- {_targets(model, _cells(rows, model), reference)}")
    lines.append("")
    return lines


def dataset_averages(ours: dict[tuple[str, int], float], theirs: dict[tuple[str, int], float]
                     ) -> dict[str, tuple[float, float, list[int]]]:
    """Per dataset: the mean test MSE of both sides over the horizons both have, and those
    horizons."""
    common = sorted(set(ours) & set(theirs))
    averages = {}
    for dataset in sorted({d for d, _ in common}):
        horizons = [h for d, h in common if d == dataset]
        averages[dataset] = (float(np.mean([ours[(dataset, h)] for h in horizons])),
                             float(np.mean([theirs[(dataset, h)] for h in horizons])), horizons)
    return averages


def _averages_detail(averages: dict[str, tuple[float, float, list[int]]]) -> str:
    parts = []
    for dataset, (ours, theirs, horizons) in averages.items():
        where = "" if len(horizons) == 4 else " at H=" + ",".join(str(h) for h in horizons)
        parts.append(f"{dataset} {ours:.4f} vs {theirs:.4f}{where}")
    return "; ".join(parts) or "none"


def verdict_tuned(learned_tuned: dict[tuple[str, int], float],
                  uniform_tuned: dict[tuple[str, int], float], needed: int = 3,
                  n_datasets: int = 5) -> str:
    """Target a (tuned against tuned): learned with R picked on validation at or below uniform
    with R picked on validation on at least ``needed`` of ``n_datasets`` dataset averages;
    ``not met yet`` while the datasets not judged could still meet it."""
    averages = dataset_averages(learned_tuned, uniform_tuned)
    met = [d for d, (ours, theirs, _) in averages.items() if ours <= theirs]
    undecided = n_datasets - len(averages)
    verdict = ("met" if len(met) >= needed else
               "not met yet" if len(met) + undecided >= needed else "NOT met")
    return (f"- a. tuned against tuned: learned (tuned R) at or below uniform (tuned R) on at "
            f"least {needed} of {n_datasets} dataset averages: **{verdict}** — {len(met)} of "
            f"{len(averages)} judged ({_averages_detail(averages)}).")


def verdict_equal_r(learned: dict[tuple[str, int], float], uniform8: dict[tuple[str, int], float],
                    n_datasets: int = 5, tolerance: float = 0.01) -> str:
    """Target b (equal R): learned at or below uniform R=8 on every dataset average and no
    cell worse than uniform R=8 by more than ``tolerance``; ``met so far`` while datasets are
    missing."""
    averages = dataset_averages(learned, uniform8)
    if not averages:
        return "- b. equal R: no cell with both learned and uniform R=8 yet."
    worse = [d for d, (ours, theirs, _) in averages.items() if ours > theirs]
    ratios = {c: learned[c] / uniform8[c] - 1 for c in set(learned) & set(uniform8)}
    worst = max(sorted(ratios), key=ratios.get)
    verdict = ("NOT met" if worse or ratios[worst] > tolerance else
               "met" if len(averages) == n_datasets else "met so far")
    return (f"- b. equal R: learned at or below uniform R=8 on every dataset average, no cell "
            f"more than {100 * tolerance:g} % worse: **{verdict}** — {len(averages)} of "
            f"{n_datasets} datasets judged ({_averages_detail(averages)}); above on "
            f"{', '.join(worse) or 'none'}; worst cell {worst[0]} H={worst[1]} "
            f"{100 * ratios[worst]:+.1f} %.")


#: Target f's cells (full protocol) and the published rows it is judged against.
FULL_PROTOCOL_CELLS = (("ETTh1", 96), ("ETTh1", 192), ("ETTh1", 336), ("ETTh1", 720),
                       ("ETTm1", 96))
ENTROPE = "EntroPE (published, other code)"


def published_mse(source: str, dataset: str, horizon: int) -> float | None:
    """The published test MSE of ``source`` (a key of :data:`PUBLISHED`) in one cell."""
    table = PUBLISHED[source].get(dataset)
    if table is None or horizon not in (96, 192, 336, 720):
        return None
    return table[(96, 192, 336, 720).index(horizon)]


def verdict_full_protocol(learned: dict[tuple[str, int], float], entrope_needed: int = 2) -> str:
    """Target f: under the full protocol, learned below PatchTST@96's published MSE in every
    cell of :data:`FULL_PROTOCOL_CELLS` that ran, and at or below EntroPE's published MSE in
    at least ``entrope_needed`` of them.

    ``NOT met`` once a cell that ran is at or above PatchTST@96, or when every cell ran and
    EntroPE is matched in too few; ``not met yet`` while cells are missing; else ``met``.
    """
    ran = [cell for cell in FULL_PROTOCOL_CELLS if cell in learned]
    above_patchtst = [c for c in ran if learned[c] >= published_mse(PATCHTST, *c)]
    at_entrope = [c for c in ran if learned[c] <= published_mse(ENTROPE, *c)]
    if above_patchtst or (len(ran) == len(FULL_PROTOCOL_CELLS)
                          and len(at_entrope) < entrope_needed):
        verdict = "NOT met"
    elif len(at_entrope) >= entrope_needed and not above_patchtst:
        verdict = "met"
    else:
        verdict = "not met yet"
    detail = "; ".join(
        f"{d} H={h} {learned[(d, h)]:.4f} vs PatchTST@96 {published_mse(PATCHTST, d, h):.3f}, "
        f"EntroPE {published_mse(ENTROPE, d, h):.4f}" for d, h in ran) or "no cell run yet"
    return (f"- f. full protocol: learned below PatchTST@96 (published) in every cell run and "
            f"at or below EntroPE (published) in at least {entrope_needed} of "
            f"{len(FULL_PROTOCOL_CELLS)}: **{verdict}** — {len(ran)} of "
            f"{len(FULL_PROTOCOL_CELLS)} cells run, below PatchTST@96 in "
            f"{len(ran) - len(above_patchtst)}, at or below EntroPE in {len(at_entrope)} "
            f"({detail}).")


def _full_protocol(rows: list[dict], full_rows: list[dict]) -> list[str]:
    """The cells also run under the full protocol, beside their reduced-budget rows and the
    published PatchTST@96 and EntroPE numbers, with target f's verdict."""
    if not full_rows:
        return []
    reduced = {(r["dataset"], r["horizon"], glance_name(r)): r for r in rows}
    lines = ["## Full protocol against the reduced budget", "",
             "The same cells trained on every training window for up to "
             f"{FULL_PROTOCOL['epochs']} epochs (patience {FULL_PROTOCOL['patience']}) instead "
             "of the reduced budget above. Test MSE (in brackets: what was picked on "
             "validation; epochs run; training seconds), beside the published numbers of the "
             "cell (other code, full training):", "",
             "| dataset | H | model | reduced | full | change | epochs (full) | train s (full) | "
             "*PatchTST@96* | *EntroPE* |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for row in sorted(full_rows, key=lambda r: (r["dataset"], r["horizon"], glance_name(r))):
        name = glance_name(row)
        before = reduced.get((row["dataset"], row["horizon"], name))
        full = _with_choice(row, name)
        if before is None:
            then, change = "–", "–"
        else:
            then = _with_choice(before, name)
            change = f"{100 * (row['test_mse'] / before['test_mse'] - 1):+.1f} %"
        published = [published_mse(source, row["dataset"], row["horizon"])
                     for source in (PATCHTST, ENTROPE)]
        shown = " | ".join("–" if v is None else f"*{v:g}*" for v in published)
        lines.append(f"| {row['dataset']} | {row['horizon']} | {name} | {then} | {full} | "
                     f"{change} | {row['epochs']:.3g} | {row['train_seconds']:.0f} | {shown} |")
    learned = {(r["dataset"], r["horizon"]): r["test_mse"] for r in full_rows
               if glance_name(r) == "learned"}
    lines += ["", verdict_full_protocol(learned), ""]
    return lines


def _with_choice(row: dict, name: str) -> str:
    """The row's test MSE, with what it picked on validation in brackets when its model name
    says more than its summary ``name`` (``uniform tuned (R=4)`` -> ``0.4697 [R=4]``)."""
    return _mse(row) + _picked(row, name)


def _picked(row: dict, name: str) -> str:
    """What the row picked on validation, as `` [R=4]``; empty when its model name is ``name``."""
    tuned = TUNED_NAME.match(row["model"])
    if tuned:
        picked = tuned.group(0).partition(" (")[2].rstrip(")")
    else:
        picked = row["model"].partition(" (")[2].rstrip(")") if name != row["model"] else ""
    return f" [{picked}]" if picked else ""


def _wins(cells: dict, reference: dict) -> str:
    common = sorted(set(cells) & set(reference))
    if not common:
        return "–"
    wins = sum(cells[c] < reference[c] for c in common)
    per_dataset = {}
    for dataset, _ in common:
        per_dataset.setdefault(dataset, [0, 0])
    for cell in common:
        per_dataset[cell[0]][0] += cells[cell] < reference[cell]
        per_dataset[cell[0]][1] += 1
    detail = ", ".join(f"{d} {w}/{n}" for d, (w, n) in sorted(per_dataset.items()))
    return f"{wins}/{len(common)} ({detail})"


def _targets(model: str, cells: dict, uniform8: dict) -> str:
    """One sentence per learned row: the two targets against uniform R=8, met or not."""
    common = sorted(set(cells) & set(uniform8))
    if not common:
        return f"`{model}`: no cell with a uniform R=8 run yet."
    parts = []
    met_all = True
    for dataset in sorted({d for d, _ in common}):
        horizons = [h for d, h in common if d == dataset]
        ours = float(np.mean([cells[(dataset, h)] for h in horizons]))
        theirs = float(np.mean([uniform8[(dataset, h)] for h in horizons]))
        met = ours <= theirs
        met_all &= met
        over = "" if len(horizons) > 1 else f" at H={horizons[0]} only"
        parts.append(f"{dataset} {ours:.4f} vs {theirs:.4f}{over} "
                     f"({'met' if met else 'NOT met'})")
    ratios = {c: cells[c] / uniform8[c] - 1 for c in common}
    worst = max(ratios, key=ratios.get)
    within = ratios[worst] <= 0.01
    return (f"`{model}`: average <= uniform R=8 on each dataset: "
            f"{'met' if met_all else 'NOT met'} — {'; '.join(parts)}. No cell worse by > 1 %: "
            f"{'met' if within else 'NOT met'} (worst: {worst[0]} H={worst[1]}, "
            f"{100 * ratios[worst]:+.1f} %; {len(common)} cell{'s' if len(common) > 1 else ''}).")


def _summary(rows: list[dict], dataset: str, horizons: list[int]) -> list[str]:
    """Test MSE pivot (model x horizon) with the average over horizons, published rows below.

    Only models with every horizon of the dataset get an average; the best value of each
    column is in bold. Per-size uniform and learned rows stay in the detail table (the tuned
    rows are here), except R=8, the default budget.
    """
    table: dict[str, dict[int, dict]] = {}
    chosen: dict[tuple[str, int], str] = {}  # the value picked on validation, per cell
    for row in rows:
        per_size = PER_SIZE_NAME.match(row["model"])
        if row["dataset"] != dataset or (per_size and per_size.group(2) != "8"):
            continue
        name = row["model"]
        tuned = TUNED_NAME.match(name)
        if tuned:
            name = glance_name(row)
            chosen[(name, row["horizon"])] = tuned.group(0).partition(" (")[2].rstrip(")")
        elif name.split(" ")[0] in PEERS:
            name, _, picked = name.partition(" (")
            chosen[(name, row["horizon"])] = picked.rstrip(")")
        table.setdefault(name, {})[row["horizon"]] = row
    best = {h: min((v[h]["test_mse"] for v in table.values() if h in v), default=None)
            for h in horizons}
    lines = ["Test MSE (lower is better; bold: best of this repo's runs per column; in brackets "
             "the patch size or learning rate chosen on validation; ± std over seeds):", "",
             "| model | " + " | ".join(f"H={h}" for h in horizons) + " | avg |",
             "|---|" + "---|" * (len(horizons) + 1)]

    def cell(row: dict | None, bold: bool) -> str:
        if row is None:
            return "–"
        text = _mse(row)
        return f"**{text}**" if bold else text

    for model, values in sorted(table.items()):
        complete = all(h in values for h in horizons)
        avg = (f"{float(np.mean([values[h]['test_mse'] for h in horizons])):.4f}"
               if complete else "–")
        cells = []
        for h in horizons:
            row = values.get(h)
            text = cell(row, row is not None and row["test_mse"] == best[h])
            if (model, h) in chosen:
                text += f" [{chosen[(model, h)]}]"
            cells.append(text)
        lines.append(f"| {model} | " + " | ".join(cells) + f" | {avg} |")
    for source, published in PUBLISHED.items():
        if dataset in published:
            values = dict(zip((96, 192, 336, 720), published[dataset]))
            avg = _published_average(source, dataset, set(horizons))
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
    if not datasets:
        return
    fig, axes = plt.subplots(1, len(datasets), figsize=(5 * len(datasets), 4), squeeze=False)
    for ax, dataset in zip(axes[0], datasets):
        for name in PLOTTED:
            points = sorted((r["horizon"], r["test_mse"]) for r in rows
                            if r["dataset"] == dataset and glance_name(r) == name)
            if points:
                ax.plot(*zip(*points), marker="o", label=name)
        published = PUBLISHED[PATCHTST].get(dataset)
        if published is not None:
            ax.plot((96, 192, 336, 720), published, "k--", label="PatchTST@96 (published)")
        ax.set_title(dataset)
        ax.set_xlabel("horizon")
        ax.set_ylabel("test MSE")
    axes[0][-1].legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(out_dir / "ltsf.png", dpi=100)
    plt.close(fig)


def add_learned_arguments(parser: argparse.ArgumentParser) -> None:
    """The learned rows' GRPG settings (``learned_settings`` reads them;
    unset ones keep the defaults)."""
    parser.add_argument("--learned-group", type=int, default=None,
                        help=f"group size G of the learned rows (default {DEFAULT_GROUP})")
    parser.add_argument("--learned-kl", type=float, default=None,
                        help="kl_coef of the learned rows (default 0.1)")
    parser.add_argument("--learned-patcher-lr", type=float, default=None,
                        help="patcher_lr of the learned rows (default 3x --lr)")
    parser.add_argument("--learned-sample-weight", type=float, default=None,
                        help="sample_loss_weight of the learned rows (default 0)")
    parser.add_argument("--learned-warmup", type=int, default=None,
                        help="patcher_warmup of the learned rows (default 0 epochs)")
    parser.add_argument("--learned-kl-schedule", choices=("constant", "linear"), default=None,
                        help="kl_schedule of the learned rows (default constant)")
    parser.add_argument("--learned-budget", choices=("exact", "at_most"), default=None,
                        help="token budget of the learned rows (default exact)")
    parser.add_argument("--learned-sigma", type=float, default=None,
                        help="the density policy's sigma in the learned rows (default 0.5)")
    parser.add_argument("--learned-knots", type=int, default=None,
                        help="the density policy's cells per grid patch (default 4)")


def learned_settings(args) -> dict[str, Any]:
    """Non-default learned-row settings given on the command line (they enter the run key)."""
    extra = {"G": args.learned_group, "kl": args.learned_kl,
             "patcher_lr": args.learned_patcher_lr,
             "sample_weight": args.learned_sample_weight, "warmup": args.learned_warmup,
             "kl_schedule": args.learned_kl_schedule, "sigma": args.learned_sigma,
             "knots": args.learned_knots, "budget": args.learned_budget}
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
    add_training_arguments(parser)
    parser.add_argument("--policy", nargs="+", choices=POLICIES, default=[DEFAULT_POLICY],
                        help=f"policies of the learned and learned_l2 rows: {DEFAULT_POLICY} "
                             "(the default, row 'learned'); any other as row 'learned "
                             "[policy]'; topk is the v1 ablation")
    add_learned_arguments(parser)
    parser.add_argument("--uniform-sizes", nargs="+", type=int, default=list(UNIFORM_SIZES),
                        help="patch sizes R of the uniform rows (default: the tuning grid)")
    parser.add_argument("--learned-sizes", nargs="+", type=int, default=[8],
                        help="patch sizes R of the learned rows (the tuning grid "
                             f"{' '.join(map(str, UNIFORM_SIZES))}: the 'learned tuned' row)")
    parser.add_argument("--backbone", choices=sorted(BACKBONES), default=DEFAULT_BACKBONE,
                        help="backbone of the ReinPatch rows: the default readout, or the "
                             "flatten head (ablation)")
    parser.add_argument("--report-only", action="store_true")
    parser.add_argument("--out-dir", type=Path, default=RESULTS,
                        help="folder of the run cache and the report")
    args = parser.parse_args(argv)
    cache = args.out_dir / "ltsf_runs.jsonl"
    set_threads(args.threads)
    settings = training_settings(args, args.seeds[0])  # the report ignores the seed

    runs = load_cache(cache)
    if not args.report_only:
        datasets = args.datasets or PROFILES[args.profile]["datasets"]
        horizons = args.horizons or PROFILES[args.profile]["horizons"]
        for spec in plan(datasets, horizons, args.models, args.lookback, settings,
                         args.policy, learned_settings(args), args.seeds,
                         args.uniform_sizes, args.learned_sizes, args.backbone):
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
    write_report(runs, args.out_dir, settings)
    print(f"[ltsf] report: {args.out_dir / 'ltsf.md'}")


if __name__ == "__main__":
    sys.exit(main())
