"""Check that a model built from given keyword arguments forecasts bit-identically under two
versions of the code.

Each model case fits a small model for one epoch on the shipped ETTh1 copy (7 channels, 64
training windows, fixed seed) and forecasts 24 steps; each network case (``net_*``: the
token-part switches, which are network settings) trains a small network for three GRPG steps on
random data. ``--reference`` names a checkout in which the ablations are package options
(e.g. commit ``8f861df``): there a case is built as ``ReinPatchModel(**kwargs)`` or
``ReinPatchNetwork(ReinPatchConfig(**kwargs))``; in this checkout by
``benchmarks.variants.make_model`` or ``make_network`` (the package's plain model or network
when no ablation is asked). Both run in fresh processes with their own ``PYTHONPATH``, so each
imports its own package. The script prints a markdown table of the largest absolute difference
per case and exits with 1 unless every one is 0.

Usage::

    python benchmarks/check_variants.py --reference /path/to/reference/checkout
    python benchmarks/check_variants.py --reference /path/to/reference --cases default policy_topk
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

#: name -> keyword arguments (on top of :data:`BASE`). The first block is the package's own
#: method; the rest are the ablation families of ``benchmarks/variants.py``.
CASES: dict[str, dict] = {
    "default": {},
    "package_defaults": {"d_model": 64, "n_heads": 4, "n_layers": 2},
    "demo_model": {"d_model": 32, "n_heads": 4, "n_layers": 2},  # cli/demo.py's network
    "two_levels": {"levels": 2, "compression_rate": (4, 4)},
    "at_most": {"budget": "at_most"},
    "uniform": {"patcher": "uniform"},
    "covariates": {"_covariates": True},
    "foundation_frozen": {"patcher": "pretrained"},
    "foundation_init": {"patcher_init": "pretrained"},
    "policy_topk": {"policy": "topk"},
    "policy_offset": {"policy": "offset"},
    "policy_offset_two_levels": {"policy": "offset", "levels": 2, "compression_rate": (4, 4)},
    "readout_profile": {"readout": "profile"},
    "readout_interpolate": {"readout": "interpolate"},
    "readout_query": {"readout": "query"},
    "readout_flatten": {"readout": "flatten"},
    "readout_flatten_two_levels": {"readout": "flatten", "levels": 2,
                                   "compression_rate": (4, 4)},
    "skip_off": {"readout_skip": False},
    # Token-part switches were network settings only: checked on the network's GRPG step.
    "net_default": {"_network": True},
    "net_no_local_mean": {"_network": True, "use_local_mean": False, "readout_skip": False},
    "net_no_resampled": {"_network": True, "use_resampled": False},
    "net_no_position": {"_network": True, "use_position": False},
    "net_no_local_activation": {"_network": True, "local_activation": False},
    "net_spike_task_parts": {"_network": True, "use_resampled": False,
                             "local_activation": False, "levels": 2,
                             "compression_rate": (4, 2)},
    "kl_schedule_linear": {"kl_schedule": "linear", "n_epochs": 2},
    "patcher_warmup": {"patcher_warmup": 1, "n_epochs": 2},
    "sample_loss_weight": {"sample_loss_weight": 1.0},
}

#: Arguments every case shares: a small, quick model.
BASE = dict(input_chunk_length=96, output_chunk_length=24, d_model=16, n_heads=2,
            n_layers=1, batch_size=32, n_epochs=1, random_state=0)


#: Network cases: a small network trained for a few GRPG steps on random data.
NETWORK = dict(input_length=32, output_length=6, n_channels=2, compression_rate=4,
               group_size=4, d_model=16, n_heads=2, n_layers=1, patcher_hidden_size=8,
               patcher_layers=2)


def _network_worker(kwargs: dict, out: str, variants: bool) -> None:
    """Train a network of ``kwargs`` for 3 GRPG steps and save its forecast to ``out``."""
    import torch

    torch.manual_seed(0)
    values = {**NETWORK, **kwargs}
    if variants:
        from benchmarks.variants import make_network
        network = make_network(**values)
    else:
        from reinpatch_forecast.nn import ReinPatchConfig, ReinPatchNetwork
        network = ReinPatchNetwork(ReinPatchConfig(**values))
    generator = torch.Generator().manual_seed(1)
    x = torch.randn(16, 32, 2, generator=generator).cumsum(dim=1)
    y = torch.randn(16, 6, 2, generator=generator)
    optimizer = torch.optim.Adam(network.parameters(), lr=1e-2)
    for _ in range(3):
        optimizer.zero_grad()
        network.training_losses(x, y).loss.backward()
        optimizer.step()
    with torch.no_grad():
        np.save(out, network.eval()(x).numpy())


def _worker(case: str, out: str, variants: bool) -> None:
    """Fit ``case`` with the package on ``sys.path`` and save its forecast to ``out``."""
    import torch

    kwargs = dict(CASES[case])
    if kwargs.pop("_network", False):
        if isinstance(kwargs.get("compression_rate"), list):
            kwargs["compression_rate"] = tuple(kwargs["compression_rate"])
        _network_worker(kwargs, out, variants)
        return
    from darts import TimeSeries

    from reinpatch_forecast.cli.demo import demo_splits

    torch.set_num_threads(1)
    kwargs = {**BASE, **CASES[case]}
    covariates = kwargs.pop("_covariates", False)
    if isinstance(kwargs.get("compression_rate"), list):
        kwargs["compression_rate"] = tuple(kwargs["compression_rate"])
    kwargs["pl_trainer_kwargs"] = {"enable_progress_bar": False, "logger": False,
                                   "enable_model_summary": False, "accelerator": "cpu"}
    train, _ = demo_splits(96, 24)
    train = train[-(96 + 24 + 63) - 200:]
    past = None
    if covariates:
        # The first channel's square as a past covariate of the other six.
        past = TimeSeries.from_times_and_values(train.time_index, train.values()[:, :1] ** 2)
        train = train[train.components[1:].tolist()]
    if variants:
        from benchmarks.variants import make_model
        model = make_model(**kwargs)
    else:
        from reinpatch_forecast import ReinPatchModel
        model = ReinPatchModel(**kwargs)
    model.fit(train, past_covariates=past, max_samples_per_ts=64, verbose=False)
    forecast = model.predict(24, series=train, past_covariates=past, verbose=False)
    np.save(out, forecast.values())


def _run(case: str, code_root: str, out: str, with_variants: bool) -> None:
    env = {**os.environ, "PYTHONPATH": code_root, "OMP_NUM_THREADS": "1",
           "PYTHONDONTWRITEBYTECODE": "1"}
    args = [sys.executable, str(Path(__file__).resolve()), "--worker", case, "--out", out]
    if with_variants:
        args.append("--variants")
    done = subprocess.run(args, env=env, cwd=tempfile.gettempdir(), capture_output=True,
                          text=True)
    if done.returncode:
        raise RuntimeError(f"{case} failed under {code_root}:\n{done.stderr[-3000:]}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reference",
                        help="checkout of the code in which the ablations are package options")
    parser.add_argument("--cases", nargs="*", default=list(CASES))
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    parser.add_argument("--variants", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        if args.variants:
            sys.path.insert(0, str(ROOT))
        _worker(args.worker, args.out, args.variants)
        return 0
    if not args.reference:
        parser.error("--reference is required")
    failures = 0
    print("| case | kwargs | max abs diff |")
    print("|---|---|---|")
    with tempfile.TemporaryDirectory() as folder:
        for case in args.cases:
            old, new = f"{folder}/{case}_old.npy", f"{folder}/{case}_new.npy"
            _run(case, args.reference, old, with_variants=False)
            _run(case, str(ROOT), new, with_variants=True)
            a, b = np.load(old), np.load(new)
            diff = float(np.abs(a - b).max())
            failures += diff != 0.0
            print(f"| {case} | `{json.dumps(CASES[case])}` | {diff:.3g} |", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
