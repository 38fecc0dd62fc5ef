"""Training and inference speed of ReinPatch against the same network with fixed patches and
against darts' TSMixer and DLinear, in one process, with warm-up and medians over repeats.

Writes ``benchmarks/results/speed.md`` and ``speed.csv`` (with the commit and the date).

python benchmarks/speed.py              # all tables (about 10 minutes on 2 cores)
python benchmarks/speed.py --quick      # fewer repeats
python benchmarks/speed.py --threads 1  # torch threads of every measurement (default 2)
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import json
import platform
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

import torch

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"
BATCH, CHANNELS, HORIZON, RATE = 32, 7, 96, 8


def git_commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, text=True,
                              capture_output=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def median_seconds(step: Callable[[], None], repeats: int, warmup: int = 2) -> float:
    for _ in range(warmup):
        step()
    times = []
    for _ in range(repeats):
        began = time.perf_counter()
        step()
        times.append(time.perf_counter() - began)
    return statistics.median(times)


# -- models under test -------------------------------------------------------------------------


def reinpatch(lookback: int, patcher: str = "learned", group: int = 8,
              backbone_draws: int | None = None, d_model: int = 64,
              rollout_fraction: float | None = None, frozen: bool = False):
    from reinpatch_forecast.nn import ReinPatchConfig, ReinPatchNetwork

    torch.manual_seed(0)
    config = ReinPatchConfig(
        input_length=lookback, output_length=HORIZON, n_channels=CHANNELS, compression_rate=RATE,
        patcher=patcher, group_size=group if patcher == "learned" else 1,
        backbone_draws=backbone_draws, d_model=d_model, n_heads=4, n_layers=2,
        rollout_fraction=rollout_fraction if patcher == "learned" else None,
    )
    network = ReinPatchNetwork(config)
    if frozen:  # a foundation patcher used zero-shot: only the backbone trains
        network.patcher.freeze()
    optimiser = torch.optim.Adam([p for p in network.parameters() if p.requires_grad], lr=1e-3)

    def train_step(x, y):
        losses = network.training_losses(x, y)
        optimiser.zero_grad(set_to_none=True)
        losses.loss.backward()
        optimiser.step()

    def predict(x):
        network.eval()
        with torch.inference_mode():
            network(x)
        network.train()

    return network, train_step, predict


def darts_peer(name: str, lookback: int):
    """A darts peer's Lightning module, trained by a plain loop (MSE, Adam)."""
    import numpy as np
    from darts import TimeSeries
    from darts.models import DLinearModel, TSMixerModel
    from darts.utils.data.torch_datasets.utils import PLModuleInput

    torch.manual_seed(0)
    common = dict(input_chunk_length=lookback, output_chunk_length=HORIZON, n_epochs=1,
                  use_reversible_instance_norm=True, random_state=0,
                  pl_trainer_kwargs={"accelerator": "cpu", "enable_progress_bar": False,
                                     "logger": False, "enable_model_summary": False})
    if name == "TSMixer":
        model = TSMixerModel(hidden_size=64, ff_size=64, num_blocks=2, **common)
    else:
        model = DLinearModel(**common)
    # One tiny fit builds the module with the right shapes.
    values = np.random.default_rng(0).standard_normal((lookback + HORIZON + 8, CHANNELS))
    model.fit(TimeSeries.from_values(values.astype(np.float32)), verbose=False)
    module = model.model
    module.train()
    optimiser = torch.optim.Adam(module.parameters(), lr=1e-3)

    def train_step(x, y):
        out = module(PLModuleInput(past_target=x)).prediction[..., 0]
        loss = torch.nn.functional.mse_loss(out, y)
        optimiser.zero_grad(set_to_none=True)
        loss.backward()
        optimiser.step()

    def predict(x):
        module.eval()
        with torch.inference_mode():
            module(PLModuleInput(past_target=x))
        module.train()

    return module, train_step, predict


def build(spec: dict):
    if spec["family"] == "reinpatch":
        return reinpatch(spec["lookback"], spec["patcher"], spec.get("group", 8),
                         spec.get("backbone_draws"),
                         rollout_fraction=spec.get("rollout_fraction"),
                         frozen=spec.get("frozen", False))
    return darts_peer(spec["family"], spec["lookback"])


def measure(spec: dict, repeats: int) -> dict:
    """Train step and predict throughput of one model (run in a fresh process for memory)."""
    module, train_step, predict = build(spec)
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(BATCH, spec["lookback"], CHANNELS, generator=generator)
    y = torch.randn(BATCH, HORIZON, CHANNELS, generator=generator)
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    step = median_seconds(lambda: train_step(x, y), repeats)
    x_predict = torch.randn(256, spec["lookback"], CHANNELS, generator=generator)
    predict_s = median_seconds(lambda: predict(x_predict), repeats)
    rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {
        **spec,
        "params": sum(p.numel() for p in module.parameters()),
        "train_step_ms": 1000 * step,
        "train_windows_per_s": BATCH / step,
        "predict_windows_per_s": 256 / predict_s,
        "peak_rss_mb": rss_after / 1024,
        "rss_growth_mb": (rss_after - rss_before) / 1024,
    }


def measure_in_subprocess(spec: dict, repeats: int, threads: int) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--one", json.dumps(spec), "--repeats", str(repeats),
         "--threads", str(threads)],
        capture_output=True, text=True, check=True,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def component_shares(lookback: int, repeats: int) -> dict[str, float]:
    """Time of each part of a GRPG training step (G = 8), measured one part at a time."""
    from reinpatch_forecast.nn.segments import resample_patches, segment_mean

    network, _, _ = reinpatch(lookback)
    config = network.config
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(BATCH, lookback, CHANNELS, generator=generator)
    y = torch.randn(BATCH, HORIZON, CHANNELS, generator=generator)
    optimiser = torch.optim.Adam(network.parameters(), lr=1e-3)
    patcher_input, backbone_input, _ = network._normalise(x)
    patching = network.patcher.sample(patcher_input, config.n_patches, config.group_size)
    starts = patching.starts

    def patcher_part():
        p = network.patcher.sample(patcher_input, config.n_patches, config.group_size)
        p.log_prob.sum().backward()

    def segment_part():
        local = torch.randn(starts.shape[0], lookback, config.d_model, requires_grad=True)
        values = patcher_input.detach().requires_grad_(True)
        (segment_mean(local, starts).sum() + resample_patches(values, starts, 8).sum()).backward()

    def backbone_part():
        out = network.backbone(backbone_input.detach(), starts)
        out.sum().backward()

    def optimiser_part():
        optimiser.step()

    def whole():
        losses = network.training_losses(x, y)
        optimiser.zero_grad(set_to_none=True)
        losses.loss.backward()
        optimiser.step()

    network.zero_grad()
    for p in network.parameters():
        p.grad = torch.zeros_like(p)
    parts = {
        "patcher (logits, Gumbel-top-k, log-prob; fwd+bwd)": patcher_part,
        "segment ops (segment mean + resampling; fwd+bwd)": segment_part,
        "backbone incl. tokeniser (B*C*G patchings; fwd+bwd)": backbone_part,
        "optimiser step": optimiser_part,
    }
    result = {name: median_seconds(fn, repeats) for name, fn in parts.items()}
    result["whole training step"] = median_seconds(whole, repeats)
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--threads", type=int, default=2,
                        help="torch threads of every measurement (default 2)")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--out-dir", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    if args.threads < 1:
        parser.error(f"--threads must be >= 1, got {args.threads}")
    torch.set_num_threads(args.threads)
    repeats = args.repeats or (5 if args.quick else 15)
    if args.one:
        print(json.dumps(measure(json.loads(args.one), repeats)))
        return

    lookback = 96
    models = [
        {"name": "ReinPatch G=8, backbone on all draws", "family": "reinpatch",
         "patcher": "learned", "group": 8},
        {"name": "ReinPatch G=8, backbone on 1 draw (the default)", "family": "reinpatch",
         "patcher": "learned", "group": 8, "backbone_draws": 1},
        {"name": "ReinPatch G=8, backbone on 1 draw, groups on 1/4 of the windows",
         "family": "reinpatch", "patcher": "learned", "group": 8, "backbone_draws": 1,
         "rollout_fraction": 0.25},
        {"name": "ReinPatch G=4", "family": "reinpatch", "patcher": "learned", "group": 4},
        {"name": "ReinPatch G=4, backbone on 1 draw", "family": "reinpatch",
         "patcher": "learned", "group": 4, "backbone_draws": 1},
        {"name": "frozen learned patcher (foundation, zero-shot)", "family": "reinpatch",
         "patcher": "learned", "frozen": True},
        {"name": "same network, uniform patches", "family": "reinpatch", "patcher": "uniform"},
        {"name": "darts TSMixer (hidden 64, 2 blocks)", "family": "TSMixer"},
        {"name": "darts DLinear", "family": "DLinear"},
    ]
    rows = []
    for spec in models:
        spec = {**spec, "lookback": lookback}
        print(f"[speed] {spec['name']} ...", flush=True)
        rows.append(measure_in_subprocess(spec, repeats, args.threads))
    uniform = next(r for r in rows if r.get("patcher") == "uniform")

    scaling = []
    for length in (96, 192, 384, 768, 1024):
        for patcher in ("learned", "uniform"):
            spec = {"name": f"{patcher} L={length}", "family": "reinpatch", "patcher": patcher,
                    "group": 8, "backbone_draws": 1, "lookback": length}
            print(f"[speed] {spec['name']} ...", flush=True)
            scaling.append(measure_in_subprocess(spec, max(3, repeats // 3), args.threads))

    print("[speed] component shares ...", flush=True)
    shares = component_shares(lookback, repeats)
    write(rows, uniform, scaling, shares, args.out_dir)


def write(rows, uniform, scaling, shares, out_dir: Path) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    now = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    with (out_dir / "speed.csv").open("w", newline="") as handle:
        fields = ["name", "lookback", "params", "train_step_ms", "train_windows_per_s",
                  "predict_windows_per_s", "peak_rss_mb", "commit", "date"]
        writer = csv.DictWriter(handle, fieldnames=fields, extrasaction="ignore")
        writer.writeheader()
        for row in rows + scaling:
            writer.writerow({**row, "commit": git_commit(), "date": now})
    lines = [
        "# Speed: ReinPatch vs fixed patches vs darts peers",
        "",
        f"Generated by `python benchmarks/speed.py` on {now} at commit `{git_commit()}`; "
        f"torch {torch.__version__}, {torch.get_num_threads()} threads, "
        f"{platform.processor() or platform.machine()}.",
        f"Batch {BATCH} windows x {CHANNELS} channels, H = {HORIZON}, compression rate {RATE}, "
        "d_model 64, 2 layers (ReinPatch). Each model runs in a fresh process; times are "
        "medians after warm-up. A train step is forward, backward and Adam step.",
        "",
        "| model | params | train step (ms) | x uniform | train windows/s | predict windows/s | "
        "x uniform | peak RSS (MB) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row['name']} | {row['params']:,} | {row['train_step_ms']:.1f} | "
            f"{row['train_step_ms'] / uniform['train_step_ms']:.2f} | "
            f"{row['train_windows_per_s']:.0f} | {row['predict_windows_per_s']:.0f} | "
            f"{row['predict_windows_per_s'] / uniform['predict_windows_per_s']:.2f} | "
            f"{row['peak_rss_mb']:.0f} |"
        )
    lines += ["", "## Scaling with the lookback (R = 8, so N = L / 8; G = 8, backbone on 1 draw)",
              "", "| L | learned step (ms) | uniform step (ms) | learned x (L=96) | "
              "uniform x (L=96) | learned predict windows/s |", "|---|---|---|---|---|---|"]
    base = next(r for r in scaling if r["lookback"] == 96 and r["patcher"] == "learned")
    base_uniform = next(r for r in scaling if r["lookback"] == 96 and r["patcher"] == "uniform")
    for length in sorted({r["lookback"] for r in scaling}):
        learned = next(r for r in scaling if r["lookback"] == length and r["patcher"] == "learned")
        uni = next(r for r in scaling if r["lookback"] == length and r["patcher"] == "uniform")
        lines.append(f"| {length} | {learned['train_step_ms']:.1f} | {uni['train_step_ms']:.1f} | "
                     f"{learned['train_step_ms'] / base['train_step_ms']:.2f} | "
                     f"{uni['train_step_ms'] / base_uniform['train_step_ms']:.2f} | "
                     f"{learned['predict_windows_per_s']:.0f} |")
    lines += ["", "## Where a GRPG step (G = 8, L = 96) spends its time", "",
              "Each part timed alone on the step's own tensors (so shares need not sum to 1).", "",
              "| part | ms | share of the whole step |", "|---|---|---|"]
    whole = shares["whole training step"]
    for name, seconds in shares.items():
        lines.append(f"| {name} | {1000 * seconds:.1f} | {seconds / whole:.2f} |")
    (out_dir / "speed.md").write_text("\n".join(lines) + "\n")
    print((out_dir / "speed.md").read_text())


if __name__ == "__main__":
    main()
