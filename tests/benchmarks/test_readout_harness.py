"""The readout benchmark's bookkeeping: run keys shared with the LTSF cache, the model
arguments each variant builds, and the report's gaps."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def readout(import_benchmark):
    return import_benchmark("readout")


def _record(readout, patcher, variant, test, seed=0, extra=None, grid=None):
    spec = readout.ltsf.RunSpec("EPF_FR_BE", 24, patcher,
                                readout.run_params(patcher, 8, variant, extra), 96,
                                {"epochs": 4, "seed": seed})
    record = {"key": spec.key, "spec": readout.ltsf.asdict(spec), "test_mse": test,
              "test_mae": test, "train_seconds": 1.0}
    if grid is not None:
        record["patches"] = {"grid_distance": grid}
    return record


def test_flatten_runs_share_the_ltsf_keys_and_the_others_name_their_readout(readout):
    ltsf = readout.ltsf
    flatten = ltsf.RunSpec("ETTh1", 96, "learned", readout.run_params("learned", 8, "flatten"),
                           96, {"seed": 0})
    from_ltsf = ltsf.plan(["ETTh1"], [96], ["learned"], 96, {"seed": 0}, backbone="flatten")[0]
    assert flatten.key == from_ltsf.key
    assert readout.run_params("uniform", 8, "copy+skip") == {"R": 8, "readout": "copy",
                                                             "skip": True}
    assert readout.run_params("uniform", 8, "profile") == {"R": 8, "readout": "profile"}
    for variant in readout.VARIANTS:
        assert readout.variant_of(readout.run_params("learned", 8, variant)) == variant


@pytest.mark.parametrize("variant", ["flatten", "copy+skip", "profile", "query"])
def test_each_variant_builds_its_readout(readout, variant):
    ltsf = readout.ltsf
    spec = ltsf.RunSpec("ETTh1", 96, "uniform", readout.run_params("uniform", 8, variant), 96,
                        {"d_model": 16, "n_layers": 1, "dropout": 0.0, "seed": 0})
    arguments = ltsf.reinpatch_arguments(spec)
    assert (arguments["readout"], arguments["readout_skip"]) == readout.VARIANTS[variant]


def test_learned_settings_enter_the_key_and_the_row_label(readout):
    plain = readout.run_params("learned", 8, "copy+skip")
    tuned = readout.run_params("learned", 8, "copy+skip", {"kl": 0.01, "sample_weight": 1.0})
    assert tuned == {**plain, "kl": 0.01, "sample_weight": 1.0}
    spec = {"model": "learned", "params": tuned}
    assert readout.patcher_label(spec) == "learned [kl=0.01, sample_weight=1.0]"
    arguments = readout.ltsf.reinpatch_arguments(readout.ltsf.RunSpec(
        "ETTh1", 96, "learned", tuned, 96, {"d_model": 16, "n_layers": 1, "dropout": 0.0}))
    assert (arguments["kl_coef"], arguments["sample_loss_weight"]) == (0.01, 1.0)


def test_report_gives_each_gap_against_the_right_uniform(readout, tmp_path):
    records = [
        _record(readout, "uniform", "flatten", 0.40),
        _record(readout, "volatility", "flatten", 0.60),
        _record(readout, "uniform", "copy+skip", 0.38, seed=0),
        _record(readout, "uniform", "copy+skip", 0.42, seed=1),
        _record(readout, "volatility", "copy+skip", 0.44),
        _record(readout, "learned", "copy+skip", 0.39, grid=1.5),
    ]
    readout.write_report(records, tmp_path, {"epochs": 4, "seed": 0})
    text = (tmp_path / "readout.md").read_text()
    glance = {line.split("|")[2].strip(): line for line in text.splitlines()
              if line.startswith("| EPF_FR_BE H=24 R=8")}
    # copy+skip uniform averages 0.40: no gap to the flatten uniform; volatility +10 %;
    # learned -2.5 % at 1.50 steps from the grid
    assert "0.4000 ± 0.0283 (n=2) | +0.0 % | +10.0 % (n=1)" in glance["copy+skip"]
    assert "-2.5 % (n=1) | 1.50 |" in glance["copy+skip"]
    assert "+50.0 % (n=1)" in glance["flatten"]
    assert (tmp_path / "readout.csv").read_text().count("\n") == 6  # header + 5 rows


def test_policy_settings_reach_the_model(readout):
    """Warm-up, KL schedule and budget are model options; sigma and knots build a new
    zero-initialised patcher of those settings as the GRPG start."""
    params = readout.run_params("learned", 8, "copy+skip",
                                {"warmup": 1, "kl_schedule": "linear", "budget": "at_most",
                                 "sigma": 0.25, "knots": 2})
    arguments = readout.ltsf.reinpatch_arguments(readout.ltsf.RunSpec(
        "ETTh1", 96, "learned", params, 96, {"d_model": 16, "n_layers": 1, "dropout": 0.0,
                                             "seed": 0}))
    assert (arguments["patcher_warmup"], arguments["kl_schedule"], arguments["budget"]) == (
        1, "linear", "at_most")
    start = arguments["patcher_init"]
    assert (start.density_sigma, start.density_knots) == (0.25, 2)
    assert not start.output.weight.any()
    assert readout.run_params("foundation", 8, "copy+skip")["patcher"] == (
        readout.ltsf.PRETRAINED_SHA256[:10])


def test_policy_ablation_verdicts_use_two_seed_stds(readout, tmp_path):
    records = [
        _record(readout, "uniform", "copy+skip", 0.40, seed=0),
        _record(readout, "uniform", "copy+skip", 0.42, seed=1),
        _record(readout, "learned", "copy+skip", 0.30, seed=0, grid=2.0),
        _record(readout, "learned", "copy+skip", 0.31, seed=1, grid=2.0),
        _record(readout, "learned", "copy+skip", 0.40, seed=0, extra={"kl": 0.01}),
        _record(readout, "learned", "copy+skip", 0.43, seed=1, extra={"kl": 0.01}),
    ]
    readout.write_report(records, tmp_path, {"epochs": 4, "seed": 0})
    rows = {line.split("|")[2].strip(): line for line in (tmp_path / "readout.md").read_text()
            .splitlines() if line.startswith("| EPF_FR_BE H=24 R=8 | learned")}
    assert "| win |" in rows["learned"] and "| 2.00 |" in rows["learned"]
    assert "| tie |" in rows["learned [kl=0.01]"]
