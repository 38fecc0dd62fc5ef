"""The pretraining corpus of the foundation patcher.

Three sources of univariate series, each returned as ``{name: values}`` (1-D float arrays):

- :func:`ltsf_training_series`: every channel of the LTSF files, **training split only** (the
  standard borders of :mod:`reinpatch_forecast.data`), so no benchmark validation or test
  row is ever seen by a pretrained patcher;
- :func:`library_series`: real series bundled with sktime and statsmodels (airline passengers,
  lynx, PBS, US macro data, CO2, sunspots, El Nino, Nile);
- :func:`synthetic_series`: trends, seasonality, regime switches, spikes, random walks
  and impulses whose size sets a later plateau.

:func:`default_corpus` joins them: it is the corpus of the patcher shipped in
``reinpatch_forecast/pretrained/`` (see its README for the command that reproduces the file).
"""

from __future__ import annotations

import os

import numpy as np

from ..errors import ReinPatchInputError

__all__ = ["SYNTHETIC_KINDS", "synthetic_series", "library_series", "ltsf_training_series",
           "default_corpus"]

#: The families of synthetic series, in the order :func:`synthetic_series` cycles through them.
SYNTHETIC_KINDS = ("trend", "seasonal", "multi_seasonal", "regime", "spikes", "random_walk",
                   "level_shifts", "bursts", "impulses")


def synthetic_series(n_series: int = 48, length: int = 1024,
                     random_state: int = 0) -> dict[str, np.ndarray]:
    """Synthetic univariate series with structure a patcher can exploit.

    Parameters
    ----------
    n_series
        How many series; the kinds of :data:`SYNTHETIC_KINDS` are cycled.
    length
        Steps per series.
    random_state
        Seed; the same seed gives the same series.

    Returns
    -------
    dict
        ``{"synthetic/<kind>/<i>": (length,) float64}``.
    """
    if n_series < 1 or length < 2:
        raise ReinPatchInputError(
            f"need n_series >= 1 and length >= 2, got {n_series} and {length}."
        )
    rng = np.random.default_rng(random_state)
    t = np.arange(length, dtype=np.float64)
    out = {}
    for i in range(n_series):  # a few dozen series, built once: not a hot path
        kind = SYNTHETIC_KINDS[i % len(SYNTHETIC_KINDS)]
        noise = rng.normal(0.0, rng.uniform(0.05, 0.3), length)
        if kind == "trend":
            values = rng.normal(0, 2e-3) * t + rng.normal(0, 1e-6) * t**2 + noise
        elif kind == "seasonal":
            period = rng.choice([7, 12, 24, 48, 96])
            values = np.sin(2 * np.pi * t / period + rng.uniform(0, 2 * np.pi)) + noise
        elif kind == "multi_seasonal":
            p1, p2 = rng.choice([6, 12, 24]), rng.choice([96, 168, 336])
            values = (np.sin(2 * np.pi * t / p1) + rng.uniform(0.5, 2) * np.sin(2 * np.pi * t / p2)
                      + noise)
        elif kind == "regime":
            cuts = np.sort(rng.choice(np.arange(1, length), size=rng.integers(2, 8),
                                      replace=False))
            regime = np.searchsorted(cuts, t, side="right")
            levels = rng.normal(0, 2, regime.max() + 1)
            scales = rng.uniform(0.05, 1.0, regime.max() + 1)
            values = levels[regime] + scales[regime] * rng.normal(size=length)
        elif kind == "spikes":
            period = rng.integers(16, 97)
            values = noise.copy()
            values[rng.integers(0, period)::period] += rng.uniform(3, 8)
        elif kind == "random_walk":
            values = np.cumsum(rng.normal(0, 0.1, length))
        elif kind == "level_shifts":
            jumps = (rng.uniform(size=length) < 0.01) * rng.normal(0, 3, length)
            values = np.cumsum(jumps) + noise
        elif kind == "bursts":  # quiet noise with short high-variance episodes
            active = np.convolve(rng.uniform(size=length) < 0.01, np.ones(20), mode="same") > 0
            values = noise * np.where(active, 10.0, 1.0)
        else:  # impulses: a one-step spike at a random time sets the level of a later plateau,
            # so a forecast needs the spike's size, which a patch around it isolates
            values = rng.normal(0.0, 0.3, length)
            event = int(rng.integers(0, 32))
            while event < length:
                size = rng.uniform(-2.0, 2.0)
                values[event] += size
                begin = event + int(rng.integers(1, 9))
                end = begin + int(rng.integers(16, 33))
                values[begin:end] += size
                event = end + int(rng.integers(8, 41))
        out[f"synthetic/{kind}/{i}"] = values
    return out


def library_series() -> dict[str, np.ndarray]:
    """Real univariate series bundled with sktime and statsmodels (no download).

    Returns
    -------
    dict
        ``{"<library>/<name>": (T,) float64}``; missing values (CO2) are linearly interpolated.
    """
    import statsmodels.api as sm
    from sktime.datasets import load_airline, load_lynx, load_PBS_dataset

    out = {
        "sktime/airline": load_airline().to_numpy(np.float64),
        "sktime/lynx": load_lynx().to_numpy(np.float64),
        "sktime/PBS": load_PBS_dataset().to_numpy(np.float64),
    }
    macro = sm.datasets.macrodata.load_pandas().data
    for column in ("realgdp", "realcons", "realinv", "cpi", "m1", "unemp", "infl", "tbilrate"):
        out[f"statsmodels/macrodata/{column}"] = macro[column].to_numpy(np.float64)
    co2 = sm.datasets.co2.load_pandas().data["co2"].interpolate(limit_direction="both")
    out["statsmodels/co2"] = co2.to_numpy(np.float64)
    out["statsmodels/sunspots"] = (
        sm.datasets.sunspots.load_pandas().data["SUNACTIVITY"].to_numpy(np.float64)
    )
    elnino = sm.datasets.elnino.load_pandas().data.drop(columns="YEAR")
    out["statsmodels/elnino"] = elnino.to_numpy(np.float64).reshape(-1)  # month after month
    out["statsmodels/nile"] = sm.datasets.nile.load_pandas().data["volume"].to_numpy(np.float64)
    return out


def ltsf_training_series(data_dir: str | os.PathLike,
                         datasets: tuple[str, ...] = ("ETTh1", "ETTh2", "ETTm1", "ETTm2",
                                                      "weather")) -> dict[str, np.ndarray]:
    """Every channel of the LTSF files, cut to the standard **training** split.

    Parameters
    ----------
    data_dir
        Folder of the LTSF CSVs (see :func:`reinpatch_forecast.data.load_ltsf_frame`).
    datasets
        Which files.

    Returns
    -------
    dict
        ``{"ltsf/<dataset>/<column>": (T_train,) float64}``, unscaled (the network normalises
        every window itself).
    """
    from ..data import load_ltsf_frame, split_borders

    out = {}
    for name in datasets:
        frame = load_ltsf_frame(name, data_dir=data_dir)
        train_end = split_borders(name, len(frame), lookback=1)["train"][1]
        values = frame.iloc[:train_end]
        for column in values.columns:
            out[f"ltsf/{name}/{column}"] = values[column].to_numpy(np.float64)
    return out


def default_corpus(data_dir: str | os.PathLike | None = None,
                   random_state: int = 0) -> dict[str, np.ndarray]:
    """The corpus of the shipped foundation patcher.

    Parameters
    ----------
    data_dir
        Folder of the LTSF CSVs; ``None`` leaves the LTSF training splits out.
    random_state
        Seed of the synthetic series.
    """
    corpus = {}
    if data_dir is not None:
        corpus.update(ltsf_training_series(data_dir))
    corpus.update(library_series())
    corpus.update(synthetic_series(random_state=random_state))
    return corpus
