"""Experiment specs, as data: what each experiment runs and how its records become a table.

An experiment is a dict: ``kind`` (which runner in ``run.py``), ``datasets``, ``horizons``,
``lookback``, ``models`` (row name -> model spec), ``seeds``, ``budget`` (the training settings)
and the name of its :class:`tables.Table`. A model spec names its ``family`` (``reinpatch``:
a ``reinpatch_forecast.ReinPatchModel``; ``dlinear``, ``nlinear``, ``tsmixer``, ``tide``,
``patchtst``: darts' models; ``repeat``, ``naive``: untrained baselines) and its keyword
arguments; ``pick`` and ``reference`` are copied into every record of the row (see ``tables``).
"""

from __future__ import annotations

import re
from typing import Any

from reinpatch_forecast.patcher_io import PRETRAINED_SHA256
from tables import Table

# -- tables: the columns of the committed CSV reports (a measured column: its mean over seeds) --

TABLES: dict[str, Table] = {
    "ltsf": Table(
        keys=("protocol", "dataset", "horizon", "lookback", "model"),
        columns=("protocol", "dataset", "horizon", "lookback", "model", "test_mse",
                 "test_mse_std", "n_seeds", "seeds", "test_mae", "val_mse", "epochs",
                 "train_seconds", "grid_distance", "one_step_share", "first_length",
                 "last_length", "commit", "date"),
        # the records before lookbacks were compared all ran at L = 96
        defaults={"lookback": 96},
        title="LTSF benchmark, every row (normalised MSE / MAE, all test windows)"),
    "events": Table(
        keys=("protocol", "dataset", "horizon", "setting", "model"),
        columns=("protocol", "dataset", "horizon", "setting", "model", "test_mse",
                 "test_mse_std", "n_seeds", "seeds", "test_mae", "test_mae_original",
                 "val_mse", "epochs", "train_seconds", "grid_distance", "commit", "date"),
        title="Event-rich data: EPF prices and vic_elec demand, with and without covariates"),
    "compression": Table(
        keys=("dataset", "horizon", "lookback", "R", "N", "model"),
        columns=("dataset", "horizon", "lookback", "R", "N", "model", "test_mse",
                 "test_mse_std", "n", "seeds", "ratio", "grid_distance", "one_step_share",
                 "train_seconds", "commit", "date"),
        n="n", ratio="ratio", title="Compression: test MSE against the token budget"),
    "readout": Table(
        keys=("dataset", "horizon", "lookback", "R", "readout", "patcher"),
        columns=("dataset", "horizon", "lookback", "R", "readout", "patcher", "test_mse",
                 "test_mse_std", "n_seeds", "seeds", "test_mae", "gap_to_uniform_pct",
                 "train_seconds", "grid_distance", "tokens_used", "uniform_std", "commit",
                 "date"),
        ratio="gap_to_uniform_pct", gap_percent=True, reference_std="uniform_std",
        title="Readouts: how the head reads the patch tokens"),
    "recipe": Table(
        keys=("protocol", "dataset", "horizon", "lookback", "model"),
        columns=("protocol", "dataset", "horizon", "lookback", "model", "test_mse",
                 "test_mse_std", "n_seeds", "seeds", "val_mse", "val_mse_std", "test_mae",
                 "epochs", "train_seconds", "grid_distance", "commit", "date"),
        std=("test_mse", "val_mse"),
        title="Training recipe: validation and test MSE of the settings a recipe picks from"),
    "soak": Table(
        keys=("face", "cycle_does", "cycles", "from_cycle", "verdict"),
        columns=("face", "cycle_does", "cycles", "from_cycle", "rss_mb_from", "rss_mb_to",
                 "rss_growth_mb", "rss_trend_mb_per_100", "fds_from", "fds_to",
                 "objects_growth", "leftovers", "forecasts_differ", "verdict", "commit",
                 "date"), std=(), n="runs",
        title="Soak: RSS (MiB) and open descriptors over fit / predict / save / load cycles "
              "(target: under 50 MB RSS growth, no descriptor growth, nothing left behind)"),
    "spike": Table(keys=("model",), columns=("model", "test_mse", "test_mse_std", "n_seeds",
                                             "seeds", "near_spike", "seconds", "commit", "date"),
                   title="The demo's spike task: test MSE after 200 steps of 64 windows"),
    "panel": Table(
        keys=("model", "series"),
        columns=("model", "series", "predict_s", "ms_per_series", "rss_before_mb",
                 "peak_rss_mb", "fit_s", "line_ms_per_series", "line_fixed_s",
                 "line_worst_gap_pct", "commit", "date"), std=(), n="runs",
        title="Many-series prediction: one predict call for the first n of 5,000 short series "
              "(a global model fitted on 200 of them; seconds, MiB)"),
}

# -- training budgets --------------------------------------------------------------------------

#: ``reduced``: the tables' default budget (2048 most recent training windows, 4 epochs);
#: ``full``: the standard LTSF protocol (every training window, up to 10 epochs).
BUDGETS: dict[str, dict[str, Any]] = {
    "reduced": {"epochs": 4, "patience": 2, "batch_size": 32, "lr": 1e-3,
                "max_train_windows": 2048},
    "full": {"epochs": 10, "patience": 3, "batch_size": 32, "lr": 1e-3,
             "max_train_windows": None},
}

# -- models ------------------------------------------------------------------------------------

BACKBONE = {"d_model": 64, "n_heads": 4, "n_layers": 2, "dropout": 0.1}
TUNING_RATES = (4, 8, 16, 24)
PEER_LRS = (1e-3, 1e-4)
PEERS = ("dlinear", "nlinear", "tsmixer")
DLINEAR_SHARED_LRS = (5e-3, 1e-3, 1e-4)
#: PatchTST's published sizes (Nie et al., ICLR 2023, its supervised scripts) in
#: neuralforecast's names: the small model on ETTh1/ETTh2, the large one elsewhere; patch 16,
#: stride 8, batch 128 everywhere.
PATCHTST_SMALL = {"hidden_size": 16, "n_heads": 4, "encoder_layers": 3,
                  "linear_hidden_size": 128, "dropout": 0.3, "fc_dropout": 0.3,
                  "head_dropout": 0.0, "patch_len": 16, "stride": 8}
PATCHTST_LARGE = {**PATCHTST_SMALL, "hidden_size": 128, "n_heads": 16,
                  "linear_hidden_size": 256, "dropout": 0.2, "fc_dropout": 0.2}
PATCHTST_SIZES = {"ETTh1": PATCHTST_SMALL, "ETTh2": PATCHTST_SMALL, "ETTm1": PATCHTST_LARGE,
                  "ETTm2": PATCHTST_LARGE, "weather": PATCHTST_LARGE}
TIDE = {"hidden_size": 64}


def reinpatch(tags: list[str], **kwargs: Any) -> dict[str, Any]:
    """A ReinPatch model spec: ``ReinPatchModel`` of the backbone sizes and ``kwargs``."""
    return {"family": "reinpatch", "kwargs": {**BACKBONE, **kwargs}, "tags": tags}


def tuned(group: str, row: str) -> dict[str, Any]:
    """The ``pick`` of a candidate of a row tuned over :data:`TUNING_RATES`."""
    return {"group": group, "row": row, "of": len(TUNING_RATES), "keep": True}


def peer(family: str, lr: float, kwargs: dict | None = None, label: str | None = None,
         rates: tuple[float, ...] = PEER_LRS) -> dict[str, Any]:
    """A darts peer at one learning rate, picked on validation among ``rates``; ``label``
    names its rows (default the family)."""
    label = label or family
    pick = {"group": label, "of": len(rates), "keep": False,
            "row": f"{label} (lr={lr:g})", "partial_row": f"{label} (lr={lr:g}, untuned)"}
    tag = re.sub(r"\W+", "_", label)  # `--models dlinear_shared_weights` runs every rate
    return {"family": family, "lr": lr, "kwargs": dict(kwargs or {}), "tags": [tag],
            "pick": pick}


def ltsf_models() -> dict[str, dict]:
    """The LTSF table's ReinPatch rows."""
    rows: dict[str, dict] = {}
    for rate in TUNING_RATES:
        rows[f"uniform R={rate}"] = {
            **reinpatch(["uniform"], patcher="uniform", compression_rate=rate),
            "pick": tuned("uniform tuned", f"uniform tuned (R={rate})")}
        name = "learned" if rate == 8 else f"learned R={rate}"
        rows[name] = {
            **reinpatch(["learned_tuned"] + (["learned"] if rate == 8 else []),
                        patcher="learned", compression_rate=rate),
            "pick": tuned("learned tuned", f"learned tuned (R={rate})")}
    for patcher in ("random", "volatility"):
        rows[patcher] = reinpatch([patcher], patcher=patcher, compression_rate=8)
    rows.update({
        "foundation (zero-shot)": reinpatch(["foundation"], patcher="pretrained",
                                            compression_rate=8),
        "learned (init from foundation)": reinpatch(
            ["learned_init"], patcher="learned", patcher_init="pretrained", compression_rate=8),
        "learned L2 (R=8,2)": reinpatch(["learned_l2"], patcher="learned", levels=2,
                                        compression_rate=[8, 2]),
        "uniform L2 (R=8,2)": reinpatch(["uniform_l2"], patcher="uniform", levels=2,
                                        compression_rate=[8, 2]),
    })
    return rows


#: The small patcher (width 8, 3 blocks; G = 8 samples for 32 series per step) beside the
#: ``learned`` records up to commit 6191e1b (32 wide, 4 blocks, every series scored, G = 4).
PRICE_ROW = {
    "learned (patcher 8x3, G=8, 32 series)": reinpatch(
        # 32 of a batch's 224 rows (32 windows of ETTh1's seven channels)
        ["price"], patcher="learned", compression_rate=8, group_size=8, scored_share=1 / 7),
    # the foundation patcher pretrained at those defaults, used frozen
    "foundation (patcher 8x3, 32 series, zero-shot)": reinpatch(
        ["price_foundation"], patcher="pretrained", compression_rate=8),
}

BASELINE_ROWS = {
    "repeat": {"family": "repeat", "tags": ["repeat"]},
    # the LTSF-Linear test loader dropped the last incomplete batch of 32 windows
    "repeat (test truncated: drop_last=32)": {"family": "repeat", "drop_last": 32,
                                              "tags": ["repeat"]},
}


def by_lookback(row: str, candidates: int = 1, lookbacks: int = 0) -> dict[str, Any]:
    """The pick of ``row``: among :data:`LOOKBACKS` (or its first ``lookbacks``; ``candidates``
    runs at each), the run of the lowest validation MSE, per dataset and horizon; the row keeps
    its ``lookback``."""
    return {"group": row, "row": row, "of": candidates * (lookbacks or len(LOOKBACKS)),
            "keep": True, "over": ["lookback"]}


def patchtst(lr: float) -> dict[str, Any]:
    """darts' ``NeuralForecastModel`` with neuralforecast's PatchTST at its authors' sizes for
    each dataset (``dataset_kwargs``) and batch, at one learning rate picked on validation at
    each lookback, and with the lookback."""
    spec = peer("patchtst", lr)
    spec["pick"] = [spec["pick"], by_lookback("patchtst (L by validation)", len(PEER_LRS))]
    return {**spec, "batch_size": 128, "dataset_kwargs": PATCHTST_SIZES}


def dlinear_shared(lr: float) -> dict[str, Any]:
    """darts' ``DLinearModel`` with one ``(L -> H)`` layer pair shared by the channels, as the
    DLinear paper's LTSF rows (darts' default maps all channels' lookbacks to all channels'
    horizons, one dense ``(L*C) -> (H*C)`` layer), at one learning rate picked on validation
    at each lookback (the paper's ETTh1 rate 5e-3 among them), and with the lookback."""
    label = "dlinear, shared weights"
    spec = peer("dlinear", lr, {"shared_weights": True}, label, DLINEAR_SHARED_LRS)
    spec["pick"] = [spec["pick"],
                    by_lookback(f"{label} (L by validation)", len(DLINEAR_SHARED_LRS))]
    return spec


#: The lookbacks a row chosen by validation picks from.
LOOKBACKS = (96, 336, 512, 720)
LTSF_MODELS = {**BASELINE_ROWS, **ltsf_models(), **PRICE_ROW,
               **{f"{p} lr={lr:g}": peer(p, lr) for p in PEERS for lr in PEER_LRS},
               **{f"patchtst lr={lr:g}": patchtst(lr) for lr in PEER_LRS},
               **{f"dlinear shared lr={lr:g}": dlinear_shared(lr) for lr in DLINEAR_SHARED_LRS},
               # the reproduction check: PatchTST's published runs train up to 100 epochs
               "patchtst (lr=0.0001, 30 epochs)": {
                   "family": "patchtst", "lr": 1e-4, "batch_size": 128, "epochs": 30,
                   "dataset_kwargs": PATCHTST_SIZES, "tags": ["patchtst_long"]}}

EVENT_MODELS = {
    "naive": {"family": "naive", "tags": ["naive"]},
    "repeat": BASELINE_ROWS["repeat"],
    **{k: v for k, v in ltsf_models().items() if k.startswith(("uniform R=", "learned"))
       and "L2" not in k and "foundation" not in k},
    **PRICE_ROW,
    **{f"{p} lr={lr:g}": peer(p, lr, TIDE if p == "tide" else None)
       for p in PEERS + ("tide",) for lr in PEER_LRS},
}

COMPRESSION_MODELS = {
    f"{patcher} R={rate}": {
        **reinpatch([patcher], patcher=patcher, compression_rate=rate),
        "row": {"model": patcher}, "lookbacks": lookbacks,
        **({"reference": "uniform"} if patcher == "learned" else {})}
    for rate, lookbacks in ((4, [96]), (8, [96]), (16, [96, 512]), (32, [96, 512]), (64, [512]))
    for patcher in ("uniform", "learned")
}
# the control: patches of random lengths at the same token budget, at the long lookback
COMPRESSION_MODELS.update({
    f"random R={rate}": {**reinpatch(["random"], patcher="random", compression_rate=rate),
                         "row": {"model": "random"}, "lookbacks": [512]}
    for rate in (16, 32, 64)})

#: The readout table's patchers, under the package's readout (``copy+skip``: the time-aligned
#: copy readout with its per-step skip; its other readouts are archived with their records).
READOUT_PATCHERS = {"uniform": {"patcher": "uniform"}, "volatility": {"patcher": "volatility"},
                    "random": {"patcher": "random"}, "learned": {"patcher": "learned"},
                    "foundation": {"patcher": "pretrained"}}
READOUT_MODELS = {
    f"{patcher} copy+skip R={rate}": {
        **reinpatch([patcher, "copy+skip", f"R={rate}"], compression_rate=rate, **options),
        "row": {"readout": "copy+skip", "patcher": patcher}, "reference": "uniform"}
    for patcher, options in READOUT_PATCHERS.items() for rate in (4, 8, 16, 24, 32)
}

#: The learned patcher's settings that the readout table's policy ablation compares, one at a
#: time, under the default readout at R = 8: row label -> ``ReinPatchModel`` options
#: (``patcher_settings``: a new ``LearnedPatcher`` with these density-policy settings, seeded
#: with the run's seed, trained end to end from the grid as the default one is).
POLICY_SETTINGS = {
    "kl=0.01": {"kl_coef": 0.01},
    "G=8": {"group_size": 8},
    "patcher_lr=0.01": {"patcher_lr": 0.01},
    "sigma=1.0": {"patcher_settings": {"density_sigma": 1.0}},
    "sigma=0.25": {"patcher_settings": {"density_sigma": 0.25}},
    "knots=2": {"patcher_settings": {"density_knots": 2}},
    "knots=8": {"patcher_settings": {"density_knots": 8}},
    "budget=at_most": {"budget": "at_most"},
}
READOUT_MODELS.update({
    f"learned [{label}] R=8": {
        **reinpatch(["learned", "policy_ablation", "copy+skip", "R=8"], patcher="learned",
                    compression_rate=8, **options),
        "row": {"readout": "copy+skip", "patcher": f"learned [{label}]"}, "reference": "uniform"}
    for label, options in POLICY_SETTINGS.items()
})


def _decay(gamma: float, **options: Any) -> dict[str, Any]:
    """Options of a learning rate multiplied by ``gamma`` after every epoch."""
    return {"lr_scheduler_cls": "ExponentialLR", "lr_scheduler_kwargs": {"gamma": gamma}, **options}


#: The recipe that won validation before the weight average (rows named after it vary it).
RECIPE = "Adam, lr x0.8 an epoch, dropout 0.2"
#: The weight average of the package's default: its span grows with the steps taken.
EMA = {"ema": {"decay": 0.995, "warmup": 10}}
NARROW = {"compression_rate": 16, "d_model": 32}  # the network a long lookback asks for
#: Training recipes of the default model (learned patcher, R = 8, KL anchor 0.1 unless a row
#: sets it): row -> ``ReinPatchModel`` options. ``optimizer_cls`` and ``lr_scheduler_cls``
#: name classes of ``torch.optim`` and ``torch.optim.lr_scheduler`` (records hold names);
#: darts steps a scheduler once an epoch.
RECIPES = {
    "Adam, constant lr": {}, "Adam, constant lr, EMA": {"ema": 0.995},
    "Adam, constant lr, EMA warmup": EMA, "dropout 0.2, EMA warmup": {"dropout": 0.2, **EMA},
    "Adam, constant lr, EMA warmup, kl 0.03": {"kl_coef": 0.03, **EMA},  # the package's default
    "Adam, constant lr, EMA warmup, uniform patches": {"patcher": "uniform", **EMA},
    # GRPG scoring an eighth of each batch's rows, the patcher at 6x the backbone's rate
    "Adam, constant lr, EMA warmup, kl 0.03, 1/8 scored, patcher lr 6x": {
        "kl_coef": 0.03, "scored_share": 0.125, "patcher_lr": 6e-3, **EMA},
    # the shipped foundation patcher, frozen; the name keeps each file's records apart
    f"Adam, constant lr, EMA warmup, foundation {PRETRAINED_SHA256[:8]} (frozen)": {
        "patcher": "pretrained", **EMA},
    "Adam, constant lr, EMA warmup, R=16, d_model 32": {**NARROW, **EMA},
    "Adam, constant lr, EMA warmup, kl 0.03, R=16, d_model 32": {"kl_coef": 0.03, **NARROW, **EMA},
    "Adam, constant lr, EMA warmup, R=16, d_model 32, uniform patches": {
        **NARROW, "patcher": "uniform", **EMA},
    # sktime's fit has no validation: how far do the epochs after the 20th move the average
    "Adam, constant lr, EMA warmup, 30 epochs, no early stopping": {**EMA, "epochs": 30,
                                                                    "patience": 30},
    "Adam, lr x0.5 an epoch": _decay(0.5),
    "Adam, lr x0.8 an epoch": _decay(0.8), "Adam, lr 3e-4": {"lr": 3e-4},
    "AdamW (weight decay 0.05)": {"optimizer_cls": "AdamW",
                                  "optimizer_kwargs": {"weight_decay": 0.05}},
    **{f"dropout {p}": {"dropout": p} for p in (0.2, 0.3)}, "step width 4": {"step_width": 4},
    **{f"Adam, lr x0.8 an epoch, dropout {p}": _decay(0.8, dropout=p) for p in (0.2, 0.3)},
    # the recipe with uniform patches, fewer tokens, a lower rate, narrower step features
    f"uniform, {RECIPE.removeprefix('Adam, ')}": _decay(0.8, dropout=0.2, patcher="uniform"),
    # a later option wins: "dropout 0.3" replaces the recipe's 0.2
    **{f"{RECIPE}, {name}": _decay(0.8, **{"dropout": 0.2, **options}) for name, options in [
        ("R=16", {"compression_rate": 16}), ("lr 3e-4", {"lr": 3e-4}), ("EMA", {"ema": 0.995}),
        ("uniform patches, EMA", {"patcher": "uniform", "ema": 0.995}),
        *((f"step width {k}", {"step_width": k}) for k in (1, 2)),
        *((f"d_model {d}", {"d_model": d}) for d in (32, 128)),
        # the long lookback: fewer tokens, a narrower network, a weight average
        *((f"R=16, d_model {d}", {"compression_rate": 16, "d_model": d}) for d in (16, 32)),
        ("R=16, d_model 32, uniform patches",
         {"compression_rate": 16, "d_model": 32, "patcher": "uniform"}),
        ("R=16, d_model 32, EMA", {"compression_rate": 16, "d_model": 32, "ema": 0.995}),
        # PatchTST's ETTh1 width and dropout at the long lookback
        ("R=16, d_model 16, dropout 0.3", {"compression_rate": 16, "d_model": 16,
                                           "dropout": 0.3}),
        ("R=16, d_model 16, dropout 0.3, EMA", {"compression_rate": 16, "d_model": 16,
                                                "dropout": 0.3, "ema": 0.995}),
        ("R=16, EMA", {"compression_rate": 16, "ema": 0.995}),
        # every epoch of the budget, early stopping off: its validation curve shows what any
        # patience would have picked
        ("patience 10", {"patience": 10}),
        # a fit without validation keeps its last epoch: how far do later epochs move it
        ("30 epochs, no early stopping", {"epochs": 30, "patience": 30}),
        ("R=16, d_model 32, patience 10", {"compression_rate": 16, "d_model": 32,
                                           "patience": 10})]},
    # PatchTST's training: a constant 1e-4, batch 128, more epochs
    "Adam 1e-4, batch 128, 30 epochs, R=16, d_model 32, uniform patches": {
        "lr": 1e-4, "batch_size": 128, "epochs": 30, "dropout": 0.2, "compression_rate": 16,
        "d_model": 32, "patcher": "uniform"},
}
#: Options of a recipe row that replace its budget's (``run.py`` puts them in the training).
TRAINING_OVERRIDES = ("patience", "epochs", "batch_size")
#: Options of a recipe row that set the training, not the model (a run keeps ``lr`` itself).
TRAINING_OPTIONS = ("lr", *TRAINING_OVERRIDES)
RECIPE_MODELS = {name: {**reinpatch(["recipe"], **{"patcher": "learned", "compression_rate": 8,
                                                   "lr_scheduler_cls": None,  # darts' constant
                                                   "kl_coef": 0.1,  # the study's anchor
                                                   **{k: v for k, v in options.items()
                                                      if k not in TRAINING_OPTIONS}}),
                        **{k: options[k] for k in TRAINING_OPTIONS if k in options}}
                 for name, options in RECIPES.items()}

# -- published numbers beside ours -------------------------------------------------------------

#: Test MSE published by other code (multivariate, normalised), for H = 96, 192, 336, 720, or
#: an average over them (``{"avg": x}``): row label -> (lookback, {dataset: numbers}).
PUBLISHED: dict[str, tuple[str, dict[str, Any]]] = {
    "EntroPE (its scripts)": ("96", {
        "ETTh1": [0.3788, 0.4222, 0.4594, 0.4406], "ETTh2": [0.2948, 0.3787, 0.3879, 0.4137],
        "ETTm1": [0.3153, 0.3627, 0.3880, 0.4496], "ETTm2": [0.1803, 0.2462, 0.3085, 0.4066],
        "weather": [0.1673, 0.2123, 0.2677, 0.3412]}),
    "PatchTST (iTransformer's re-run, every window)": ("96", {
        "ETTh1": [0.414, 0.460, 0.501, 0.500], "ETTh2": [0.302, 0.388, 0.426, 0.431],
        "ETTm1": [0.329, 0.367, 0.399, 0.454], "ETTm2": [0.175, 0.241, 0.305, 0.402],
        "weather": [0.177, 0.225, 0.278, 0.354]}),
    "DLinear (iTransformer's re-run, every window)": ("96", {
        "ETTh1": [0.386, 0.437, 0.481, 0.519], "ETTh2": [0.333, 0.477, 0.594, 0.831],
        "ETTm1": [0.345, 0.380, 0.413, 0.474], "ETTm2": [0.193, 0.284, 0.369, 0.554],
        "weather": [0.196, 0.237, 0.283, 0.345]}),
    "TimeXer (its paper)": ("96", {"ETTh1": [0.382, 0.429, 0.468, 0.469],
                                   "ETTm1": [0.318, 0.362, 0.395, 0.452]}),
    "CycleNet (5 seeds, every window)": ("96", {"ETTh1": {"avg": 0.433}, "ETTm1": {"avg": 0.386},
                                                "weather": {"avg": 0.255}}),
    "PatchTST/42 (its paper; test set truncated)": ("336", {
        "ETTh1": [0.375, 0.414, 0.431, 0.449], "ETTh2": [0.274, 0.339, 0.331, 0.379],
        "ETTm1": [0.290, 0.332, 0.366, 0.420], "ETTm2": [0.165, 0.220, 0.278, 0.367],
        "weather": [0.152, 0.197, 0.249, 0.320]}),
    "DLinear (its paper, L = 336; test set truncated)": ("336", {
        "ETTh1": [0.375, 0.405, 0.439, 0.472], "ETTh2": [0.289, 0.383, 0.448, 0.605],
        "ETTm1": [0.299, 0.335, 0.369, 0.425], "ETTm2": [0.167, 0.224, 0.281, 0.397],
        "weather": [0.176, 0.220, 0.265, 0.323]}),
    "PatchTST/64 (its paper; test set truncated)": ("512", {
        "ETTh1": [0.370, 0.413, 0.422, 0.447], "ETTm1": {"avg": 0.353},
        "weather": {"avg": 0.226}}),
    "PatchTST, lookback searched (TFB)": ("searched", {
        "ETTh1": {"avg": 0.419}, "ETTm1": {"avg": 0.349}, "weather": {"avg": 0.224}}),
    "DUET, lookback searched (TFB)": ("searched", {
        "ETTh1": {"avg": 0.398}, "ETTm1": {"avg": 0.338}, "weather": {"avg": 0.218}}),
    "ReinPatch paper (setting not stated)": ("?", {
        "ETTh1": {"avg": 0.397}, "ETTm1": {"avg": 0.347}, "ETTm2": {"avg": 0.262}}),
}
#: The soak's faces; ``row`` goes into every record (what one cycle does).
SOAK_FACES = {
    "darts": {"family": "reinpatch", "row": {"cycle_does": (
        "`ReinPatchModel(...).fit`, `predict`, `save`, `ReinPatchModel.load`, predict again "
        "(identical)")}},
    "sktime": {"family": "reinpatch", "row": {"cycle_does": (
        "`ReinPatchForecaster` `fit`, `update`, `predict`, `predict_quantiles`, pickle round "
        "trip (identical)")}},
    "cli": {"family": "reinpatch", "row": {"cycle_does": (
        "`fit` and `predict` subprocesses on a CSV (20 cycles, not 200: each command starts an "
        "interpreter); nothing left behind, forecasts identical")}},
}

#: Rows of the recipe table the LTSF summary shows, under the names it gives them: the package's
#: default recipe (its own experiment, the recipe search's), learned and uniform.
SUMMARY_FROM_RECIPE = {
    "Adam, constant lr, EMA warmup, kl 0.03, 1/8 scored, patcher lr 6x": "learned (default recipe)",
    "Adam, constant lr, EMA warmup, kl 0.03": "learned (default recipe, 1/4 scored, patcher lr 3x)",
    "Adam, constant lr, EMA warmup": "learned (default recipe, kl 0.1)",
    "Adam, constant lr, EMA warmup, uniform patches": "uniform (default recipe)",
    "Adam, constant lr, EMA warmup, R=16, d_model 32":
        "learned (default recipe, kl 0.1, R=16, d_model 32)",
    "Adam, constant lr, EMA warmup, kl 0.03, R=16, d_model 32":
        "learned (default recipe, R=16, d_model 32)",
    "Adam, constant lr, EMA warmup, R=16, d_model 32, uniform patches":
        "uniform (default recipe, R=16, d_model 32)"}
#: Summary rows picked by validation among recipe rows over :data:`RECIPE_LOOKBACKS` (each
#: must have run): the package's defaults at L = 96, the narrow network at the long lookbacks.
RECIPE_LOOKBACKS = (96, 336, 512)
RECIPE_BY_LOOKBACK = {
    "learned (L by validation)": (
        "Adam, constant lr, EMA warmup, kl 0.03, 1/8 scored, patcher lr 6x",
        "Adam, constant lr, EMA warmup, kl 0.03, R=16, d_model 32"),
    "uniform (L by validation)": (
        "Adam, constant lr, EMA warmup, uniform patches",
        "Adam, constant lr, EMA warmup, R=16, d_model 32, uniform patches")}
#: LTSF rows the summary names by the recipe they trained with (constant rate, dropout 0.1, no
#: weight average: the package's defaults when they ran).
SUMMARY_LABELS = {"learned": "learned (no weight average)",
                  "uniform R=8": "uniform (no weight average)"}
#: Our rows the summary shows (picked rows by their row name; peers by family).
SUMMARY_MODELS = (*SUMMARY_FROM_RECIPE.values(), *SUMMARY_LABELS.values(),
                  "learned (L by validation)",
                  "uniform (L by validation)", "patchtst", "patchtst (lr=0.0001, 30 epochs)",
                  "patchtst (L by validation)", "dlinear", "dlinear, shared weights",
                  "dlinear, shared weights (L by validation)", "tsmixer", "repeat")

# -- experiments -------------------------------------------------------------------------------

LTSF_DATASETS = ["ETTh1", "ETTh2", "ETTm1", "ETTm2", "weather"]
EXPERIMENTS: dict[str, dict[str, Any]] = {
    "ltsf": {
        "kind": "forecast", "data": "ltsf", "datasets": LTSF_DATASETS,
        "default_datasets": ["ETTh1"], "horizons": [96, 192, 336, 720],
        "default_horizons": [96], "lookback": 96, "seeds": [0], "budget": "reduced",
        "models": LTSF_MODELS,
        "default_models": ["repeat", "learned", "uniform", "random", "volatility", *PEERS],
        "patch_stats": ["learned", "learned_tuned", "learned_init", "learned_l2", "foundation",
                        "price", "price_foundation"]},
    "events": {
        "kind": "forecast", "data": "events", "datasets": ["EPF_FR_BE", "vic_elec"],
        "horizons": {"EPF_FR_BE": [24], "vic_elec": [48, 336]},
        "lookback": {"EPF_FR_BE": 168, "vic_elec": 336}, "season": {"EPF_FR_BE": 24,
                                                                    "vic_elec": 48},
        "settings": ["target", "covariates"], "seeds": [0, 1, 2], "budget": "reduced",
        "max_train_windows": {"EPF_FR_BE": 2048, "vic_elec": 8192}, "models": EVENT_MODELS,
        "default_models": ["learned", "learned_tuned", "uniform", "naive", "repeat", *PEERS,
                           "tide"],
        "patch_stats": ["learned", "learned_tuned", "price", "price_foundation"]},
    "compression": {
        "kind": "forecast", "data": "ltsf", "datasets": ["ETTh1", "ETTm1", "EPF_FR_BE"],
        "default_datasets": ["ETTh1", "ETTm1"], "horizons": [96, 336], "lookback": [96, 512],
        "seeds": [0], "budget": "reduced",
        "models": COMPRESSION_MODELS, "default_models": ["uniform", "learned"],
        "patch_stats": ["learned"]},
    "readout": {
        "kind": "forecast", "data": "ltsf",
        "datasets": ["ETTh1", "ETTm1", "EPF_FR_BE", "vic_elec"], "default_datasets": ["ETTh1"],
        "horizons": [96], "lookback": 96, "seeds": [0], "budget": "reduced",
        "models": READOUT_MODELS,
        "default_models": ["uniform", "volatility"], "require": ["R=8"],
        "patch_stats": ["learned", "foundation", "random", "volatility"]},
    "recipe": {
        "kind": "forecast", "data": "ltsf", "datasets": [*LTSF_DATASETS, "EPF_FR_BE", "vic_elec"],
        "horizons": {**{d: [96] for d in LTSF_DATASETS}, "ETTh1": [96, 720], "EPF_FR_BE": [24],
                     "vic_elec": [48]},
        "lookback": {**{d: 96 for d in LTSF_DATASETS}, "EPF_FR_BE": 168, "vic_elec": 336},
        "seeds": [0, 1, 2], "budget": "reduced", "models": RECIPE_MODELS,
        "default_models": ["recipe"], "patch_stats": ["recipe"]},
    "panel": {  # benchmarks/panel.py: ReinPatch at its defaults but a small network, DLinear
        "kind": "panel", "datasets": ["panel"], "seeds": [0],
        "models": {"reinpatch": {"family": "reinpatch"}, "dlinear": {"family": "dlinear"}},
        "default_models": ["reinpatch", "dlinear"]},
    # cli/demo.py's run_spike_task: a row's kwargs reach it (training: TrainingConfig fields)
    # the "learned, ..." variants vary one setting of a quarter scored with the patcher at 3e-3
    # (3x); "learned", the start from the foundation patcher and the last row run at the
    # defaults (an eighth scored, 6x)
    "spike": {"kind": "spike", "datasets": ["spike"], "seeds": [0, 1, 2], "models": {
        # grpg_price: the rows that vary the GRPG settings at the default patcher rate
        name: {"family": "spike", "kwargs": {"patcher": "learned", **kw},
               "tags": ["grpg_price"] if "training" in kw and "patcher_lr" not in kw else []}
        for name, kw in [
            ("uniform", {"patcher": "uniform"}), ("learned", {}),
            (f"foundation {PRETRAINED_SHA256[:8]} (frozen)", {"patcher": "pretrained"}),
            (f"learned, init from foundation {PRETRAINED_SHA256[:8]}",
             {"patcher_init": "pretrained"}),
            ("learned, dropout 0.2", {
                "backbone": {"d_model": 32, "n_layers": 1, "dropout": 0.2},
                "training": {"scored_share": 0.25}, "patcher_lr": 3e-3}),
            *((f"learned, {name}", {"training": {"scored_share": 0.25, **training},
                                    "patcher_lr": 3e-3}) for name, training in [
                ("scored share 0.25", {}),
                ("kl 0.1", {"kl_coef": 0.1}), ("kl 0.01", {"kl_coef": 0.01}),
                ("G=4", {"group_size": 4}), ("scored share 0.125", {"scored_share": 0.125}),
                ("scored share 0.0625", {"scored_share": 0.0625})]),
            ("learned, scored share 0.0625, patcher lr 6x",
             {"training": {"scored_share": 0.0625}}),
            # the price of the GRPG step against the spike task: group size and scored share
            # around the defaults (G = 8 for an eighth), at the default patcher rate
            *((f"learned, G={group}, scored share {share}, patcher lr 6x",
               {"training": {"group_size": group, "scored_share": share}})
              for group, share in [(2, 0.125), (4, 0.125), (6, 0.125), (10, 0.125),
                                   (2, 0.25), (4, 0.25), (12, 0.0625), (16, 0.0625),
                                   (16, 0.03125)])]},
        "default_models": ["uniform", "learned"]},
    "soak": {  # benchmarks/soak.py: the faces are its models, one process each
        "kind": "soak", "datasets": ["sine"], "seeds": [0], "models": SOAK_FACES,
        "default_models": list(SOAK_FACES),
        "cycles": {"darts": 200, "sktime": 200, "cli": 20},
        "every": {"darts": 10, "sktime": 10, "cli": 1},
        # the CLI parent imports everything before cycle 0 and only starts processes
        "from_cycle": {"darts": 20, "sktime": 20, "cli": 1}},
}
