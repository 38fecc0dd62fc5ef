"""Where a foundation patcher cuts real series, zero-shot: its decode on validation windows.

For each dataset, every ``--stride``-th validation window (all channels, lookback ``L``) is
normalised and decoded by a ``ReinPatchNetwork`` holding the patcher frozen (the path
``ReinPatchModel.patch_boundaries`` takes), and the patchings are summarised: mean distance of
a start from the uniform grid, first and last patch length, share of one-step patches, the
within-window spread of the lengths. A patcher that decodes the grid everywhere has a grid
distance of 0 on every dataset.

Run: ``python benchmarks/foundation_decode.py`` (the shipped patcher) or ``--patcher FILE``;
writes ``benchmarks/results/foundation_decode.md`` and ``.csv``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (DEFAULT_DATA, RESULTS, patch_statistics, set_threads,  # noqa: E402
                     stamp, write_csv, write_markdown)
from ltsf import load_splits  # noqa: E402

from reinpatch_forecast.patcher_io import (PRETRAINED_SHA256, load_patcher,  # noqa: E402
                                           load_pretrained_patcher)
from reinpatch_forecast.nn import ReinPatchConfig, ReinPatchNetwork  # noqa: E402

DATASETS = ("ETTh1", "ETTh2", "ETTm1", "ETTm2", "weather", "EPF_FR_BE", "vic_elec")


def decode_windows(patcher, array: np.ndarray, lookback: int, rate: float,
                   stride: int) -> np.ndarray:
    """Decoded starts ``(S, C, N)`` of every ``stride``-th window of ``array`` ``(T, C)``."""
    config = ReinPatchConfig(input_length=lookback, output_length=1, compression_rate=rate,
                             n_channels=array.shape[1], policy=patcher.policy_name,
                             budget="at_most" if patcher.at_most else "exact")
    network = ReinPatchNetwork(config, patcher=patcher).eval()
    ends = np.arange(lookback, array.shape[0] + 1, stride)
    windows = np.stack([array[end - lookback:end] for end in ends])  # (S, L, C)
    with torch.no_grad():
        return network.boundaries(torch.as_tensor(windows, dtype=torch.float32)).numpy()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--patcher", default=None,
                        help="patcher file (default: the one shipped in the package)")
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS))
    parser.add_argument("--lookback", type=int, default=96)
    parser.add_argument("--rate", type=float, default=8)
    parser.add_argument("--stride", type=int, default=16)
    parser.add_argument("--data-dir", default=str(DEFAULT_DATA))
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out-dir", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    set_threads(args.threads)
    if args.patcher is None:
        patcher, name = load_pretrained_patcher(), f"shipped ({PRETRAINED_SHA256[:10]})"
    else:
        patcher, name = load_patcher(args.patcher), args.patcher
    rows = []
    for dataset in args.datasets:
        splits = load_splits(dataset, args.lookback, 1, args.data_dir)
        starts = decode_windows(patcher, splits.val, args.lookback, args.rate, args.stride)
        stats = patch_statistics(starts, args.lookback)
        rows.append({"dataset": dataset, "windows": starts.shape[0] * starts.shape[1],
                     **{key: round(value, 4) for key, value in stats.items()}})
        print(f"[foundation-decode] {dataset}: grid distance {stats['grid_distance']:.2f}",
              flush=True)
    fields = list(rows[0])
    write_csv(args.out_dir / "foundation_decode.csv", rows, fields)
    lines = [stamp("python benchmarks/foundation_decode.py"
                   + (f" --patcher {args.patcher}" if args.patcher else "")), "",
             "# Where the foundation patcher cuts real series (zero-shot decode)", "",
             f"Patcher: {name}. Validation windows (every {args.stride}th, all channels), "
             f"L = {args.lookback}, R = {args.rate:g}. `grid_distance`: mean distance of a "
             "decoded start from the uniform grid's (steps); lengths in steps.", "",
             "| " + " | ".join(fields) + " |", "|" + "---|" * len(fields)]
    lines += ["| " + " | ".join(str(row[f]) for f in fields) + " |" for row in rows]
    write_markdown(args.out_dir / "foundation_decode.md", lines)


if __name__ == "__main__":
    sys.exit(main())
