"""The learned patcher's price against its learning signal: for each patcher size and GRPG
setting (the series a step scores, ``G``), its forward FLOPs next to the backbone's and the
demo's spike task (where boundaries decide the forecast) over seeds, against uniform patches.

Each run appends a record to ``benchmarks/results/patcher_size_runs.jsonl`` (recorded runs are
skipped); the report (``patcher_size.md``, ``.csv``, commit and date) is rebuilt from them all.

python benchmarks/patcher_size.py --sizes 32x4 8x3 --seeds 0 1 2   # widths x depths
python benchmarks/patcher_size.py --sizes 8x3 --scored-series 16   # series a GRPG step scores
python benchmarks/patcher_size.py --report                          # the tables only
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import RESULTS, git_commit, utc_now, write_csv, write_markdown  # noqa: E402
from tables import markdown_table  # noqa: E402

from reinpatch_forecast.cli.demo import run_spike_task  # noqa: E402
from reinpatch_forecast.nn import ReinPatchConfig, ReinPatchNetwork  # noqa: E402

RUNS = RESULTS / "patcher_size_runs.jsonl"
#: Windows per step of the spike task (one channel each).
BATCH = 64
#: The shape the FLOPs are counted at: L = H = 96, 7 channels, R = 8, d = 64, 2 layers.
FLOP_SHAPE = dict(input_length=96, output_length=96, n_channels=7, compression_rate=8)


def parse_size(text: str) -> dict:
    """``"8x3"`` (width x depth) or ``"8x3k5"`` (and kernel) as patcher settings."""
    width, _, rest = text.partition("x")
    depth, _, kernel = rest.partition("k")
    sizes = {"hidden_size": int(width), "n_layers": int(depth)}
    if kernel:
        sizes["kernel_size"] = int(kernel)
    return sizes


def forward_flops(sizes: dict | None) -> dict[str, float]:
    """Forward FLOPs per window of the patcher's decode and of the whole prediction pass
    (``sizes=None``: uniform patches) at :data:`FLOP_SHAPE`."""
    from speed import counted_flops

    patcher = {"name": "uniform"} if sizes is None else {"name": "learned", **sizes}
    torch.manual_seed(0)
    network = ReinPatchNetwork(ReinPatchConfig(**FLOP_SHAPE, patcher=patcher)).eval()
    x = torch.randn(64, FLOP_SHAPE["input_length"], FLOP_SHAPE["n_channels"])
    with torch.no_grad():
        whole = counted_flops(lambda: network(x))
        part = counted_flops(lambda: network._decode(network._normalise(x)[0]))
    return {"patcher_mflop": part / len(x) / 1e6, "network_mflop": whole / len(x) / 1e6}


def recorded() -> list[dict]:
    lines = RUNS.read_text().splitlines() if RUNS.exists() else []
    return [json.loads(line) for line in lines if line.strip()]


def run_one(size: str, seed: int, scored: int, group: int, steps: int) -> dict:
    sizes = None if size == "uniform" else parse_size(size)
    result = run_spike_task("uniform" if sizes is None else "learned", steps=steps, seed=seed,
                            patcher_sizes=sizes,
                            training={"scored_share": scored / BATCH, "group_size": group})
    return {"size": size, "scored_series": scored, "group_size": group, "seed": seed,
            "steps": steps, "spike_mse": result.mse, "near_spike": result.near_spike,
            "train_seconds": round(result.seconds, 2),
            "threads": torch.get_num_threads(), "commit": git_commit(), "date": utc_now()}


def report(out_dir: Path) -> None:
    runs = recorded()
    if not runs:
        return
    uniform_flops = forward_flops(None)["network_mflop"]
    groups: dict[tuple, list[dict]] = {}
    for run in runs:
        key = (run["size"], run["scored_series"], run["group_size"], run["steps"], run["threads"])
        groups.setdefault(key, []).append(run)
    uniform = {(steps, threads): statistics.mean(r["spike_mse"] for r in rows)
               for (size, _, _, steps, threads), rows in groups.items() if size == "uniform"}
    table = []
    for (size, scored, group, steps, threads), rows in sorted(groups.items()):
        mse = [r["spike_mse"] for r in rows]
        flops = forward_flops(None if size == "uniform" else parse_size(size))
        table.append({
            "size": size, "scored_series": scored, "group_size": group, "steps": steps,
            "threads": threads, "seeds": len(rows), "spike_mse": statistics.mean(mse),
            "spike_mse_std": statistics.stdev(mse) if len(mse) > 1 else 0.0,
            "x_uniform": statistics.mean(mse) / uniform.get((steps, threads), math.nan),
            "near_spike": statistics.mean(r["near_spike"] for r in rows),
            "patcher_mflop": flops["patcher_mflop"],
            "patcher_x_backbone": flops["patcher_mflop"] / uniform_flops,
            "network_mflop": flops["network_mflop"],
            "train_seconds": statistics.median(r["train_seconds"] for r in rows),
            "commit": rows[-1]["commit"], "date": rows[-1]["date"],
        })
    fields = list(table[0])
    write_csv(out_dir / "patcher_size.csv", table, fields)
    lines = [
        "# The learned patcher's size: price against the spike task",
        "",
        f"Built by `python benchmarks/patcher_size.py --report` on {utc_now()} at commit "
        f"`{git_commit()}` from `patcher_size_runs.jsonl` (each row's commit and date are in "
        "the CSV). Size = conv width x depth (kernel 3 unless `k` says). FLOPs: forward, per "
        "window, at L = H = 96, 7 channels, R = 8, d = 64, 2 layers; the backbone is the "
        f"whole uniform-patch network ({uniform_flops:.2f} MFLOP per window). Spike task: the "
        "demo's (`reinpatch-forecast demo`), test MSE over 2,000 windows, mean and standard "
        "deviation over seeds; `x_uniform`: the ratio to uniform patches' mean (same threads); "
        f"`scored_series`: the series of each batch of {BATCH} a GRPG step scores.",
        "",
        markdown_table(table, [field for field in fields if field not in ("commit", "date")]),
    ]
    write_markdown(out_dir / "patcher_size.md", lines)
    print((out_dir / "patcher_size.md").read_text())


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="*", default=["uniform", "32x4", "8x3"],
                        help="'uniform' or WIDTHxDEPTH[kKERNEL] patcher sizes")
    parser.add_argument("--seeds", nargs="*", type=int, default=[0, 1, 2])
    parser.add_argument("--scored-series", nargs="*", type=int, default=[BATCH],
                        help="series of each batch whose group a GRPG step scores")
    parser.add_argument("--group-sizes", nargs="*", type=int, default=[4], help="G")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--report", action="store_true", help="rebuild the tables only")
    parser.add_argument("--out-dir", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    if not args.report:
        done = {(r["size"], r["scored_series"], r["group_size"], r["seed"], r["steps"],
                 r["threads"]) for r in recorded()}
        for size in args.sizes:
            settings = [(BATCH, 4)] if size == "uniform" else [
                (scored, group) for scored in args.scored_series for group in args.group_sizes]
            for (scored, group), seed in itertools.product(settings, args.seeds):
                if (size, scored, group, seed, args.steps, args.threads) not in done:
                    record = run_one(size, seed, scored, group, args.steps)
                    print(json.dumps(record), flush=True)
                    with RUNS.open("a") as handle:
                        handle.write(json.dumps(record) + "\n")
    report(args.out_dir)


if __name__ == "__main__":
    main()
