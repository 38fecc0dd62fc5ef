"""Long windows: how the cost of ``ReinPatchModel`` grows with the lookback ``L``.

For ``L`` in 96, 512, 1024, 2048, 4096, compression rates ``R`` = 8 and 32 (``N = ceil(L / R)``
tokens) and the uniform and learned patchers, one fresh process per configuration builds the
model the way a user does (``ReinPatchModel(input_chunk_length=L, compression_rate=R,
patcher=...)``) and measures darts' training step, one ``predict`` call, the network's forward
split into the patcher's decode, the attention and the rest, and the process's peak memory
(:func:`measure`; the report says how each is timed).

The growth exponent of each time is the least-squares slope of ``log(time)`` on ``log(L)`` at
fixed ``R`` and patcher (``t ~ c L^k``), over all lookbacks and over the three longest (where
fixed costs weigh least). Target: no worse than linear (``k <= 1``) for the patcher and the
readout; the attention over ``N = L / R`` tokens is quadratic in ``N``, so a pure ``N^2`` term
has ``k = 2`` at fixed ``R``, and is reported on its own.

Writes ``benchmarks/results/scaling.md`` and ``scaling.csv`` (commit, date, torch threads,
machine).

python benchmarks/scaling.py                       # every configuration (about 6 minutes)
python benchmarks/scaling.py --lookbacks 96 512 --rates 8 --repeats 1 --out-dir /tmp/scaling
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Sequence

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (RESULTS, git_commit, median_seconds, run_child, status_mb,  # noqa: E402
                     utc_now, write_csv, write_markdown)
from tables import markdown_table  # noqa: E402

LOOKBACKS = (96, 512, 1024, 2048, 4096)
RATES = (8, 32)
PATCHERS = ("uniform", "learned")
#: Small sizes, so that L = 4096 runs in seconds: the growth, not the level, is measured.
BATCH, HORIZON = 8, 24
SIZES = dict(d_model=16, n_heads=2, n_layers=1, dropout=0.0)
TIMES = ("train_step_ms", "predict_ms", "forward_ms", "patcher_ms", "attention_ms", "rest_ms")
FIELDS = ["patcher", "rate", "lookback", "tokens", "params", *TIMES, "peak_rss_mb",
          "rss_growth_mb", "threads", "machine"]


# -- the measurement of one configuration (in its own process) ---------------------------------


def sine_series(length: int, count: int = 1, seed: int = 0) -> list:
    """``count`` noisy sines of ``length`` steps (float32 darts series, one component)."""
    from darts import TimeSeries

    rng = np.random.default_rng(seed)
    t = np.arange(length)
    return [TimeSeries.from_values((np.sin(2 * np.pi * t / (24 + 7 * i))
                                    + 0.1 * rng.standard_normal(length)).astype(np.float32))
            for i in range(count)]


#: Seconds of each training batch, appended by the callback (module-level: darts may copy the
#: trainer arguments, and a copied callback still appends here).
STEP_SECONDS: list[float] = []


def step_timer():
    """A Lightning callback timing every training batch (forward, backward, optimizer step)."""
    from pytorch_lightning.callbacks import Callback

    class StepTimer(Callback):
        def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
            self.began = time.perf_counter()

        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
            STEP_SECONDS.append(time.perf_counter() - self.began)

    return StepTimer()


def split_forward(network, x, repeats: int, warmup: int) -> dict[str, float]:
    """Median milliseconds of ``network(x)`` (inference mode) and of its parts: the patcher's
    ``decode_starts`` (what prediction decodes), every encoder ``SelfAttention``, and the rest.

    The parts are timed by wrapping ``network.patcher.decode_starts`` and by forward hooks on
    the attention modules, in this process only (the package is not changed).
    """
    import torch

    from reinpatch_forecast.nn.backbone import SelfAttention

    spent = {"patcher": 0.0, "attention": 0.0}
    decode = network.patcher.decode_starts

    def timed_decode(*args, **kwargs):
        began = time.perf_counter()
        try:
            return decode(*args, **kwargs)
        finally:
            spent["patcher"] += time.perf_counter() - began

    starts: dict[int, float] = {}

    def before(module, args) -> None:
        starts[id(module)] = time.perf_counter()

    def after(module, args, output) -> None:
        spent["attention"] += time.perf_counter() - starts.pop(id(module))

    layers = [module for module in network.modules() if isinstance(module, SelfAttention)]
    handles = [module.register_forward_pre_hook(before) for module in layers]
    handles += [module.register_forward_hook(after) for module in layers]
    network.patcher.decode_starts = timed_decode
    network.eval()
    runs = []
    try:
        with torch.inference_mode():
            for index in range(warmup + repeats):
                spent.update(patcher=0.0, attention=0.0)
                began = time.perf_counter()
                network(x)
                total = time.perf_counter() - began
                if index >= warmup:
                    runs.append((total, spent["patcher"], spent["attention"]))
    finally:
        del network.patcher.decode_starts
        for handle in handles:
            handle.remove()
    total, patcher, attention = (float(np.median(column)) for column in zip(*runs))
    rest = float(np.median([t - p - a for t, p, a in runs]))
    return {"forward_ms": 1000 * total, "patcher_ms": 1000 * patcher,
            "attention_ms": 1000 * attention, "rest_ms": 1000 * rest}


def measure(spec: dict, repeats: int, warmup: int) -> dict:
    """Every measure of one configuration ``{"patcher", "rate", "lookback"}``, run in a fresh
    process (``VmHWM`` starts afresh at exec: the peak RSS is the configuration's); the report
    (:func:`write`) says how each is timed."""
    import torch

    from reinpatch_forecast import ReinPatchModel
    from reinpatch_forecast._lightning import quiet_lightning, quiet_trainer_kwargs

    lookback, rate = spec["lookback"], spec["rate"]
    steps = warmup + repeats
    imported = status_mb("VmRSS")["VmRSS"]
    STEP_SECONDS.clear()
    with quiet_lightning():
        model = ReinPatchModel(
            input_chunk_length=lookback, output_chunk_length=HORIZON, compression_rate=rate,
            patcher=spec["patcher"], **SIZES, batch_size=BATCH, n_epochs=1, random_state=0,
            pl_trainer_kwargs=quiet_trainer_kwargs(callbacks=[step_timer()]),
        )
        # exactly `steps` full batches: L + H + B * steps - 1 values hold B * steps windows
        model.fit(sine_series(lookback + HORIZON + BATCH * steps - 1)[0], verbose=False)
        if len(STEP_SECONDS) != steps:
            raise RuntimeError(f"expected {steps} training batches, timed {len(STEP_SECONDS)}")
        windows = sine_series(lookback, BATCH, seed=1)
        predict_s = median_seconds(lambda: model.predict(HORIZON, series=windows, verbose=False),
                                   repeats, warmup=1)
    network = model.model.network
    x = torch.stack([torch.from_numpy(s.values()) for s in windows])  # (B, L, 1)
    parts = split_forward(network, x, repeats, warmup=1)
    memory = status_mb("VmRSS", "VmHWM")
    return {
        **spec,
        "tokens": network.config.n_patches,
        "params": sum(p.numel() for p in network.parameters()),
        "train_step_ms": 1000 * float(np.median(STEP_SECONDS[warmup:])),
        "predict_ms": 1000 * predict_s,
        **parts,
        "peak_rss_mb": memory["VmHWM"],
        "rss_growth_mb": memory["VmHWM"] - imported,
        "threads": torch.get_num_threads(),
    }


# -- growth exponents (pure) -------------------------------------------------------------------


def growth_exponent(lengths: Sequence[float], times: Sequence[float]) -> float:
    """The least-squares slope ``k`` of ``log(time)`` on ``log(length)`` (``time ~ c L^k``);
    ``nan`` without usable pairs at two distinct lengths at least (a missing, non-positive or
    infinite time is left out).

    >>> round(growth_exponent([1, 2, 4], [3, 12, 48]), 6)
    2.0
    """
    pairs = [(float(n), float(t)) for n, t in zip(lengths, times)
             if t is not None and n > 0 and t > 0 and math.isfinite(t)]
    if len({n for n, _ in pairs}) < 2:
        return math.nan
    x, y = np.log([n for n, _ in pairs]), np.log([t for _, t in pairs])
    return float(np.polyfit(x, y, 1)[0])


def exponents(rows: Sequence[dict], metrics: Sequence[str] = TIMES, tail: int = 3) -> list[dict]:
    """Per patcher and rate: each metric's growth exponent over every lookback (``metric``)
    and over the ``tail`` longest (``metric + "_tail"``), and its value at the longest
    (``metric + "_last"``)."""
    groups: dict[tuple, list[dict]] = {}
    for row in rows:
        groups.setdefault((row["patcher"], row["rate"]), []).append(row)
    found = []
    for (patcher, rate), group in groups.items():
        group = sorted(group, key=lambda r: r["lookback"])
        lengths = [r["lookback"] for r in group]
        entry: dict = {"patcher": patcher, "rate": rate, "lookbacks": lengths}
        for metric in metrics:
            times = [r.get(metric) for r in group]
            entry[metric] = growth_exponent(lengths, times)
            entry[f"{metric}_tail"] = growth_exponent(lengths[-tail:], times[-tail:])
            entry[f"{metric}_last"] = times[-1]
        found.append(entry)
    return found


def quadratic_prediction(rows: Sequence[dict], metric: str = "attention_ms") -> dict:
    """What a pure ``N^2`` term predicts for ``metric`` at each lookback, from its value at the
    longest lookback of each ``(patcher, rate)`` (where the quadratic term weighs most):
    ``t(L) = t(Lmax) (N / Nmax)^2``, keyed by ``(patcher, rate, lookback)``."""
    last: dict[tuple, dict] = {}
    for row in sorted(rows, key=lambda r: r["lookback"]):
        last[(row["patcher"], row["rate"])] = row
    predicted = {}
    for row in rows:
        base = last[(row["patcher"], row["rate"])]
        predicted[(row["patcher"], row["rate"], row["lookback"])] = (
            base[metric] * (row["tokens"] / base["tokens"]) ** 2)
    return predicted


# -- the report --------------------------------------------------------------------------------


def _fmt(value: float | None, spec: str = ".1f") -> str:
    return "–" if value is None or (isinstance(value, float) and math.isnan(value)) \
        else format(value, spec)


def write(rows: list[dict], command: str, threads: int, machine: str, out_dir: Path,
          commit: str | None = None, date: str | None = None) -> list[dict]:
    """scaling.md and scaling.csv; returns the exponents (:func:`exponents`)."""
    commit, date = commit or git_commit(), date or utc_now()
    rows = sorted(rows, key=lambda r: (PATCHERS.index(r["patcher"])
                                       if r["patcher"] in PATCHERS else 9,
                                       r["rate"], r["lookback"]))
    write_csv(out_dir / "scaling.csv", [{**r, "threads": threads, "machine": machine}
                                        for r in rows], FIELDS, commit, date)
    found = exponents(rows)
    quadratic = quadratic_prediction(rows)
    lines = [
        "# Long windows: cost against the lookback L",
        "",
        f"Generated by `{command}` on {date} at commit `{commit}`; {threads} torch thread(s); "
        f"{machine}. The machine's 2 cores were shared with other benchmark runs: levels are "
        "noisy, growth over a 43x range of L much less so.",
        "",
        f"`ReinPatchModel(input_chunk_length=L, output_chunk_length={HORIZON}, "
        f"compression_rate=R, patcher=..., d_model={SIZES['d_model']}, "
        f"n_heads={SIZES['n_heads']}, n_layers={SIZES['n_layers']}, batch_size={BATCH})` with "
        "the other options at their defaults (learned: density policy, G = 4; copy readout "
        "with the skip), one univariate series, one fresh process per row. **train step**: "
        "median of the timed batches of darts' `fit` (a Lightning callback from "
        "`on_train_batch_start` to `on_train_batch_end`: forward, backward and optimizer "
        "step of `training_step`, after warm-up batches). **predict**: one `model.predict("
        f"{HORIZON}, series=[{BATCH} series])` call, darts' overhead included (median). "
        f"**forward**: the network on {BATCH} windows in inference mode, split into the "
        "patcher's `decode`, the attention modules (over N = ceil(L / R) tokens) and the rest "
        "(normalisation, tokeniser, feed-forward, readout, head over the L steps). **peak "
        "RSS**: `VmHWM` of the process; growth: over its RSS after the imports. **pure N²**: "
        "the attention time a pure N² term gives, scaled from the longest L of the same "
        "patcher and R by (N / N_max)²: where the measured time exceeds it, fixed costs "
        "dominate the attention.",
        "",
        "| patcher | R | L | N | params | train step (ms) | predict (ms) | forward (ms) | "
        "patcher (ms) | attention (ms) | pure N² from the longest L (ms) | rest (ms) | "
        "peak RSS (MB) | RSS growth (MB) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        q = quadratic[(r["patcher"], r["rate"], r["lookback"])]
        lines.append(
            f"| {r['patcher']} | {r['rate']} | {r['lookback']} | {r['tokens']} | "
            f"{r['params']:,} | {_fmt(r['train_step_ms'])} | {_fmt(r['predict_ms'])} | "
            f"{_fmt(r['forward_ms'])} | {_fmt(r['patcher_ms'], '.2f')} | "
            f"{_fmt(r['attention_ms'], '.2f')} | {_fmt(q, '.2f')} | {_fmt(r['rest_ms'], '.2f')}"
            f" | {_fmt(r['peak_rss_mb'], '.0f')} | {_fmt(r['rss_growth_mb'], '.0f')} |")
    lines += [
        "",
        "## Growth exponents k (time ~ c L^k at fixed R)",
        "",
        "Least-squares slope of log time on log L over every lookback, and in brackets over "
        "the three longest (fixed costs, such as darts' per-call overhead in `predict`, "
        "flatten the slope over short windows, so the bracket is the asymptotic one). A pure "
        "N² term has k = 2 at fixed R (N = L / R); linear work has k = 1; the attention "
        "holds the N² part, the rest the readout, tokeniser and head.",
        "",
        markdown_table([{"patcher": e["patcher"], "R": e["rate"], **{
            m: f"{_fmt(e[m], '.2f')} ({_fmt(e[m + '_tail'], '.2f')})" for m in TIMES}}
            for e in found], ["patcher", "R", *TIMES]),
    ]
    write_markdown(out_dir / "scaling.md", lines)
    return found


def machine_text() -> str:
    """The machine, in words: processor, cores, Python and torch (torch read lazily)."""
    processor = platform.processor() or platform.machine()
    with contextlib.suppress(OSError):
        processor = next((line.split(":", 1)[1].strip() for line in
                          Path("/proc/cpuinfo").read_text().splitlines()
                          if line.startswith("model name")), processor)
    torch_version = subprocess.run(
        [sys.executable, "-c", "import torch; print(torch.__version__)"], capture_output=True,
        text=True).stdout.strip() or "unknown"
    return (f"{processor}, {os.cpu_count()} cores, Python {platform.python_version()}, "
            f"torch {torch_version}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lookbacks", type=int, nargs="+", default=list(LOOKBACKS))
    parser.add_argument("--rates", type=int, nargs="+", default=list(RATES))
    parser.add_argument("--patchers", nargs="+", choices=PATCHERS, default=list(PATCHERS))
    parser.add_argument("--repeats", type=int, default=5,
                        help="timed training batches, predict calls and forwards (median)")
    parser.add_argument("--warmup", type=int, default=2, help="untimed training batches first")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    parser.add_argument("--out-dir", type=Path, default=RESULTS)
    parser.add_argument("--one", default=None, help=argparse.SUPPRESS)  # a child's spec
    args = parser.parse_args(argv)
    if min(args.repeats, args.threads) < 1 or args.warmup < 0:
        parser.error("--repeats and --threads must be >= 1, --warmup >= 0")
    if args.one is not None:
        import torch

        torch.set_num_threads(args.threads)
        print(json.dumps(measure(json.loads(args.one), args.repeats, args.warmup)))
        return
    command = "python benchmarks/scaling.py " + " ".join(sys.argv[1:] if argv is None else argv)
    rows = []
    for spec in [{"patcher": p, "rate": r, "lookback": n} for p in args.patchers
                 for r in args.rates for n in args.lookbacks]:
        began = time.perf_counter()
        row = run_child(__file__, spec, env={"OMP_NUM_THREADS": str(args.threads),
                                             "MKL_NUM_THREADS": str(args.threads)},
                        repeats=args.repeats, warmup=args.warmup, threads=args.threads)
        rows.append(row)
        print(f"[scaling] {spec['patcher']} R={spec['rate']} L={spec['lookback']}: train step "
              f"{row['train_step_ms']:.1f} ms, predict {row['predict_ms']:.1f} ms, forward "
              f"{row['forward_ms']:.2f} ms (attention {row['attention_ms']:.2f}), peak "
              f"{row['peak_rss_mb']:.0f} MB ({time.perf_counter() - began:.0f} s)", flush=True)
    write(rows, command.strip(), args.threads, machine_text(), args.out_dir)


if __name__ == "__main__":
    main()
