"""Synthetic tasks where boundary placement decides the error (issue target c): every policy
against uniform patches, with the training loop of the synthetic tests.

- ``spike``: the task of ``tests/nn/test_grpg_learns.py`` (Gaussian noise with one spike of
  random amplitude at a random position; the target is the amplitude). Tokens see only patch
  means and positions, so only boundaries around the spike help.
- ``two_scale``: the task of ``tests/nn/test_hierarchy_learns.py`` (level + slow sine + a spike
  train every 8 steps + noise), at six top-level tokens: ``levels=1`` with R = 16 against
  ``levels=2`` with R = (4, 4), for every patcher.

The batch generators, the networks' task settings and the GRPG loop
(``tests/nn/grpg_support.train_by_grpg``: Adam, backbone lr 1e-3, patcher lr 3e-3, one
``training_losses`` call per step) come from the tests; this script runs each variant for
several seeds and reports the MSE on the tests' evaluation batch (2000 windows, seed 1234), the
share of windows with a boundary within one step of the spike (spike task) and the decoded
patches (mean distance of a start from the uniform grid, share of one-step patches).

Writes ``benchmarks/results/synthetic.md`` and ``.csv``; runs are cached in
``synthetic_runs.jsonl`` (a stopped run resumes).

python benchmarks/synthetic.py                 # both tasks, 3 seeds, 300 steps: ~20 min
python benchmarks/synthetic.py --tasks spike --seeds 0
python benchmarks/synthetic.py --quick         # smoke: 10 steps, one seed, scratch folder
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (RESULTS, aggregate_seeds, append_jsonl, format_mean_std,  # noqa: E402
                     git_commit, import_test_module, load_jsonl, patch_statistics, set_threads,
                     stamp, utc_now, write_csv, write_markdown)

TASKS = ("spike", "two_scale")
#: Variant name -> (patcher, policy, patcher options).
VARIANTS = {
    "uniform": ("uniform", "offset", None),
    "random": ("random", "offset", None),
    "offset": ("learned", "offset", None),
    "density": ("learned", "density", None),
    # the spike test's setting (tests/nn/test_grpg_learns.py: SPIKE_DENSITY)
    "density [sigma 1]": ("learned", "density", {"density_knots": 4, "density_sigma": 1.0}),
    "topk": ("learned", "topk", None),
}
DEFAULT_VARIANTS = {
    "spike": ("uniform", "random", "offset", "density", "density [sigma 1]", "topk"),
    "two_scale": ("uniform", "offset", "density", "topk"),
}
EVAL_WINDOWS, EVAL_SEED = 2000, 1234


def task_module(task: str):
    """The test module that defines the task's batch generator and sizes."""
    return import_test_module("test_grpg_learns" if task == "spike" else "test_hierarchy_learns")


def draw_batch(task: str, n: int, generator):
    """Windows ``(n, L, 1)`` and targets ``(n, H, 1)`` (and spike positions for ``spike``)."""
    module = task_module(task)
    if task == "spike":
        return module.spike_batch(n, generator)
    return (*module.two_scale_batch(n, generator), None)


def network_config(task: str, variant: str, levels: int, group: int):
    """The task's network, as its test builds it, with the variant's patcher and policy."""
    from reinpatch_forecast.nn import ReinPatchConfig

    module = task_module(task)
    patcher, policy, options = VARIANTS[variant]
    common = dict(input_length=module.LOOKBACK, output_length=module.HORIZON, patcher=patcher,
                  policy=policy, group_size=group, patcher_options=options, d_model=32,
                  n_heads=4, n_layers=1, dropout=0.0, revin=False)
    if task == "spike":
        return ReinPatchConfig(compression_rate=module.LOOKBACK / module.N_PATCHES,
                               use_resampled=False, local_activation=False, **common)
    rate = module.TWO_LEVEL_RATE if levels == 2 else module.ONE_LEVEL_RATE
    return ReinPatchConfig(compression_rate=rate, levels=levels, resample_points=4, **common)


def run_key(task: str, variant: str, levels: int, steps: int, group: int, seed: int) -> str:
    return json.dumps([task, variant, levels, steps, group, seed])


def run(task: str, variant: str, levels: int, steps: int, group: int, seed: int) -> dict:
    """Train one variant with the tests' GRPG loop and evaluate it."""
    import torch

    from reinpatch_forecast.nn import ReinPatchNetwork

    train_by_grpg = import_test_module("grpg_support").train_by_grpg
    module = task_module(task)
    torch.manual_seed(seed)
    network = ReinPatchNetwork(network_config(task, variant, levels, group))
    began = time.perf_counter()
    train_by_grpg(network, lambda g: draw_batch(task, module.BATCH, g)[:2], steps, seed)
    seconds = time.perf_counter() - began
    network.eval()
    x, y, position = draw_batch(task, EVAL_WINDOWS, torch.Generator().manual_seed(EVAL_SEED))
    with torch.no_grad():
        mse = ((network(x)[..., 0] - y) ** 2).mean().item()
        starts = network.boundaries(x)[:, 0]  # (B, N)
    record = {"key": run_key(task, variant, levels, steps, group, seed), "task": task,
              "variant": variant, "levels": levels, "steps": steps, "group": group,
              "seed": seed, "mse": mse, "target_variance": y.var().item(),
              "train_seconds": round(seconds, 1), "commit": git_commit(), "date": utc_now(),
              **patch_statistics(starts.numpy(), module.LOOKBACK)}
    if position is not None:
        distance = (starts - position[:, None]).abs().min(dim=-1).values
        record["near_spike"] = (distance <= 1).float().mean().item()
    return record


def plan(tasks, variants, levels, steps: int, group: int, seeds) -> list[tuple]:
    """``(task, variant, levels, steps, group, seed)`` of every run."""
    runs = []
    for task in tasks:
        for seed in seeds:
            for level in (levels if task == "two_scale" else (1,)):
                for variant in variants or DEFAULT_VARIANTS[task]:
                    runs.append((task, variant, level, steps, group, seed))
    return runs


FIELDS = ("mse", "near_spike", "grid_distance", "one_step_share", "train_seconds")


def summarise(records: list[dict]) -> list[dict]:
    summary = aggregate_seeds(records, lambda r: (r["task"], r["levels"], r["variant"]), FIELDS)
    rows = []
    for (task, levels, variant), values in summary.items():
        uniform = summary.get((task, levels, "uniform"))
        ratio = values["mse"] / uniform["mse"] if uniform else None
        rows.append({"task": task, "levels": levels, "variant": variant,
                     "ratio": ratio, **values})
    order = {name: i for i, name in enumerate(VARIANTS)}
    return sorted(rows, key=lambda r: (r["task"], r["levels"], order.get(r["variant"], 99)))


def write_report(records: list[dict], out_dir: Path, steps: int, group: int,
                 quick: bool) -> None:
    rows = summarise(records)
    write_csv(out_dir / "synthetic.csv", rows,
              ["task", "levels", "variant", "mse", "mse_std", "n", "seeds", "ratio",
               "near_spike", "grid_distance", "one_step_share", "train_seconds"])
    variance = {r["task"]: r["target_variance"] for r in records}
    command = "python benchmarks/synthetic.py" + (" --quick" if quick else "")
    lines = [
        "# Synthetic tasks: policies against uniform patches", "", stamp(command),
        f"Training: `tests/nn/grpg_support.train_by_grpg` ({steps} steps, G = {group}); tasks, "
        "networks and the evaluation batch (2000 windows, seed 1234) as in "
        "`tests/nn/test_grpg_learns.py` (spike) and `tests/nn/test_hierarchy_learns.py` "
        "(two_scale: levels=1 at R = 16 vs levels=2 at R = (4, 4), six top-level tokens "
        "each). MSE mean ± std over seeds; ratio = MSE / uniform's at the same levels; near "
        "spike = share of windows with a boundary within one step of the spike; grid distance "
        "= mean distance of a decoded start from the uniform grid.", "",
    ]
    for task in sorted({r["task"] for r in rows}):
        lines += [f"## {task} (variance of the target {variance[task]:.3f})", "",
                  "| levels | variant | MSE | ratio to uniform | near spike | grid distance | "
                  "one-step share | train s | seeds |", "|---|---|---|---|---|---|---|---|---|"]
        for row in (r for r in rows if r["task"] == task):
            near = "–" if row["near_spike"] is None else f"{row['near_spike']:.2f}"
            ratio = "–" if row["ratio"] is None else f"{row['ratio']:.3f}"
            lines.append(
                f"| {row['levels']} | {row['variant']} | "
                f"{format_mean_std(row['mse'], row['mse_std'], row['n'])} | {ratio} | {near} | "
                f"{row['grid_distance']:.2f} | {row['one_step_share']:.2f} | "
                f"{row['train_seconds']:.0f} | {row['seeds']} |")
        lines.append("")
    write_markdown(out_dir / "synthetic.md", lines, echo=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", nargs="+", choices=TASKS, default=list(TASKS))
    parser.add_argument("--variants", nargs="+", choices=list(VARIANTS),
                        help="default: per task (spike: all; two_scale: uniform and the three "
                             "policies)")
    parser.add_argument("--levels", nargs="+", type=int, choices=(1, 2), default=[1, 2],
                        help="levels of the two_scale task")
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--group", type=int, default=8, help="G (the tests use 8)")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--quick", action="store_true",
                        help="smoke: 10 steps, one seed, to a scratch folder")
    parser.add_argument("--report-only", action="store_true")
    parser.add_argument("--out-dir", type=Path, default=None,
                        help=f"folder of the run cache and the report (default {RESULTS})")
    args = parser.parse_args(argv)
    if args.quick:
        args.steps, args.seeds = 10, [0]
        args.out_dir = args.out_dir or Path("/tmp/reinpatch_synthetic_quick")
    args.out_dir = args.out_dir or RESULTS
    set_threads(args.threads)
    cache = args.out_dir / "synthetic_runs.jsonl"
    runs = plan(args.tasks, args.variants, args.levels, args.steps, args.group, args.seeds)
    if not args.report_only:
        for task, variant, levels, steps, group, seed in runs:
            if run_key(task, variant, levels, steps, group, seed) in {
                    r["key"] for r in load_jsonl(cache)}:
                continue
            print(f"[synthetic] {task} levels={levels} {variant} seed={seed} ...", flush=True)
            record = run(task, variant, levels, steps, group, seed)
            append_jsonl(record, cache)
            print(f"[synthetic]   MSE {record['mse']:.4f} ({record['train_seconds']:.0f} s)",
                  flush=True)
    records = [r for r in load_jsonl(cache)
               if (r["steps"], r["group"]) == (args.steps, args.group)]
    write_report(records, args.out_dir, args.steps, args.group, args.quick)


if __name__ == "__main__":
    main()
