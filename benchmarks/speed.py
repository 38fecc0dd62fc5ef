"""Training and inference speed of ReinPatch against the same network with fixed patches and
against darts' TSMixer and DLinear, one process per model, medians over repeats after warm-up.

Then the train step against the lookback, where the default GRPG step spends its time, and
the forward FLOPs, time and GFLOP/s of each part of the prediction pass (the report says how
each is measured). Writes ``benchmarks/results/speed.md``, ``speed.csv`` and
``speed_parts.csv`` (commit and date).

python benchmarks/speed.py              # all tables (about 5 minutes on 2 cores)
python benchmarks/speed.py --quick      # smoke: 1 repeat, no darts peers, L in {96, 192}

Run it on an otherwise idle machine: with other processes on the cores, use ``--threads 1``
(two OpenMP threads on a busy 2-core machine inflated every time several-fold in a test).
"""

from __future__ import annotations

import argparse
import json
from functools import partial, reduce
from math import nan
import platform
import resource
import sys
from pathlib import Path
from typing import Callable

import torch
from torch.utils.flop_counter import FlopCounterMode, sdpa_flop_count

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (RESULTS, git_commit, median_seconds, run_child, utc_now,  # noqa: E402
                     write_csv, write_markdown)
from tables import markdown_table  # noqa: E402

from reinpatch_forecast._lightning import quiet_lightning, quiet_trainer_kwargs  # noqa: E402

BATCH, CHANNELS, HORIZON, RATE = 32, 7, 96, 8
PREDICT_BATCH = 256


# -- models under test -------------------------------------------------------------------------


def reinpatch_network(lookback: int, patcher: str = "learned", settings: dict | None = None,
                      d_model: int = 64):
    """The network at the package's defaults but for ``settings``: fields of the
    ``training`` and of the learned ``patcher`` of :class:`ReinPatchConfig`."""
    from reinpatch_forecast.nn import ReinPatchConfig, ReinPatchNetwork

    settings = settings or {}
    torch.manual_seed(0)
    return ReinPatchNetwork(ReinPatchConfig(
        input_length=lookback, output_length=HORIZON, n_channels=CHANNELS, compression_rate=RATE,
        backbone=dict(d_model=d_model, n_heads=4, n_layers=2),
        patcher=dict(name=patcher, **settings.get("patcher", {})),
        training=settings.get("training", {})))


def _steps(module, optimiser, loss_of: Callable, forward: Callable):
    """``(module, train_step, predict)``: ``train_step(x, y)`` takes one optimiser step on
    ``loss_of(x, y)``; ``predict(x)`` runs ``forward(x)`` in eval and inference mode."""

    def train_step(x, y):
        loss = loss_of(x, y)
        optimiser.zero_grad(set_to_none=True)
        loss.backward()
        optimiser.step()

    def predict(x):
        module.eval()
        with torch.inference_mode():
            forward(x)
        module.train()

    return module, train_step, predict


def reinpatch(lookback: int, patcher: str = "learned", settings: dict | None = None,
              frozen: bool = False):
    network = reinpatch_network(lookback, patcher, settings)
    if frozen:  # a foundation patcher used zero-shot: only the backbone trains
        network.patcher.freeze()
    optimiser = torch.optim.Adam([{"params": network.backbone_parameters(), "lr": 1e-3},
                                  {"params": network.patcher_parameters(), "lr": 3e-3}])
    # the loss the darts module's training_step calls
    return _steps(network, optimiser, lambda x, y: network.training_losses(x, y).loss, network)


def darts_peer(name: str, lookback: int):
    """A darts peer's Lightning module, trained by a plain loop (MSE, Adam)."""
    import numpy as np
    from darts import TimeSeries
    from darts.models import DLinearModel, TSMixerModel
    from darts.utils.data.torch_datasets.utils import PLModuleInput

    torch.manual_seed(0)
    common = dict(input_chunk_length=lookback, output_chunk_length=HORIZON, n_epochs=1,
                  use_reversible_instance_norm=True, random_state=0,
                  pl_trainer_kwargs=quiet_trainer_kwargs())
    if name == "TSMixer":
        model = TSMixerModel(hidden_size=64, ff_size=64, num_blocks=2, **common)
    else:
        model = DLinearModel(**common)
    # One tiny fit builds the module with the right shapes.
    values = np.random.default_rng(0).standard_normal((lookback + HORIZON + 8, CHANNELS))
    model.fit(TimeSeries.from_values(values.astype(np.float32)), verbose=False)
    module = model.model
    module.train()

    def forward(x):
        return module(PLModuleInput(past_target=x))

    def loss_of(x, y):
        return torch.nn.functional.mse_loss(forward(x).prediction[..., 0], y)

    return _steps(module, torch.optim.Adam(module.parameters(), lr=1e-3), loss_of, forward)


def measure(spec: dict, repeats: int, warmup: int = 2) -> dict:
    """Train step and predict throughput of one model (run in a fresh process for memory)."""
    module, train_step, predict = (reinpatch(
        spec["lookback"], spec["patcher"], spec.get("settings"), spec.get("frozen", False))
        if spec["family"] == "reinpatch" else darts_peer(spec["family"], spec["lookback"]))
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(BATCH, spec["lookback"], CHANNELS, generator=generator)
    y = torch.randn(BATCH, HORIZON, CHANNELS, generator=generator)
    step = median_seconds(lambda: train_step(x, y), repeats, warmup)
    x_predict = torch.randn(PREDICT_BATCH, spec["lookback"], CHANNELS, generator=generator)
    predict_s = median_seconds(lambda: predict(x_predict), repeats, warmup)
    rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {
        **spec,
        "params": sum(p.numel() for p in module.parameters()),
        "train_step_ms": 1000 * step,
        "train_windows_per_s": BATCH / step,
        "predict_windows_per_s": PREDICT_BATCH / predict_s,
        "peak_rss_mb": rss_after / 1024,
    }


def component_times(lookback: int, repeats: int, warmup: int = 2) -> dict[str, float]:
    """Time of each part of the default GRPG training step, measured one part at a time."""
    network, train_step, _ = reinpatch(lookback)
    group = network.config.training.group_size
    scored = network.scored_rows(BATCH * CHANNELS)
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(BATCH, lookback, CHANNELS, generator=generator)
    y = torch.randn(BATCH, HORIZON, CHANNELS, generator=generator)
    patcher_input, backbone_input, stats = network._normalise(x)
    patcher_input, backbone_input = patcher_input.detach(), backbone_input.detach()
    decoded, samples = network._explore(patcher_input, group, scored)

    def patcher_part():
        d, s = network._explore(patcher_input, group, scored)
        (s.log_prob.sum() + d.kl.sum()).backward()

    def decode_part():
        network.backbone(backbone_input, decoded.starts).sum().backward()

    def scoring_part():
        with torch.no_grad():
            local = network.backbone.local_features(backbone_input[:scored])
            network._score_group(backbone_input, stats, local, None, decoded, samples, scored)

    for p in network.parameters():
        p.grad = torch.zeros_like(p)
    optimiser = torch.optim.Adam(network.parameters(), lr=1e-3)
    parts = {
        f"patcher (scores of all B*C series, {group} samples of {scored}; "
        "fwd+bwd)": patcher_part,
        "backbone incl. tokeniser on the decode (B*C patchings; fwd+bwd)": decode_part,
        f"backbone scoring decode + {group} samples of {scored} series "
        "(no grad)": scoring_part,
        "optimiser step": optimiser.step,
    }
    result = {name: median_seconds(fn, repeats, warmup) for name, fn in parts.items()}
    result["whole training step"] = median_seconds(lambda: train_step(x, y), repeats, warmup)
    return result


def counted_flops(call: Callable[[], object]) -> int:
    """Forward FLOPs of ``call()`` by ``torch.utils.flop_counter``, counted with autograd on: in
    inference mode ``nn.MultiheadAttention`` runs a fused kernel that the counter does not see."""
    mapping = {torch.ops.aten._scaled_dot_product_flash_attention_for_cpu:  # takes shapes
               lambda q, k, v, *args, out_shape=None, **kwargs: sdpa_flop_count(q, k, v)}
    with FlopCounterMode(display=False, custom_mapping=mapping) as counter:
        call()
    return counter.get_total_flops()


def prediction_parts(network, x: torch.Tensor) -> dict[str, Callable[[], object]]:
    """The prediction pass ``network(x)`` on ``(B, L, C)`` windows as its parts, each a closure
    on the inputs the pass hands that part (one level, no covariates; unchunked)."""
    backbone = network.backbone
    with torch.no_grad():
        patcher_input, series, _ = network._normalise(x)  # (R, L) each
        starts, _ = network._decode_starts(patcher_input)  # (R, 1, N)
        local = backbone.local_features(series)  # (R, L, d)
        tokens = backbone.tokeniser(series, starts, local)  # (R, N, d)
        encoder = partial(reduce, lambda h, layer: layer(h, 1), backbone.layers, tokens)
        encoded = backbone.final_norm(encoder())  # (R, N, d)
        steps = backbone._step_features(encoded, None, starts, None, local).flatten(1)  # (R, L*k)
    return {
        "patcher (decode)": lambda: network._decode_starts(patcher_input),
        "tokeniser (local features, tokens)": lambda: backbone.tokeniser(
            series, starts, backbone.local_features(series)),
        "encoder (layers)": encoder,
        "readout (step_readout + skip_projection)": lambda: backbone._step_features(
            encoded, None, starts, None, local),
        "head": lambda: backbone.head(steps),
    }


def flop_table(lookback: int, repeats: int, warmup: int) -> list[dict]:
    """Forward FLOPs per window, time per batch of ``BATCH`` and GFLOP/s of each part of
    the learned and the uniform network's prediction pass; the whole forward's FLOPs per window
    of darts' TSMixer; the machine's float32 matmul rates (one the backbone's size)."""
    from darts.utils.data.torch_datasets.utils import PLModuleInput

    # a training batch: unchunked, a prediction batch's activations would time the allocator
    x = torch.randn(BATCH, lookback, CHANNELS, generator=torch.Generator().manual_seed(0))
    table = []
    for patcher in ("learned", "uniform"):
        network = reinpatch_network(lookback, patcher).eval()
        calls = {**prediction_parts(network, x), "whole prediction pass": lambda: network(x)}
        rows = []
        for part, call in calls.items():
            with torch.inference_mode():
                ms = 1000 * median_seconds(call, repeats, warmup)
            rows.append({"network": patcher, "part": part, "flops": counted_flops(call), "ms": ms})
        table += rows[:-1] + [{"network": patcher, "part": "other (whole minus the parts)", **{
            k: rows[-1][k] - sum(r[k] for r in rows[:-1]) for k in ("flops", "ms")}}, rows[-1]]
    with quiet_lightning():
        tsmixer = darts_peer("TSMixer", lookback)[0].eval()
    table.append({"network": "darts TSMixer (hidden 64, 2 blocks)", "part": "whole forward",
                  "flops": counted_flops(lambda: tsmixer(PLModuleInput(past_target=x)))})
    for m, k, n in ((PREDICT_BATCH * CHANNELS * lookback // RATE, 64, 128), (1024, 1024, 1024)):
        a, b = torch.randn(m, k), torch.randn(k, n)
        seconds = median_seconds(lambda: a @ b, repeats, warmup)
        table.append({"network": "machine: float32 matmul", "part": f"({m} x {k}) @ ({k} x {n})",
                      "gflop_per_s": 2e-9 * m * k * n / seconds})
    for r in table:
        if "flops" in r:
            r["mflop_per_window"] = r["flops"] / BATCH / 1e6
        if "ms" in r:  # none for a part without FLOPs or with no time left
            r["gflop_per_s"] = r["flops"] / r["ms"] / 1e6 if r["flops"] > 0 < r["ms"] else nan
    return table


MODELS = [
    {"name": "same network, uniform patches", "family": "reinpatch", "patcher": "uniform"},
    {"name": "learned, the default (patcher 8x3; G=8 for 1/8 of the series)",
     "family": "reinpatch", "patcher": "learned"},
    *({"name": f"learned, G={g} for 1/{parts} of the series", "family": "reinpatch",
       "patcher": "learned",
       "settings": {"training": {"group_size": g, "scored_share": 1 / parts}}}
      for g, parts in ((8, 16), (8, 4), (4, 4))),
    {"name": "learned, G=8 for every series", "family": "reinpatch", "patcher": "learned",
     "settings": {"training": {"scored_share": 1.0}}},
    {"name": "frozen learned patcher (foundation, zero-shot)", "family": "reinpatch",
     "patcher": "learned", "frozen": True},
    {"name": "darts TSMixer (hidden 64, 2 blocks)", "family": "TSMixer"},
    {"name": "darts DLinear", "family": "DLinear"},
]
LOOKBACKS = (96, 192, 384, 768, 1024)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: 1 warm-up and 1 repeat, no darts peers or frozen row, "
                             "L in {96, 192}")
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--warmup", type=int, default=None)
    parser.add_argument("--threads", type=int, default=2,
                        help="torch threads of every measurement (default 2)")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--out-dir", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    if args.threads < 1:
        parser.error(f"--threads must be >= 1, got {args.threads}")
    torch.set_num_threads(args.threads)
    repeats = args.repeats or (1 if args.quick else 15)
    warmup = args.warmup if args.warmup is not None else (1 if args.quick else 2)
    if args.one:
        print(json.dumps(measure(json.loads(args.one), repeats, warmup)))
        return

    lookback = 96
    models = [{**m, "lookback": lookback} for m in MODELS if not args.quick
              or (m["family"] == "reinpatch" and not m.get("frozen"))]
    longer = [{"name": f"{patcher} L={length}", "family": "reinpatch", "patcher": patcher,
               "lookback": length} for length in (LOOKBACKS[1:2] if args.quick else LOOKBACKS[1:])
              for patcher in ("learned", "uniform")]
    measured = []
    for spec in models + longer:
        print(f"[speed] {spec['name']} ...", flush=True)
        measured.append(run_child(__file__, spec, threads=args.threads, warmup=warmup,
                                  repeats=repeats if spec in models else max(1, repeats // 3)))
    rows = measured[:len(models)]
    # L = 96: the rows above (uniform and the default learned step).
    scaling = [{**row, "name": f"{row['patcher']} L={lookback}"} for row in rows[:2]]
    scaling += measured[len(models):]

    print("[speed] component times, FLOPs and rate per part ...", flush=True)
    parts = component_times(lookback, repeats, warmup)
    write(rows, scaling, parts, flop_table(lookback, repeats, warmup), args.out_dir, args.quick)


def write(rows: list[dict], scaling: list[dict], parts: dict[str, float], flops: list[dict],
          out_dir: Path, quick: bool = False) -> None:
    uniform = next(r for r in rows if r.get("patcher") == "uniform")
    ts = next((r for r in rows if r["family"] == "TSMixer"), {})  # none in the quick run: NaN
    for row in rows:
        row["step_x_tsmixer"] = row["train_step_ms"] / ts.get("train_step_ms", nan)
        row["predict_x_tsmixer"] = row["predict_windows_per_s"] / ts.get("predict_windows_per_s",
                                                                         nan)
    for row in rows + scaling:
        base = uniform if row in rows else next(
            r for r in scaling if r["lookback"] == row["lookback"] and r["patcher"] == "uniform")
        row["step_x_uniform"] = row["train_step_ms"] / base["train_step_ms"]
        row["predict_x_uniform"] = row["predict_windows_per_s"] / base["predict_windows_per_s"]
    columns = ["name", "params", "train_step_ms", "step_x_uniform", "step_x_tsmixer",
               "train_windows_per_s", "predict_windows_per_s", "predict_x_uniform",
               "predict_x_tsmixer", "peak_rss_mb"]
    write_csv(out_dir / "speed.csv", rows + scaling, [columns[0], "lookback", *columns[1:]])
    write_csv(out_dir / "speed_parts.csv", flops,
              ["network", "part", "mflop_per_window", "ms", "gflop_per_s"])
    command = "python benchmarks/speed.py" + (" --quick" if quick else "")
    lines = [
        "# Speed: ReinPatch vs fixed patches vs darts peers",
        "",
        f"Generated by `{command}` on {utc_now()} at commit `{git_commit()}`; "
        f"torch {torch.__version__}, {torch.get_num_threads()} threads, "
        f"{platform.processor() or platform.machine()}.",
        f"Batch {BATCH} windows x {CHANNELS} channels, H = {HORIZON}, compression rate {RATE}, "
        "d_model 64, 2 layers (ReinPatch). Each model runs in a fresh process; times are "
        "medians after warm-up. A ReinPatch train step is `ReinPatchNetwork.training_losses` "
        "(the darts module's training step: backbone on the decoded patching, decode and G "
        "samples of the scored series without gradients, policy loss), backward and an Adam "
        "step; prediction decodes once. "
        f"`x uniform`, `x TSMixer`: ratio to the uniform-patch network and to darts' TSMixer "
        f"(step time; predict throughput on batches of {PREDICT_BATCH} windows).",
        "",
        markdown_table(rows, columns),
    ]
    at = {(r["lookback"], r["patcher"]): r for r in scaling}
    steps = [{"L": length, "learned step (ms)": at[length, "learned"]["train_step_ms"],
              "uniform step (ms)": at[length, "uniform"]["train_step_ms"],
              "learned x uniform": at[length, "learned"]["step_x_uniform"],
              **{f"{p} x (L=96)": at[length, p]["train_step_ms"] / at[96, p]["train_step_ms"]
                 for p in ("learned", "uniform")},
              "learned predict windows/s": at[length, "learned"]["predict_windows_per_s"]}
             for length in sorted({r["lookback"] for r in scaling})]
    lines += ["", "## Scaling with the lookback (R = 8, so N = L / 8; learned = the default)",
              "", markdown_table(steps, list(steps[0]))]
    whole = parts["whole training step"]
    lines += ["", "## Where the default GRPG step (L = 96) spends its time", "",
              "Each part timed alone on the step's own tensors, in this process (so shares need "
              "not sum to 1).", "",
              "| part | ms | share of the whole step | x uniform step |", "|---|---|---|---|"]
    for name, seconds in parts.items():
        lines.append(f"| {name} | {1000 * seconds:.1f} | {seconds / whole:.2f} | "
                     f"{1000 * seconds / uniform['train_step_ms']:.2f} |")
    lines += ["", f"## Forward FLOPs and achieved rate per part (prediction, L = 96, batch "
              f"{BATCH}, `speed_parts.csv`)", "",
              "FLOPs of matmuls, convolutions and attention by `torch.utils.flop_counter`, "
              "counted with autograd on (in inference mode the counter misses the fused "
              "attention kernel); each part timed alone (inference mode, unchunked) on the "
              "inputs the pass gives it; `other` is the whole pass minus the parts.", "",
              "| part | learned MFLOP/window | ms | GFLOP/s | uniform MFLOP/window | ms | "
              "GFLOP/s |", "|---|---|---|---|---|---|---|"]
    for pair in zip(*([r for r in flops if r["network"] == n] for n in ("learned", "uniform"))):
        lines.append(f"| {pair[0]['part']} | " + " | ".join(
            f"{c['mflop_per_window']:.2f} | {c['ms']:.1f} | {c['gflop_per_s']:.1f}"
            for c in pair).replace("nan", "-") + " |")
    lines += [""] + [f"- {r['network']}, {r['part']}: " + (
        f"{r['gflop_per_s']:.1f} GFLOP/s" if "flops" not in r
        else f"{r['mflop_per_window']:.2f} MFLOP per window")
        for r in flops if r["network"] not in ("learned", "uniform")]
    write_markdown(out_dir / "speed.md", lines)


if __name__ == "__main__":
    main()
