"""Readout selection: which head reads the patch tokens, measured by patching and compression.

Trains ``ReinPatchModel`` through the LTSF harness (``ltsf.run_one``: the same split, scaler,
budget and all-window evaluation) with every readout of ``reinpatch_forecast.nn.readout`` and
the flatten head, under fixed patchings (uniform, volatility, random) and the learned patcher,
at several compression rates and seeds. The question it answers: does a readout keep a
non-grid patching from costing accuracy (volatility and random close to uniform), and does
uniform itself stay as good as with the flatten head?

Runs are cached in ``benchmarks/results/readout_runs.jsonl`` (flatten-head runs of the LTSF
cache are reused: their keys are the same), so two processes (``--shard 0/2`` and ``1/2``) can
share the work and a stopped run resumes. The report (``readout.md``, ``readout.csv``) gives
mean ± std over seeds and each patcher's gap to uniform under the same readout.

Examples
--------
python benchmarks/readout.py --datasets ETTh1 --horizons 96 --seeds 0 1 2
python benchmarks/readout.py --datasets EPF_FR_BE --horizons 24 --rates 8 32 --shard 0/2
python benchmarks/readout.py --report-only
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (RESULTS, aggregate_seeds, format_mean_std, load_jsonl,  # noqa: E402
                     set_threads, shard, stamp, write_csv, write_markdown)

import ltsf  # noqa: E402

CACHE = RESULTS / "readout_runs.jsonl"
#: Readout variants: name -> (readout, readout_skip). "flatten" runs carry no readout in their
#: key, so they are the flatten-head runs of the LTSF cache.
VARIANTS: dict[str, tuple[str, bool]] = {
    "flatten": ("flatten", False),
    "profile": ("profile", False),
    "profile+skip": ("profile", True),
    "copy+skip": ("copy", True),
    "copy": ("copy", False),
    "interpolate": ("interpolate", False),
    "query": ("query", False),
}
PATCHERS = ("uniform", "volatility", "random", "learned", "foundation")


def patcher_label(spec: dict[str, Any]) -> str:
    """The row's patcher, with the learned settings that differ from the defaults."""
    params = spec["params"]
    extra = {k: params[k] for k in ltsf.LEARNED_EXTRA if k in params}
    if spec["model"] == "learned" and params.get("G", ltsf.DEFAULT_GROUP) != ltsf.DEFAULT_GROUP:
        extra = {"G": params["G"], **extra}
    if not extra:
        return spec["model"]
    return spec["model"] + " [" + ", ".join(f"{k}={v}" for k, v in extra.items()) + "]"


def run_params(patcher: str, rate: int, variant: str,
               learned_extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The ``RunSpec`` params of one run (the LTSF harness's keys for the same run)."""
    params: dict[str, Any] = {"R": rate}
    if patcher == "foundation":  # the shipped patcher, frozen: its file names the run
        params["patcher"] = ltsf.PRETRAINED_SHA256[:10]
    if patcher == "learned":
        extra = dict(learned_extra or {})
        params.update(G=extra.pop("G", ltsf.DEFAULT_GROUP), policy=ltsf.DEFAULT_POLICY, **extra)
    readout, skip = VARIANTS[variant]
    if readout != "flatten":
        params["readout"] = readout
        if skip:
            params["skip"] = True
    return params


def plan(datasets, horizons, patchers, rates, variants, seeds, lookback, settings,
         learned_extra=None):
    """Every run, seed-major so that the first seed of every cell finishes first."""
    specs = []
    for seed in seeds:
        for dataset in datasets:
            for horizon in horizons:
                for rate in rates:
                    for variant in variants:
                        for patcher in patchers:
                            specs.append(ltsf.RunSpec(
                                dataset, horizon, patcher,
                                run_params(patcher, rate, variant, learned_extra),
                                lookback, {**settings, "seed": seed}))
    return specs


def variant_of(params: dict[str, Any]) -> str:
    """The variant name of a run's params."""
    wanted = (params.get("readout", "flatten"), bool(params.get("skip", False)))
    return next(name for name, value in VARIANTS.items() if value == wanted)


def write_report(records: list[dict], out_dir: Path, settings: dict[str, Any]) -> None:
    """``readout.md`` and ``readout.csv`` from the run records of the given training budget."""
    budget = {k: v for k, v in settings.items() if k != "seed"}
    records = [r for r in records
               if {k: v for k, v in r["spec"]["settings"].items() if k != "seed"} == budget
               and r["spec"]["model"] in PATCHERS]

    def key(record):
        spec = record["spec"]
        return (spec["dataset"], spec["horizon"], spec["lookback"], spec["params"]["R"],
                variant_of(spec["params"]), patcher_label(spec))

    for record in records:
        patches = record.get("patches") or {}
        record["grid_distance"] = patches.get("grid_distance")
        record["tokens_used"] = patches.get("tokens_used")
    summary = aggregate_seeds(records, key, ("test_mse", "test_mae", "train_seconds",
                                             "grid_distance", "tokens_used"))
    rows = []
    for (dataset, horizon, lookback, rate, variant, patcher), row in sorted(summary.items()):
        uniform = summary.get((dataset, horizon, lookback, rate, variant, "uniform"))
        gap = (100 * (row["test_mse"] / uniform["test_mse"] - 1)
               if uniform and patcher != "uniform" else None)
        rows.append(dict(dataset=dataset, horizon=horizon, lookback=lookback, R=rate,
                         readout=variant, patcher=patcher, test_mse=row["test_mse"],
                         test_mse_std=row["test_mse_std"], n_seeds=row["n"], seeds=row["seeds"],
                         test_mae=row["test_mae"], gap_to_uniform_pct=gap,
                         train_seconds=row["train_seconds"],
                         grid_distance=row["grid_distance"], tokens_used=row["tokens_used"],
                         uniform_std=uniform["test_mse_std"] if uniform else None))
    write_csv(out_dir / "readout.csv", rows, list(rows[0]) if rows else ["dataset"])
    lines = [stamp("python benchmarks/readout.py"), "",
             "# Readouts: how the head reads the patch tokens", "",
             f"Budget: {budget}. Test MSE on the scaled data over all test windows, mean ± std "
             "over seeds (n); in brackets, the gap to uniform patches under the same readout. "
             "`grid` is the learned patcher's mean distance of a decoded start from the uniform "
             "grid (steps).", ""]
    cells = sorted({(r["dataset"], r["horizon"], r["lookback"], r["R"]) for r in rows})
    lines += _at_a_glance(rows, cells)
    lines += _policy_ablation(rows, cells)
    for dataset, horizon, lookback, rate in cells:
        here = [r for r in rows if (r["dataset"], r["horizon"], r["lookback"], r["R"])
                == (dataset, horizon, lookback, rate)]
        # Learned settings other than the defaults are in the policy ablation above.
        patchers = sorted({r["patcher"] for r in here if " [" not in r["patcher"]},
                          key=lambda p: (PATCHERS.index(p.split(" ")[0]), p))
        lines += [f"## {dataset}, L={lookback}, H={horizon}, R={rate}", "",
                  "| readout | " + " | ".join(patchers) + " |",
                  "|---|" + "---|" * len(patchers)]
        for variant in VARIANTS:
            by_patcher = {r["patcher"]: r for r in here if r["readout"] == variant}
            if not by_patcher:
                continue
            cells_text = []
            for patcher in patchers:
                row = by_patcher.get(patcher)
                if row is None:
                    cells_text.append("–")
                    continue
                text = format_mean_std(row["test_mse"], row["test_mse_std"], row["n_seeds"])
                text += f" (n={row['n_seeds']})"
                if row["gap_to_uniform_pct"] is not None:
                    text += f" [{row['gap_to_uniform_pct']:+.1f} %]"
                if row["grid_distance"] is not None:
                    text += f", grid {row['grid_distance']:.2f}"
                cells_text.append(text)
            lines.append(f"| {variant} | " + " | ".join(cells_text) + " |")
        lines.append("")
    write_markdown(out_dir / "readout.md", lines)


def _gap(value: float | None, reference: float | None) -> str:
    """``+1.2 %``: ``value`` against ``reference``; ``–`` when either is missing."""
    if value is None or reference is None:
        return "–"
    return f"{100 * (value / reference - 1):+.1f} %"


def _at_a_glance(rows: list[dict], cells: list[tuple]) -> list[str]:
    """One line per cell and readout: uniform against the flatten head's uniform, and the
    other patchers against uniform under the same readout (the readout's requirements)."""
    lines = ["## At a glance", "",
             "Per cell and readout: uniform's test MSE (mean over `n` seeds) and its gap to "
             "uniform under the flatten head; the gap of volatility, random and the learned "
             "patcher (default policy) to uniform under the same readout, with the learned "
             "patcher's distance from the grid. A gap smaller than two seed standard "
             "deviations is a tie.", "",
             "| cell | readout | uniform | vs flatten uniform | volatility | random | learned "
             "| learned grid distance |",
             "|---|---|---|---|---|---|---|---|"]
    for cell in cells:
        here = [r for r in rows if (r["dataset"], r["horizon"], r["lookback"], r["R"]) == cell]
        by = {(r["readout"], r["patcher"]): r for r in here}
        flat = by.get(("flatten", "uniform"))
        for variant in VARIANTS:
            uniform = by.get((variant, "uniform"))
            if uniform is None:
                continue
            learned = by.get((variant, "learned"))

            def gap(patcher: str) -> str:
                row = by.get((variant, patcher))
                return "–" if row is None else (
                    f"{_gap(row['test_mse'], uniform['test_mse'])} (n={row['n_seeds']})")

            distance = ("–" if learned is None or learned["grid_distance"] is None
                        else f"{learned['grid_distance']:.2f}")
            mse = format_mean_std(uniform["test_mse"], uniform["test_mse_std"],
                                  uniform["n_seeds"])
            lines.append(
                f"| {cell[0]} H={cell[1]} R={cell[3]} | {variant} | "
                f"{mse} (n={uniform['n_seeds']}) | "
                f"{_gap(uniform['test_mse'], flat['test_mse'] if flat else None)} | "
                f"{gap('volatility')} | {gap('random')} | {gap('learned')} | {distance} |")
    return lines + [""]


def _verdict(row: dict, uniform: dict) -> str:
    """``win``/``loss`` when the learned and uniform means differ by more than two seed
    standard deviations (the larger of the two), else ``tie``."""
    spread = max(row["test_mse_std"] or 0.0, uniform["test_mse_std"] or 0.0)
    if row["n_seeds"] < 2 or uniform["n_seeds"] < 2:
        return "one seed"
    difference = row["test_mse"] - uniform["test_mse"]
    if abs(difference) <= 2 * spread:
        return "tie"
    return "win" if difference < 0 else "loss"


def _policy_ablation(rows: list[dict], cells: list[tuple]) -> list[str]:
    """Every learned setting measured under the default readout (copy+skip), per cell, with
    its gap and verdict against uniform patches under the same readout."""
    lines = ["## Policy ablation (default readout, copy+skip)", "",
             "Every learned-patcher setting measured under the default readout, against uniform "
             "patches under the same readout. A verdict is `win`/`loss` only when the means "
             "differ by more than two seed standard deviations. `grid`: the decode's mean "
             "start distance from the uniform grid (steps); `tokens`: patches used per window "
             "(below the budget only with `budget=at_most`).", "",
             "`foundation` is the shipped pretrained patcher used frozen (zero-shot).", "",
             "| cell | setting | test MSE | vs uniform | verdict | grid | tokens | train s |",
             "|---|---|---|---|---|---|---|---|"]
    for cell in cells:
        here = {r["patcher"]: r for r in rows
                if (r["dataset"], r["horizon"], r["lookback"], r["R"]) == cell
                and r["readout"] == "copy+skip"}
        uniform = here.get("uniform")
        if uniform is None:
            continue
        for patcher in sorted(p for p in here if p.split(" ")[0] in ("learned", "foundation")):
            row = here[patcher]
            mse = format_mean_std(row["test_mse"], row["test_mse_std"], row["n_seeds"])
            grid = "–" if row["grid_distance"] is None else f"{row['grid_distance']:.2f}"
            tokens = "–" if row["tokens_used"] is None else f"{row['tokens_used']:.1f}"
            lines.append(
                f"| {cell[0]} H={cell[1]} R={cell[3]} | {patcher} | {mse} (n={row['n_seeds']}) "
                f"| {row['gap_to_uniform_pct']:+.1f} % | {_verdict(row, uniform)} | {grid} "
                f"| {tokens} | {row['train_seconds']:.0f} |")
    return lines + [""]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=["ETTh1"])
    parser.add_argument("--horizons", nargs="+", type=int, default=[96])
    parser.add_argument("--lookback", type=int, default=96)
    parser.add_argument("--rates", nargs="+", type=int, default=[8])
    parser.add_argument("--patchers", nargs="+", choices=PATCHERS,
                        default=["uniform", "volatility"])
    parser.add_argument("--readouts", nargs="+", choices=list(VARIANTS), default=list(VARIANTS))
    ltsf.add_learned_arguments(parser)
    parser.add_argument("--shard", default=None, help="i/n: run every n-th run from the i-th")
    parser.add_argument("--report-only", action="store_true")
    parser.add_argument("--out-dir", type=Path, default=RESULTS)
    ltsf.add_training_arguments(parser)
    args = parser.parse_args(argv)
    set_threads(args.threads)
    cache = args.out_dir / "readout_runs.jsonl"
    settings = ltsf.training_settings(args, args.seeds[0])
    shared = ltsf.load_cache()  # flatten-head runs made by the LTSF benchmark

    def known() -> dict[str, dict]:
        return {**shared, **{r["key"]: r for r in load_jsonl(cache)}}

    if not args.report_only:
        specs = plan(args.datasets, args.horizons, args.patchers, args.rates, args.readouts,
                     args.seeds, args.lookback, settings, ltsf.learned_settings(args))
        for spec in shard(specs, args.shard):
            if spec.key in known():
                continue
            print(f"[readout] {spec.dataset} H={spec.horizon} {spec.label} ...", flush=True)
            record = ltsf.run_one(spec, args)
            ltsf.append_cache(record, cache)
            print(f"[readout]   test MSE {record['test_mse']:.4f} "
                  f"({record['train_seconds']:.0f} s)", flush=True)
    wanted = {spec.key for spec in plan(args.datasets, args.horizons, args.patchers, args.rates,
                                        args.readouts, args.seeds, args.lookback, settings,
                                        ltsf.learned_settings(args))}
    records = list(load_jsonl(cache)) + [r for k, r in shared.items() if k in wanted]
    write_report(records, args.out_dir, settings)
    print(f"[readout] report: {args.out_dir / 'readout.md'}")


if __name__ == "__main__":
    sys.exit(main())
