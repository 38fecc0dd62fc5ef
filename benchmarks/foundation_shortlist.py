"""Shortlist foundation-patcher candidates, frozen, before the 3-seed tables.

Each candidate is a patcher file (or ``uniform``) used frozen in the row
``foundation (patcher 8x3, 32 series, zero-shot)`` of the LTSF/event specs (reduced budget, the
row's kwargs with the patcher swapped), and on the spike task of ``reinpatch-forecast demo``
zero-shot: the patcher frozen, only the backbone trained (200 steps of 64 windows, as
``run_spike_task`` trains it). Two decode variants of a frozen patcher can be tried without
a new file (experiments only; the package has neither): ``--shrink T`` soft-thresholds the
centred cell log-densities at ``T``, ``--clamp C`` keeps every start within ``C`` steps of
its grid start. One JSON record per run goes to ``--out``.

Examples
--------
python benchmarks/foundation_shortlist.py --patcher uniform --cells spike --seeds 0 1 2
python benchmarks/foundation_shortlist.py --patcher reinpatch_forecast/pretrained/patcher.pt \\
    --shrink 0.2 --cells vic_elec:48 --seeds 0
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

import run as runner  # noqa: E402
from _data import DEFAULT_DATA  # noqa: E402
from _protocol import patch_statistics  # noqa: E402
from specs import EXPERIMENTS  # noqa: E402

ROW = "foundation (patcher 8x3, 32 series, zero-shot)"
OUT = Path(__file__).resolve().parent / "results" / "foundation_shortlist_runs.jsonl"


def spike(patcher: str, seed: int, steps: int = 200, batch: int = 64) -> dict:
    """The spike task with ``patcher`` frozen (or uniform patches); test MSE on 2,000 windows."""
    from reinpatch_forecast.cli import demo
    from reinpatch_forecast.nn import ReinPatchNetwork
    from reinpatch_forecast.patcher_io import load_patcher

    config = demo.spike_network("learned").config
    frozen = None if patcher == "uniform" else load_patcher(patcher).freeze()
    torch.manual_seed(seed)  # after the patcher is built: the backbone starts as uniform's
    network = (demo.spike_network("uniform") if frozen is None
               else ReinPatchNetwork(config, patcher=frozen))
    optimiser = torch.optim.Adam(network.backbone_parameters(), lr=1e-3)
    generator = torch.Generator().manual_seed(seed)
    network.train()
    for _ in range(steps):
        x, y, _ = demo.spike_batch(batch, generator)
        loss = network.training_losses(x, y).loss
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    network.eval()
    x, y, position = demo.spike_batch(2000, torch.Generator().manual_seed(1234))
    with torch.no_grad():
        mse = float(((network(x)[..., 0] - y) ** 2).mean())
        starts = network.boundaries(x)[:, 0]
    near = (starts - position[:, None]).abs().min(dim=-1).values <= 1
    return {"test_mse": mse, "near_spike": float(near.float().mean()),
            **patch_statistics(starts.numpy(), demo.SPIKE_LOOKBACK)}


def install_shrink(tau: float) -> None:
    """Soft-threshold the centred cell log-densities at ``tau`` (this process only)."""
    from reinpatch_forecast.nn import policies

    means = policies.CellSteps.means

    def shrunk(self, scores):
        u = means(self, scores)
        u = u - u.mean(-1, keepdim=True)
        return torch.sign(u) * torch.clamp(u.abs() - tau, min=0.0)
    policies.CellSteps.means = shrunk


def install_clamp(steps: int) -> None:
    """Keep every start within ``steps`` of its grid start (this process only)."""
    from reinpatch_forecast.nn import policies
    from reinpatch_forecast.nn.grid import uniform_starts

    starts_of = policies.DensityPolicy._starts

    def clamped(self, action, cell_start, cell_length, length, n_patches, shortest, used=None):
        starts = starts_of(self, action, cell_start, cell_length, length, n_patches, shortest,
                           used)
        grid = uniform_starts(length, n_patches, device=starts.device)
        return torch.minimum(torch.maximum(starts, grid - steps), grid + steps)
    policies.DensityPolicy._starts = clamped


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--patcher", required=True, help="a patcher file, or uniform")
    parser.add_argument("--tag", help="the candidate's name in the records (default: --patcher)")
    parser.add_argument("--cells", nargs="+", default=["spike", "EPF_FR_BE:24", "vic_elec:48"],
                        help="spike, or DATASET:HORIZON of the ltsf/events experiments")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0])
    parser.add_argument("--shrink", type=float, default=0.0)
    parser.add_argument("--clamp", type=int, default=0)
    parser.add_argument("--data-dir", default=str(DEFAULT_DATA))
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    if args.shrink:
        install_shrink(args.shrink)
    if args.clamp:
        install_clamp(args.clamp)
    for seed in args.seeds:
        for cell in args.cells:
            began = time.perf_counter()
            if cell == "spike":
                measured = spike(args.patcher, seed)
            else:
                dataset, horizon = cell.split(":")
                name = "events" if dataset in EXPERIMENTS["events"]["datasets"] else "ltsf"
                experiment = EXPERIMENTS[name]
                lookback = runner._as_list(runner._per_dataset(experiment["lookback"], dataset))[0]
                run = runner._forecast_run(name, experiment, dataset, int(horizon), lookback,
                                           "target", ROW, seed, "reduced")
                run["kwargs"]["patcher"] = args.patcher
                data = runner.load_data(experiment, run, args.data_dir)
                measured = runner.fit_and_score(run, data, Path("/tmp/foundation_shortlist"),
                                                patch_stats=True)
                measured.pop("val_loss_by_epoch", None)
            record = {"candidate": args.tag or args.patcher, "shrink": args.shrink,
                      "clamp": args.clamp, "cell": cell, "seed": seed,
                      "seconds": round(time.perf_counter() - began, 1), **measured,
                      "commit": runner.commit(), "date": runner.utc_now()}
            print(json.dumps(record), flush=True)
            with open(args.out, "a") as handle:
                handle.write(json.dumps(record) + "\n")


if __name__ == "__main__":
    main()
