"""The pure parts of benchmarks/scaling.py: the growth-exponent fit, the pure-N² prediction, and the
report written from fake rows (nothing is timed here)."""

from __future__ import annotations

import csv
import math

import pytest

LOOKBACKS = (96, 512, 1024, 2048, 4096)


@pytest.fixture(scope="module")
def scaling(import_benchmark):
    return import_benchmark("scaling")


@pytest.mark.parametrize("power", [0.0, 0.5, 1.0, 2.0])
def test_growth_exponent_of_a_power_law(scaling, power):
    times = [3e-3 * n ** power for n in LOOKBACKS]
    assert scaling.growth_exponent(LOOKBACKS, times) == pytest.approx(power, abs=1e-9)


def test_growth_exponent_of_a_fixed_cost_plus_linear_work_rises_towards_one(scaling):
    times = [50.0 + 0.01 * n for n in LOOKBACKS]
    whole = scaling.growth_exponent(LOOKBACKS, times)
    tail = scaling.growth_exponent(LOOKBACKS[-2:], times[-2:])
    assert 0 < whole < tail < 1


def test_growth_exponent_leaves_out_unusable_pairs(scaling):
    assert scaling.growth_exponent([96, 512, 1024], [1.0, None, 1024 / 96]) == pytest.approx(1.0)
    assert math.isnan(scaling.growth_exponent([96], [1.0]))
    assert math.isnan(scaling.growth_exponent([96, 96], [1.0, 2.0]))
    assert math.isnan(scaling.growth_exponent([96, 512], [0.0, 1.0]))


def fake_rows(scaling) -> list[dict]:
    """Rows as measure() returns them: the patcher and the rest linear in L, attention in N²."""
    rows = []
    for patcher in ("uniform", "learned"):
        for rate in (8, 32):
            for n in LOOKBACKS:
                tokens = math.ceil(n / rate)
                patcher_ms = 0.01 * n if patcher == "learned" else 0.0
                attention_ms, rest_ms = 1e-4 * tokens ** 2, 0.02 * n
                rows.append({
                    "patcher": patcher, "rate": rate, "lookback": n, "tokens": tokens,
                    "params": 1000 + n, "train_step_ms": 3 * (patcher_ms + attention_ms + rest_ms),
                    "predict_ms": 70 + patcher_ms + attention_ms + rest_ms,
                    "forward_ms": patcher_ms + attention_ms + rest_ms, "patcher_ms": patcher_ms,
                    "attention_ms": attention_ms, "rest_ms": rest_ms, "peak_rss_mb": 450 + n / 100,
                    "rss_growth_mb": n / 100, "threads": 1,
                })
    return rows


def test_exponents_per_patcher_and_rate(scaling):
    found = {(e["patcher"], e["rate"]): e for e in scaling.exponents(fake_rows(scaling))}
    assert set(found) == {(p, r) for p in ("uniform", "learned") for r in (8, 32)}
    learned = found[("learned", 8)]
    assert learned["rest_ms"] == pytest.approx(1.0)
    assert learned["patcher_ms"] == pytest.approx(1.0)
    assert learned["attention_ms_tail"] == pytest.approx(2.0)  # N = L / 8 exactly there
    assert learned["lookbacks"] == list(LOOKBACKS)
    assert math.isnan(found[("uniform", 8)]["patcher_ms"])  # zero times: no fit
    assert learned["rest_ms_last"] == pytest.approx(0.02 * 4096)


def test_quadratic_prediction_scales_from_the_longest_lookback(scaling):
    rows = fake_rows(scaling)
    predicted = scaling.quadratic_prediction(rows)
    longest = next(r for r in rows if (r["patcher"], r["rate"], r["lookback"])
                   == ("learned", 8, 4096))
    assert predicted[("learned", 8, 4096)] == pytest.approx(longest["attention_ms"])
    assert predicted[("learned", 8, 2048)] == pytest.approx(longest["attention_ms"] / 4)


def test_report_from_fake_rows(scaling, tmp_path):
    rows = fake_rows(scaling)
    found = scaling.write(rows, "python benchmarks/scaling.py --fake", 1, "a test machine",
                          tmp_path, commit="abc1234", date="2026-01-01 00:00 UTC")
    assert len(found) == 4
    with (tmp_path / "scaling.csv").open() as handle:
        table = list(csv.DictReader(handle))
    assert len(table) == len(rows)
    assert {"commit", "date", "threads", "machine", "lookback", "train_step_ms"} <= set(table[0])
    assert table[0]["commit"] == "abc1234" and table[0]["machine"] == "a test machine"
    assert [r["patcher"] for r in table[:10]] == ["uniform"] * 10  # uniform rows first
    assert (tmp_path / "scaling.md").is_file()


def test_the_forward_split_times_the_decode_and_the_attention_of_a_network(scaling):
    """The hooks find what prediction runs: the patcher's decode and the encoder's attention
    each take time, and the parts do not exceed the whole."""
    import torch

    from reinpatch_forecast.nn import BackboneConfig, ReinPatchConfig, ReinPatchNetwork

    torch.manual_seed(0)
    network = ReinPatchNetwork(ReinPatchConfig(input_length=48, output_length=12,
                                               compression_rate=8,
                                               backbone=BackboneConfig(d_model=16)))
    parts = scaling.split_forward(network, torch.randn(8, 48, 2), repeats=2, warmup=1)
    assert parts["patcher_ms"] > 0 and parts["attention_ms"] > 0
    assert parts["patcher_ms"] + parts["attention_ms"] <= parts["forward_ms"]
    assert "decode_starts" not in vars(network.patcher)  # the wrapper is removed
