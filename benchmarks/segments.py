"""Speed of the vectorised segment ops against a Python loop over rows and patches.

Times ``segment_mean`` on local features ``(R, L, d)`` and ``resample_patches`` on the values
``(R, L)``, forward + backward, at ``R = B * C = 4096``, ``L = 512``, ``N = 64``, ``d = 16``,
``P = 8``, one patching per row (``G = 1``). The loop reference (torch ops on one patch at a time,
as a naive implementation would do) is timed on a subset of rows and scaled linearly to ``R``.
Both are checked to agree on that subset before timing. Reports medians over repeats after a
warm-up; writes ``benchmarks/results/segments.md`` and ``segments.csv``.

Run: ``python benchmarks/segments.py`` (``make bench-segments``); ``--help`` for the sizes.
"""

from __future__ import annotations

import argparse
import csv
import os
import platform
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import git_commit, median_seconds, utc_now  # noqa: E402

from reinpatch_forecast.nn.segments import resample_patches, segment_mean  # noqa: E402

#: The file under test: a timing of uncommitted edits to it says so in the report.
SEGMENTS_SOURCE = "reinpatch_forecast/nn/segments.py"


# -- inputs ------------------------------------------------------------------------------------


def random_starts(rows: int, length: int, n_patches: int, generator: torch.Generator):
    """Uniformly random valid patchings ``(R, 1, N)``: sorted, distinct, first start 0."""
    scores = torch.rand(rows, length - 1, generator=generator)
    chosen = scores.topk(n_patches - 1, dim=-1).indices + 1  # (R, N-1) in 1..L-1
    starts = torch.sort(chosen, dim=-1).values
    return torch.cat([torch.zeros(rows, 1, dtype=torch.long), starts], dim=-1).unsqueeze(1)


# -- the two implementations -------------------------------------------------------------------


def vectorised(features, values, starts, n_points, which):
    """The package's ops: ``(R, 1, N, d)`` means and ``(R, 1, N, P)`` resampled values."""
    means = segment_mean(features, starts) if which in ("mean", "both") else None
    resampled = (
        resample_patches(values, starts, n_points) if which in ("resample", "both") else None
    )
    return means, resampled


def loop_reference(features, values, starts, n_points, which):
    """A naive implementation: Python loops over rows and patches, torch ops per patch."""
    rows, length = values.shape
    means, resampled = [], []
    # One view per row (unbind): the backward of a slice of a row then touches that row only.
    # Slicing the (R, L, d) tensor directly would make every patch's backward allocate and fill a
    # gradient of the whole batch, which is quadratic in R and an unfair straw man.
    feature_rows, value_rows = features.unbind(0), values.unbind(0)
    for r in range(rows):
        # the row's integral at step boundaries: area resampling reads it at fractional steps
        integral = torch.cat([value_rows[r].new_zeros(1), value_rows[r].cumsum(0)])
        row = starts[r, 0].tolist()
        ends = row[1:] + [length]
        row_means, row_resampled = [], []
        for s, e in zip(row, ends):
            if which in ("mean", "both"):
                row_means.append(feature_rows[r][s:e].mean(dim=0))  # (d,)
            if which in ("resample", "both"):
                # area resampling: the patch's mean over each of P equal sub-intervals
                edges = torch.linspace(s, e, n_points + 1, dtype=values.dtype)  # (P+1,)
                step = edges.floor().long().clamp(max=length - 1)
                at = integral[step] + (edges - step.to(values.dtype)) * value_rows[r][step]
                row_resampled.append((at[1:] - at[:-1]) * (n_points / (e - s)))  # (P,)
        if row_means:
            means.append(torch.stack(row_means))  # (N, d)
        if row_resampled:
            resampled.append(torch.stack(row_resampled))  # (N, P)
    return (
        torch.stack(means).unsqueeze(1) if means else None,  # (R, 1, N, d)
        torch.stack(resampled).unsqueeze(1) if resampled else None,  # (R, 1, N, P)
    )


def step(impl, features, values, starts, n_points, which, weights):
    """Forward and backward of a fixed random linear read-out of the outputs."""
    features.grad = None
    values.grad = None
    means, resampled = impl(features, values, starts, n_points, which)
    loss = features.new_zeros(())
    if means is not None:
        loss = loss + (means * weights["mean"][: means.shape[0]]).sum()
    if resampled is not None:
        loss = loss + (resampled * weights["resample"][: resampled.shape[0]]).sum()
    loss.backward()


# -- environment ---------------------------------------------------------------------------------


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


# -- main ----------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=4096, help="R = B * C")
    parser.add_argument("--length", type=int, default=512, help="L")
    parser.add_argument("--patches", type=int, default=64, help="N")
    parser.add_argument("--dim", type=int, default=16, help="d")
    parser.add_argument("--points", type=int, default=8, help="P (resample_patches)")
    parser.add_argument("--loop-rows", type=int, default=64, help="rows the loop is timed on")
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--loop-repeats", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--threads", type=int, default=None, help="torch threads")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)

    load_before = os.getloadavg()[0]
    generator = torch.Generator().manual_seed(0)
    rows, length, n_patches, dim, n_points = (
        args.rows, args.length, args.patches, args.dim, args.points
    )
    loop_rows = min(args.loop_rows, rows)
    features = torch.randn(rows, length, dim, generator=generator).requires_grad_(True)
    values = torch.randn(rows, length, generator=generator).requires_grad_(True)
    starts = random_starts(rows, length, n_patches, generator)
    weights = {
        "mean": torch.randn(rows, 1, n_patches, dim, generator=generator),
        "resample": torch.randn(rows, 1, n_patches, n_points, generator=generator),
    }
    sub_features = features.detach()[:loop_rows].clone().requires_grad_(True)
    sub_values = values.detach()[:loop_rows].clone().requires_grad_(True)
    sub_starts = starts[:loop_rows]

    # the two implementations agree (outputs and gradients) on the timed subset
    for which in ("mean", "resample"):
        got = vectorised(sub_features, sub_values, sub_starts, n_points, which)
        ref = loop_reference(sub_features, sub_values, sub_starts, n_points, which)
        index = 0 if which == "mean" else 1
        torch.testing.assert_close(got[index], ref[index], rtol=1e-4, atol=1e-4)
    step(vectorised, sub_features, sub_values, sub_starts, n_points, "both", weights)
    grads = sub_features.grad.clone(), sub_values.grad.clone()
    step(loop_reference, sub_features, sub_values, sub_starts, n_points, "both", weights)
    torch.testing.assert_close(sub_features.grad, grads[0], rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(sub_values.grad, grads[1], rtol=1e-4, atol=1e-4)

    labels = {
        "mean": f"segment_mean, features ({rows}, {length}, {dim})",
        "resample": f"resample_patches, values ({rows}, {length}), P={n_points}",
        "both": "segment_mean + resample_patches",
    }
    results = []
    for which in ("mean", "resample", "both"):
        vec = median_seconds(
            lambda: step(vectorised, features, values, starts, n_points, which, weights),
            args.repeats, args.warmup,
        )
        loop = median_seconds(
            lambda: step(loop_reference, sub_features, sub_values, sub_starts, n_points, which,
                         weights),
            args.loop_repeats, 1,
        )
        loop_scaled = loop * rows / loop_rows
        results.append(
            dict(
                op=labels[which], vectorised_ms=vec * 1e3, loop_ms_on_subset=loop * 1e3,
                loop_rows=loop_rows, loop_ms_scaled=loop_scaled * 1e3,
                speedup=loop_scaled / vec,
            )
        )
        print(f"  {which:8s} vectorised {vec * 1e3:9.1f} ms   loop {loop_scaled * 1e3:11.1f} ms "
              f"(scaled)   speedup {loop_scaled / vec:7.0f}x", flush=True)

    meta = {
        "date": utc_now(),
        "commit": git_commit([SEGMENTS_SOURCE]),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "threads": torch.get_num_threads(),
        "cpu": cpu_name(),
        "device": "cpu",
        "load_avg_1min": f"{load_before:.1f} -> {os.getloadavg()[0]:.1f}",
    }
    sizes = (f"R = {rows}, L = {length}, N = {n_patches}, d = {dim}, P = {n_points}, G = 1, "
             "float32")
    header = (
        "| op (forward + backward) | vectorised, all R rows (ms) | loop, "
        f"{loop_rows} rows (ms) | loop scaled to R = {rows} (ms) | speedup |"
    )
    lines = [
        "# Segment ops: vectorised vs Python loop",
        "",
        f"Generated by `python benchmarks/segments.py` on {meta['date']}.",
        "",
        f"- commit: `{meta['commit']}`",
        f"- torch {meta['torch']}, Python {meta['python']}, {meta['threads']} thread(s), "
        f"{meta['device']} ({meta['cpu']}, {os.cpu_count()} cores)",
        f"- 1-minute load average before -> after the run: {meta['load_avg_1min']} (other jobs "
        "on the machine slow the multi-threaded vectorised ops most; compare runs with care)",
        f"- sizes: {sizes}; random valid patchings",
        f"- medians: vectorised over {args.repeats} repeats after {args.warmup} warm-up runs; "
        f"loop over {args.loop_repeats} repeats after 1 warm-up",
        f"- the loop reference (Python loops over rows and patches, torch ops per patch) is "
        f"timed on the first {loop_rows} rows and scaled linearly to {rows} rows "
        f"(x{rows / loop_rows:g}); both implementations are checked to give the same outputs "
        "and gradients on those rows first",
        "- goal: a speedup of at least 50x (measured, not asserted)",
        "",
        header,
        "|---|---:|---:|---:|---:|",
    ]
    for r in results:
        lines.append(
            f"| {r['op']} | {r['vectorised_ms']:.1f} | {r['loop_ms_on_subset']:.1f} | "
            f"{r['loop_ms_scaled']:.0f} | {r['speedup']:.0f}x |"
        )
    table = "\n".join(lines) + "\n"
    print()
    print(table)

    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "segments.md").write_text(table)
    with open(args.out / "segments.csv", "w", newline="") as handle:
        fields = ["op", "vectorised_ms", "loop_rows", "loop_ms_on_subset", "loop_ms_scaled",
                  "speedup", "rows", "length", "n_patches", "dim", "points", *meta]
        writer = csv.DictWriter(handle, fieldnames=fields)
        writer.writeheader()
        for r in results:
            writer.writerow(
                {**{k: (round(v, 3) if isinstance(v, float) else v) for k, v in r.items()},
                 "rows": rows, "length": length, "n_patches": n_patches, "dim": dim,
                 "points": n_points, **meta}
            )
    print(f"wrote {args.out / 'segments.md'} and {args.out / 'segments.csv'}")


if __name__ == "__main__":
    main()
