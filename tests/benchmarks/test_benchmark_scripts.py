"""Pure helpers of the benchmark scripts (benchmarks/_common.py, boundaries.py, compression.py,
synthetic.py, soak.py, panel.py): patch statistics, seed aggregation, sharding, timing and commit
stamps, generated data, plans, growth and scaling fits; and a tiny run of soak.py and panel.py."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from support import run_script

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture(scope="module")
def common():
    if str(BENCHMARKS) not in sys.path:
        sys.path.insert(0, str(BENCHMARKS))
    import _common

    return _common


@pytest.fixture(scope="module")
def boundaries(common):
    return common.import_benchmark("boundaries")


def test_patch_statistics_of_the_grid_and_of_a_skewed_patching(common):
    grid = np.array([[0, 8, 16, 24]])  # L = 32, N = 4: the uniform grid
    stats = common.patch_statistics(grid, 32)
    assert stats == {"first_length": 8.0, "last_length": 8.0, "one_step_share": 0.0,
                     "length_std": 0.0, "grid_distance": 0.0, "tokens_used": 4.0}
    skewed = np.array([[[0, 20, 21, 22]], [[0, 8, 16, 24]]])  # (S, C, N)
    stats = common.patch_statistics(skewed, 32)
    assert stats["first_length"] == pytest.approx((20 + 8) / 2)
    assert stats["last_length"] == pytest.approx((10 + 8) / 2)
    assert stats["one_step_share"] == pytest.approx(2 / 8)
    assert stats["grid_distance"] == pytest.approx((0 + 12 + 5 + 2) / 8)
    # An at-most budget's unused slots (at L) count in no statistic but the tokens used.
    fewer = common.patch_statistics(np.array([[0, 16, 32, 32], [0, 8, 16, 24]]), 32)
    assert fewer["tokens_used"] == pytest.approx(3.0)
    assert fewer["last_length"] == pytest.approx((16 + 8) / 2)
    assert fewer["first_length"] == pytest.approx((16 + 8) / 2)
    # [0, 16] is the uniform grid of two patches
    assert fewer["grid_distance"] == pytest.approx(0.0)
    assert fewer["length_std"] == pytest.approx(0.0)


def test_aggregate_seeds_means_stds_and_later_duplicates(common):
    records = [{"model": "a", "seed": 0, "mse": 1.0}, {"model": "a", "seed": 1, "mse": 3.0},
               {"model": "b", "seed": 0, "mse": 2.0}, {"model": "b", "seed": 0, "mse": 4.0}]
    summary = common.aggregate_seeds(records, lambda r: r["model"], ["mse", "absent"])
    assert summary["a"]["mse"] == 2.0
    assert summary["a"]["mse_std"] == pytest.approx(np.sqrt(2))
    assert (summary["a"]["n"], summary["a"]["seeds"]) == (2, "0 1")
    assert (summary["b"]["n"], summary["b"]["mse"], summary["b"]["mse_std"]) == (1, 4.0, 0.0)
    assert summary["a"]["absent"] is None


def test_shards_partition_the_plan(common):
    items = list(range(7))
    parts = [common.shard(items, f"{i}/3") for i in range(3)]
    assert sorted(sum(parts, [])) == items
    assert common.shard(items, None) == items
    with pytest.raises(SystemExit):
        common.shard(items, "3/3")


def test_median_seconds_warms_up_then_takes_the_median(common):
    calls = []
    seconds = common.median_seconds(lambda: calls.append(1), repeats=3, warmup=2)
    assert len(calls) == 5 and seconds >= 0.0


def test_git_commit_admits_uncommitted_changes_to_the_named_paths(common, tmp_path, monkeypatch):
    def git(*args):
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
                       cwd=tmp_path, check=True, capture_output=True)

    try:  # a throwaway repository: the real checkout is shared and stays untouched
        git("init", "-q")
        (tmp_path / "ops.py").write_text("a = 1\n")
        (tmp_path / "other.py").write_text("b = 1\n")
        git("add", ".")
        git("commit", "-q", "-m", "first")
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("needs git")
    monkeypatch.setattr(common, "REPO", tmp_path)
    plain = common.git_commit()
    assert plain != "unknown"
    (tmp_path / "other.py").write_text("b = 2\n")
    assert common.git_commit(["ops.py"]) == plain
    (tmp_path / "ops.py").write_text("a = 2\n")
    assert common.git_commit(["ops.py"]) == f"{plain} + uncommitted changes to ops.py"


def test_format_mean_std(common):
    assert common.format_mean_std(0.4, 0.0, 1) == "0.4000"
    assert common.format_mean_std(0.4, 0.01234, 3) == "0.4000 ± 0.0123"


@pytest.mark.parametrize("task", ["random_walk", "trend_bursts"])
def test_generated_series_are_seeded_and_split_in_time(boundaries, task):
    a = boundaries.make_splits(task, 3, 1000, 96, data_seed=0)
    b = boundaries.make_splits(task, 3, 1000, 96, data_seed=0)
    c = boundaries.make_splits(task, 3, 1000, 96, data_seed=1)
    assert np.array_equal(a.test, b.test) and not np.array_equal(a.test, c.test)
    assert a.train.shape == (700, 3) and a.train.dtype == np.float32
    assert a.val.shape == (100 + 96, 3) and a.test.shape == (200 + 96, 3)
    assert np.allclose(a.train.mean(axis=0), 0, atol=1e-5)
    assert np.allclose(a.train.std(axis=0), 1, atol=1e-4)
    assert np.array_equal(a.val[-96:], a.test[:96])  # test's lookback = the end of val


def test_boundaries_summary_ratio_to_uniform(boundaries):
    def record(model, seed, mse):
        params = {"R": 8} if model == "uniform" else {"R": 8, "policy": model}
        family = "uniform" if model == "uniform" else "learned"
        return {"spec": {"dataset": "random_walk", "horizon": 24, "model": family,
                         "params": params, "settings": {"seed": seed}},
                "seed": seed, "test_mse": mse,
                "patches": {"first_length": 8.0, "last_length": 8.0, "one_step_share": 0.0,
                            "grid_distance": 0.0}}

    rows = boundaries.summarise([record("uniform", 0, 0.5), record("uniform", 1, 0.7),
                                 record("density", 0, 0.45), record("density", 1, 0.63)])
    assert [r["model"] for r in rows] == ["uniform", "density"]
    assert rows[1]["ratio"] == pytest.approx(0.9)
    assert rows[0]["test_mse_std"] == pytest.approx(np.std([0.5, 0.7], ddof=1))


@pytest.fixture(scope="module")
def compression(common):
    return common.import_benchmark("compression")


def test_compression_plan_covers_every_cell_once(compression):
    specs = compression.plan(["ETTh1", "ETTm1"], [96, 336], [96, 512], ["uniform", "learned"],
                             "offset", lambda seed: {"seed": seed}, [0])
    assert len(specs) == 2 * 2 * (4 + 3) * 2 == 56
    assert len({s.key for s in specs}) == len(specs)
    cells = {(s.lookback, s.params["R"]) for s in specs}
    assert cells == {(96, 4), (96, 8), (96, 16), (96, 32), (512, 16), (512, 32), (512, 64)}
    assert {compression.token_count(L, R) for L, R in cells} == {24, 12, 6, 3, 32, 16, 8}
    learned = next(s for s in specs if s.model == "learned")
    assert learned.params == {"R": 4, "G": 4, "policy": "offset", "readout": "copy",
                              "skip": True}
    flatten = compression.plan(["ETTh1"], [96], [96], ["uniform"], "density",
                               lambda seed: {"seed": seed}, [0], backbone="flatten")
    assert flatten[0].params == {"R": 4}  # the key of the runs made before the readout


def _compression_record(model, seed, mse, policy="density", rate=8, lookback=96,
                        backbone="copy+skip"):
    params = {"R": rate} if model == "uniform" else {"R": rate, "G": 4, "policy": policy}
    params.update({"copy+skip": {"readout": "copy", "skip": True}, "flatten": {}}[backbone])
    return {"spec": {"dataset": "ETTh1", "horizon": 96, "lookback": lookback, "model": model,
                     "params": params, "settings": {"seed": seed}},
            "test_mse": mse, "train_seconds": 1.0,
            "patches": None if model == "uniform" else {"grid_distance": 0.5,
                                                        "one_step_share": 0.0}}


def test_compression_summary_pairs_learned_with_uniform_of_its_backbone(compression):
    record = _compression_record
    rows = compression.summarise([record("uniform", 0, 0.40), record("uniform", 1, 0.42),
                                  record("learned", 0, 0.39), record("learned", 1, 0.39),
                                  record("learned", 0, 0.44, policy="offset"),
                                  record("uniform", 0, 0.50, backbone="flatten"),
                                  record("learned", 0, 0.60, backbone="flatten")])
    assert len(rows) == 1
    row = rows[0]
    assert (row["N"], row["uniform"]["n"]) == (12, 2)
    assert row["learned"]["ratio"] == pytest.approx(0.39 / 0.41)
    assert row["learned"]["grid_distance"] == 0.5
    assert row["learned [offset]"]["ratio"] == pytest.approx(0.44 / 0.41)
    assert row["learned [flatten head]"]["ratio"] == pytest.approx(0.60 / 0.50)


def test_compression_verdict_needs_every_large_r_and_half_the_doubled_cells(compression):
    def rows(learned: dict, uniform: dict):
        return compression.summarise(
            [_compression_record("learned", 0, mse, rate=rate) for rate, mse in learned.items()]
            + [_compression_record("uniform", 0, mse, rate=rate) for rate, mse in uniform.items()])

    uniform = {4: 0.40, 8: 0.41, 16: 0.42, 32: 0.45}
    # below uniform at R=16 and 32; learned at 2R <= uniform at R in 2 of 3 pairs
    met = compression.verdict_compression(rows({4: 0.39, 8: 0.40, 16: 0.41, 32: 0.44}, uniform))
    assert "2 of 2 cells" in met and "2 of 3 cells" in met and "**met**" in met
    # one R >= 16 cell where learned is not below uniform fails the target
    lost = compression.verdict_compression(rows({4: 0.39, 8: 0.40, 16: 0.43, 32: 0.44}, uniform))
    assert "1 of 2 cells" in lost and "R=16 (0.4300 vs 0.4200)" in lost and "NOT met" in lost
    # learned at 2R above uniform at R in most pairs fails it too
    coarse = compression.verdict_compression(rows({4: 0.39, 8: 0.45, 16: 0.41, 32: 0.44},
                                                  uniform))
    assert "1 of 3 cells" in coarse and "NOT met" in coarse
    assert "not judged" in compression.verdict_compression(rows({4: 0.3}, {4: 0.4}))


@pytest.fixture(scope="module")
def synthetic(common):
    return common.import_benchmark("synthetic")


def test_synthetic_plan_and_networks(synthetic):
    runs = synthetic.plan(["spike", "two_scale"], None, [1, 2], 300, 8, [0, 1])
    spike = [r for r in runs if r[0] == "spike"]
    two_scale = [r for r in runs if r[0] == "two_scale"]
    assert len(spike) == 2 * len(synthetic.DEFAULT_VARIANTS["spike"])
    assert len(two_scale) == 2 * 2 * len(synthetic.DEFAULT_VARIANTS["two_scale"])
    assert len({synthetic.run_key(*r) for r in runs}) == len(runs)
    # Six top-level tokens in both two_scale networks, as in the test they come from.
    one = synthetic.network_config("two_scale", "density", 1, 8)
    two = synthetic.network_config("two_scale", "density", 2, 8)
    assert (one.n_patches, two.n_coarse_patches, two.policy) == (6, 6, "density")
    spike = synthetic.network_config("spike", "density [sigma 1]", 1, 8)
    assert spike.patcher_options == {"density_knots": 4, "density_sigma": 1.0}
    assert not spike.use_resampled


def test_synthetic_summary_ratio_per_levels(synthetic):
    def record(levels, variant, seed, mse):
        return {"task": "two_scale", "levels": levels, "variant": variant, "seed": seed,
                "mse": mse, "grid_distance": 0.0, "one_step_share": 0.0, "train_seconds": 1}

    rows = synthetic.summarise([record(1, "uniform", 0, 0.2), record(1, "density", 0, 0.1),
                                record(2, "uniform", 0, 0.02), record(2, "density", 0, 0.03)])
    ratios = {(r["levels"], r["variant"]): r["ratio"] for r in rows}
    assert ratios[(1, "density")] == pytest.approx(0.5)
    assert ratios[(2, "density")] == pytest.approx(1.5)
    assert rows[0]["near_spike"] is None


# -- soak and panel (issue 18): a smoke run of each script, and their pure helpers ------------


@pytest.fixture(scope="module")
def soak(common):
    return common.import_benchmark("soak")


@pytest.fixture(scope="module")
def panel(common):
    return common.import_benchmark("panel")


def test_soak_growth_counts_from_cycle_20_and_fits_the_trend(soak):
    def sample(cycle, rss, fds=5):
        return soak.Sample("quiet", cycle, rss, rss, fds, 1000 + cycle, cycle, 0.1)

    # the first cycles' growth (caches) does not count; later RSS rises 1 MB per 10 cycles
    samples = [sample(0, 100.0), sample(10, 150.0)] + [sample(c, 150.0 + (c - 20) / 10)
                                                       for c in range(20, 210, 10)]
    grown = soak.growth(samples)
    assert (grown["from_cycle"], grown["to_cycle"]) == (20, 200)
    assert grown["rss_mb"] == pytest.approx(18.0)
    assert grown["rss_slope_mb_per_100"] == pytest.approx(10.0)
    assert grown["met"] and grown["open_fds"] == 0
    samples[-1] = sample(200, 168.0, fds=6)  # one descriptor more than at cycle 20
    assert not soak.growth(samples)["met"]


def test_soak_script_smoke(tmp_path):
    run_script(BENCHMARKS / "soak.py", "--cycles", "4", "--every", "2", "--out-dir",
               str(tmp_path))
    with (tmp_path / "soak.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert [(r["variant"], int(r["cycle"])) for r in rows] == [
        (v, c) for v in ("quiet", "checkpoints") for c in (0, 2, 4)]
    assert all(float(r["rss_mb"]) > 0 and int(r["open_fds"]) >= 3 and r["commit"] and r["date"]
               for r in rows)
    report = (tmp_path / "soak.md").read_text()
    assert "| quiet |" in report and "| checkpoints |" in report and "0 → 4" in report


def test_panel_linear_fit_of_a_line_and_of_a_bend(panel):
    def row(series, seconds):
        return panel.Row("m", series, seconds, 0.0, 0.0, 0.0, None, 0.0, None, 0.0, 1)

    line = panel.linear_fit([row(n, 0.05 + 2e-4 * n) for n in (500, 1000, 2500, 5000)])
    assert line["per_series_ms"] == pytest.approx(0.2)
    assert line["fixed_s"] == pytest.approx(0.05)
    assert line["worst_gap"] == pytest.approx(0.0, abs=1e-9)
    bent = panel.linear_fit([row(n, 1e-7 * n * n) for n in (500, 1000, 2500, 5000)])
    assert bent["worst_gap"] > 0.2


def test_panel_script_smoke(tmp_path):
    run_script(BENCHMARKS / "panel.py", "--series", "40", "--fit-series", "10", "--sizes", "10",
               "40", "--repeats", "1", "--epochs", "1", "--out-dir", str(tmp_path))
    with (tmp_path / "panel.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert [(r["model"], int(r["series"])) for r in rows] == [
        (m, n) for m in ("ReinPatch", "DLinear") for n in (10, 40)]
    assert all(float(r["predict_seconds"]) > float(r["network_seconds"]) > 0 for r in rows)
    assert all((r["wrapper_ms_per_series"] != "") == (r["model"] == "ReinPatch") for r in rows)
    report = (tmp_path / "panel.md").read_text()
    assert "ReinPatch's own wrapper adds" in report and "| DLinear |" in report
