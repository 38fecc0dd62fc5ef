"""The benchmark runner's protocol: the plan of a command line, the run records, the table
writer (seed aggregation, rows picked on validation, ratios to a reference row), the committed
reports rebuilt from their records, the experiment specs, and one tiny fit end to end."""

from __future__ import annotations

import argparse
import csv
import math
import shutil
from pathlib import Path

import numpy as np
import pytest

import run as runner
import specs
import tables
from _data import Data
from tables import Table

RESULTS = Path(runner.__file__).resolve().parent / "results"
TABLE = Table(keys=("cell", "model"), columns=("cell", "model", "test_mse", "test_mse_std",
                                               "n_seeds", "seeds", "ratio", "commit", "date"),
              mean=("test_mse", "val_mse"), ratio="ratio")


def _args(**given) -> argparse.Namespace:
    values = dict(datasets=None, horizons=None, lookback=None, settings=None, models=None,
                  require=None, seeds=None, budget=None)
    return argparse.Namespace(**{**values, **given})


def random_walk_data(lookback: int, series: int, length: int) -> Data:
    """A seeded Gaussian random walk plus noise, split 70/10/20 in time and scaled on its
    training rows (validation and test keep their lookback rows)."""
    rng = np.random.default_rng([0, 0])
    values = np.cumsum(rng.standard_normal((length, series)), axis=0)
    values += rng.standard_normal((length, series))
    train_end, val_end = int(0.7 * length), int(0.8 * length)
    train = values[:train_end]
    scaled = ((values - train.mean(axis=0)) / train.std(axis=0)).astype(np.float32)
    return Data({"train": scaled[:train_end], "val": scaled[train_end - lookback:val_end],
                 "test": scaled[val_end - lookback:]})


def _record(model: str, seed: int, test: float, val: float, cell: str = "a",
            date: str = "2026-01-01 00:00 UTC", **extra) -> dict:
    return {"cell": cell, "model": model, "seed": seed, "test_mse": test, "val_mse": val,
            "commit": f"c{seed}", "date": date, **extra}


# -- plan --------------------------------------------------------------------------------------


def test_one_row_one_seed_plans_one_run_of_that_row():
    runs = runner.plan("ltsf", _args(datasets=["ETTh1"], horizons=["96"],
                                     models=["uniform R=8"], seeds=[0]))
    assert len(runs) == 1
    run = runs[0]
    assert (run["dataset"], run["horizon"], run["lookback"], run["model"]) == \
        ("ETTh1", 96, 96, "uniform R=8")
    assert run["kwargs"] == {**specs.BACKBONE, "patcher": "uniform", "compression_rate": 8}
    assert run["training"] == specs.BUDGETS["reduced"] and run["seed"] == 0


def test_a_run_the_committed_records_hold_is_not_run_again():
    """Committed records (converted from earlier scripts, without a run hash) and new ones are
    matched by their row's identity and seed."""
    records = runner.load_jsonl(RESULTS / "ltsf_runs.jsonl")
    runs = runner.plan("ltsf", _args(datasets=["ETTh1"], horizons=["96"],
                                     models=["learned", "uniform R=8"], seeds=[0, 1, 2, 99]))
    done = {(run["model"], run["seed"]) for run in runs if runner.is_recorded(run, "ltsf", records)}
    assert done == {(model, seed) for model in ("learned", "uniform R=8") for seed in (0, 1, 2)}
    fresh = runner.record_of(runs[-1], {"val_mse": 1.0}, specs.EXPERIMENTS["ltsf"], code="c")
    assert runner.is_recorded(runs[-1], "ltsf", [fresh])


def test_a_tag_plans_every_row_it_names_and_require_narrows_it():
    runs = runner.plan("ltsf", _args(models=["uniform"], seeds=[0]))
    assert [r["model"] for r in runs] == [f"uniform R={r}" for r in specs.TUNING_RATES]
    readout = runner.plan("readout", _args(models=["uniform"], require=["R=8", "copy+skip"]))
    assert [r["model"] for r in readout] == ["uniform copy+skip R=8"]
    with pytest.raises(SystemExit, match="unknown model or tag"):
        runner.plan("ltsf", _args(models=["no such model"]))


def test_seeds_make_new_runs_but_untrained_baselines_run_once():
    runs = runner.plan("ltsf", _args(models=["repeat", "learned"], seeds=[0, 1, 2]))
    keys = {runner.run_key(r) for r in runs}
    assert len(keys) == len(runs) == 2 + 3  # repeat twice (all windows, drop_last), learned x3
    assert sorted(r["seed"] for r in runs if r["family"] == "repeat") == [0, 0]


def test_budgets_and_per_dataset_windows_reach_the_runs():
    full = runner.plan("ltsf", _args(models=["learned"], budget="full", seeds=[0]))[0]
    assert full["training"]["max_train_windows"] is None and full["training"]["epochs"] == 10
    events = runner.plan("events", _args(models=["uniform"], seeds=[0]))
    windows = {r["dataset"]: r["training"]["max_train_windows"] for r in events}
    assert windows == {"EPF_FR_BE": 2048, "vic_elec": 8192}
    assert {(r["dataset"], r["lookback"], r["horizon"]) for r in events} == {
        ("EPF_FR_BE", 168, 24), ("vic_elec", 336, 48), ("vic_elec", 336, 336)}


def test_compression_rows_run_only_at_their_lookbacks():
    runs = runner.plan("compression", _args(datasets=["ETTh1"], horizons=["96"], seeds=[0]))
    cells = sorted((r["lookback"], r["kwargs"]["compression_rate"], r["model"]) for r in runs)
    assert [(lb, rate) for lb, rate, name in cells if name.startswith("uniform")] == [
        (96, 4), (96, 8), (96, 16), (96, 32), (512, 16), (512, 32), (512, 64)]


def test_record_names_its_row_and_copies_pick_and_reference():
    run = runner.plan("compression", _args(datasets=["ETTh1"], horizons=["96"], seeds=[1],
                                           models=["learned R=32"], lookback=[512]))[0]
    record = runner.record_of(run, {"test_mse": 0.5, "val_mse": 0.7},
                              specs.EXPERIMENTS["compression"])
    assert {k: record[k] for k in ("dataset", "horizon", "lookback", "R", "N", "model",
                                   "seed", "reference")} == {
        "dataset": "ETTh1", "horizon": 96, "lookback": 512, "R": 32, "N": 16,
        "model": "learned", "seed": 1, "reference": "uniform"}
    assert record["key"] == runner.run_key(run) and record["run"] == run
    peer = runner.plan("ltsf", _args(models=["dlinear lr=0.0001"], seeds=[0]))[0]
    record = runner.record_of(peer, {}, specs.EXPERIMENTS["ltsf"])
    assert record["pick"]["row"] == "dlinear (lr=0.0001)" and record["protocol"] == "reduced"


# -- table writer ------------------------------------------------------------------------------


def test_seeds_aggregate_to_mean_and_sample_std_and_a_rerun_seed_keeps_the_later_record():
    records = [_record("m", 0, 1.0, 1.0), _record("m", 1, 3.0, 1.0),
               _record("m", 1, 5.0, 1.0, date="2026-01-02 00:00 UTC"),
               _record("m", 1, 9.0, 1.0, date="2025-12-31 00:00 UTC")]
    (row,) = tables.report_rows(records, TABLE)
    assert row["test_mse"] == 3.0 and row["test_mse_std"] == pytest.approx(math.sqrt(8))
    assert (row["n_seeds"], row["seeds"]) == (2, "0 1")
    assert row["commit"] == "c0/c1" and row["date"] == "2026-01-02 00:00 UTC"
    (single,) = tables.report_rows([_record("m", 0, 1.0, 1.0)], TABLE)
    assert single["test_mse_std"] == 0.0


def test_a_tuned_row_is_picked_on_validation_not_test_and_needs_every_candidate():
    pick = {"group": "u tuned", "of": 2, "keep": True}
    records = [_record("u R=4", 0, 0.1, 0.9, pick={**pick, "row": "u tuned (R=4)"}),
               _record("u R=8", 0, 0.9, 0.1, pick={**pick, "row": "u tuned (R=8)"})]
    rows = {r["model"]: r for r in tables.report_rows(records, TABLE)}
    assert set(rows) == {"u R=4", "u R=8", "u tuned (R=8)"}
    assert rows["u tuned (R=8)"]["test_mse"] == 0.9
    assert [r["model"] for r in tables.report_rows(records[:1], TABLE)] == ["u R=4"]


def test_peers_show_only_the_picked_rate_and_say_when_it_was_not_tuned():
    def peer(lr, seed, val):
        return _record(f"p lr={lr}", seed, 0.5, val, pick={
            "group": "p", "row": f"p ({lr})", "partial_row": f"p ({lr}, untuned)", "of": 2,
            "keep": False, "set": {"lr": lr}})

    rows = tables.report_rows([peer(1, 0, 0.3), peer(2, 0, 0.2)], TABLE)
    assert [(r["model"], r["lr"]) for r in rows] == [("p (2)", 2)]
    assert [r["model"] for r in tables.report_rows([peer(1, 0, 0.3)], TABLE)] == ["p (1, untuned)"]


def test_picks_compare_candidates_on_the_seeds_every_candidate_has():
    three = [[{"seed": s, "val_mse": v} for s, v in zip((0, 1, 2), (0.5, 0.1, 0.1))]]
    one = [[{"seed": 0, "val_mse": 0.4}]]
    assert tables.pick_on_validation(three + one) == 1  # seed 0 only: 0.4 < 0.5
    assert tables.pick_on_validation([[{"seed": 1, "val_mse": 0.3}]] + one) == 0  # no common
    with pytest.raises(ValueError, match="no candidate"):
        tables.pick_on_validation([])


def test_a_row_chosen_among_lookbacks_takes_the_lookback_of_the_lowest_validation_mse():
    """A pick ``over`` the lookback compares the candidates of one dataset and horizon across
    lookbacks (never on test MSE) and keeps the winner's lookback; each lookback keeps its row."""
    table = Table(keys=("cell", "lookback", "model"),
                  columns=("cell", "lookback", "model", "test_mse"), mean=("test_mse", "val_mse"))
    pick = {"group": "m (L by validation)", "row": "m (L by validation)", "of": 2, "keep": True,
            "over": ["lookback"]}
    records = [_record("m", 0, test=0.40, val=0.70, lookback=96, pick=pick),
               _record("m", 0, test=0.30, val=0.80, lookback=512, pick=pick),
               _record("m", 0, test=0.50, val=0.60, lookback=512, cell="b", pick=pick),
               _record("m", 0, test=0.20, val=0.90, lookback=96, cell="b", pick=pick)]
    rows = {(r["cell"], r["lookback"], r["model"]): r["test_mse"]
            for r in tables.report_rows(records, table)}
    assert rows[("a", 96, "m (L by validation)")] == 0.40
    assert rows[("b", 512, "m (L by validation)")] == 0.50
    assert rows[("a", 512, "m")] == 0.30 and len(rows) == 6


def test_a_peer_picks_its_rate_at_each_lookback_and_the_pair_among_lookbacks():
    """A record in two picks (a list): the learning rate per lookback, and rate and lookback
    together; the rate candidates' own rows are hidden."""
    table = Table(keys=("cell", "lookback", "model"),
                  columns=("cell", "lookback", "model", "test_mse"), mean=("test_mse", "val_mse"))
    records = []
    for lookback, lr, test, val in ((96, 1e-3, 0.41, 0.72), (96, 1e-4, 0.40, 0.71),
                                    (336, 1e-3, 0.37, 0.69), (336, 1e-4, 0.38, 0.70)):
        name = f"p (lr={lr:g})"
        pick = [{"group": "p", "row": "p", "of": 2, "keep": False},
                {"group": "p (L)", "row": "p (L)", "of": 4, "keep": True, "over": ["lookback"]}]
        records.append(_record(name, 0, test=test, val=val, lookback=lookback, pick=pick))
    rows = {(r["lookback"], r["model"]): r["test_mse"] for r in tables.report_rows(records, table)}
    assert rows == {(96, "p"): 0.40, (336, "p"): 0.37, (336, "p (L)"): 0.37}


def test_the_summary_puts_each_model_and_lookback_on_one_row_beside_published_numbers():
    rows = [{"protocol": "full", "dataset": "D", "horizon": h, "lookback": lookback,
             "model": model, "test_mse": mse, "n_seeds": seeds}
            for model, lookback, seeds, values in (
                ("dlinear (lr=0.0001)", 96, 3, (0.1, 0.2, 0.3, 0.4)),
                ("learned", 96, 2, (0.2, 0.3)),
                ("uniform R=4", 96, 3, (0.1,)),
                ("dlinear (lr=0.01, 30 epochs)", 96, 1, (9.0,)),
                ("learned (lr=0.0001, untuned)", 336, 1, (0.7,)))
            for h, mse in zip((96, 192, 336, 720), values)]
    rows.append({**rows[0], "protocol": "reduced", "test_mse": 9.0})
    published = {"P": ("336", {"D": [0.5, 0.5, 0.5, 0.5]}), "Q": ("96", {"E": {"avg": 1.0}}),
                 "S": ("searched", {"D": {"avg": 0.45}})}
    table = tables.summary_rows(rows, ("learned", "dlinear"), published, (96, 192, 336, 720),
                                "full", "D")
    assert [(r["model"], r["L"]) for r in table] == [
        ("learned", 96), ("learned", 336), ("dlinear", 96), ("P (published)", "336"),
        ("S (published)", "searched")]
    learned, _, dlinear, p, q = table
    assert "avg" not in learned and learned["192"] == 0.3 and learned["seeds"] == 2
    assert dlinear["avg"] == pytest.approx(0.25) and dlinear["720"] == 0.4
    assert p["avg"] == pytest.approx(0.5) and q["avg"] == 0.45


def test_a_row_that_picks_the_lookback_is_one_summary_line_naming_each_horizons_lookback():
    rows = [{"protocol": "full", "dataset": "D", "horizon": h, "lookback": lookback,
             "model": "m (L by validation)", "test_mse": mse, "n_seeds": 1}
            for h, lookback, mse in ((96, 336, 0.1), (192, 512, 0.2), (336, 512, 0.3),
                                     (720, 512, 0.4))]
    same = [{**r, "model": "n (L by validation)", "lookback": 336} for r in rows]
    table = tables.summary_rows(rows + same, ("m (L by validation)", "n (L by validation)"),
                                {}, (96, 192, 336, 720), "full", "D")
    assert [(r["model"], r["L"]) for r in table] == [
        ("m (L by validation)", "336 / 512 / 512 / 512"), ("n (L by validation)", "336")]
    assert table[0]["avg"] == pytest.approx(0.25) and table[0]["720"] == 0.4


def test_the_report_gives_records_the_picks_their_spec_names_now(tmp_path, monkeypatch):
    """A record made before its spec joined the lookback contest still counts in it."""
    spec = specs.LTSF_MODELS["dlinear shared lr=0.0001"]
    old = {**spec, "pick": spec["pick"][0]}  # the rate pick alone
    records = []
    for lookback in specs.LOOKBACKS:
        for lr in specs.DLINEAR_SHARED_LRS:
            model = f"dlinear shared lr={lr:g}"
            run = runner.plan("ltsf", _args(datasets=["ETTh1"], horizons=["96"],
                                            lookback=[lookback], models=[model], seeds=[0],
                                            budget="full"))[0]
            measured = {"val_mse": lookback / 1000 + lr, "test_mse": lookback / 1000,
                        "val_mae": 0.0, "test_mae": 0.0, "test_windows": 1, "epochs": 1}
            record = runner.record_of(run, measured, specs.EXPERIMENTS["ltsf"], "c")
            if lookback == 96:
                record["pick"] = old["pick"]
            records.append(record)
    for record in records:
        runner.append_jsonl(record, tmp_path / "ltsf_runs.jsonl")
    (tmp_path / "recipe_runs.jsonl").write_text("")
    runner.report("ltsf", tmp_path)
    with (tmp_path / "ltsf.csv").open() as handle:
        picked = [r for r in csv.DictReader(handle)
                  if r["model"] == "dlinear, shared weights (L by validation)"]
    assert [(r["lookback"], float(r["test_mse"])) for r in picked] == [("96", 0.096)]


def test_old_ltsf_records_without_a_lookback_count_as_lookback_96():
    records = runner.load_jsonl(RESULTS / "ltsf_runs.jsonl")
    assert any("lookback" not in r for r in records)
    rows = tables.report_rows(records, specs.TABLES["ltsf"])
    assert {r["lookback"] for r in rows} >= {96} and None not in {r["lookback"] for r in rows}


def test_patchtst_runs_take_its_published_sizes_for_their_dataset_and_batch_128():
    runs = runner.plan("ltsf", _args(datasets=["ETTh1", "ETTm1"], horizons=["96"],
                                     lookback=[336], models=["patchtst"], seeds=[0]))
    assert {(r["dataset"], r["lr"]) for r in runs} == {
        (d, lr) for d in ("ETTh1", "ETTm1") for lr in specs.PEER_LRS}
    for run in runs:
        assert run["kwargs"] == specs.PATCHTST_SIZES[run["dataset"]]
        assert run["training"]["batch_size"] == 128 and run["lookback"] == 336
    assert {r["kwargs"]["hidden_size"] for r in runs} == {16, 128}


def test_ratios_divide_by_the_reference_row_of_the_same_cell():
    records = [_record("uniform", 0, 0.5, 0.5, reference="uniform"),
               _record("learned", 0, 0.4, 0.5, reference="uniform"),
               _record("learned", 0, 0.4, 0.5, cell="b", reference="uniform")]
    rows = {(r["cell"], r["model"]): r for r in tables.report_rows(records, TABLE)}
    assert rows[("a", "learned")]["ratio"] == pytest.approx(0.8)
    assert "ratio" not in rows[("a", "uniform")] and "ratio" not in rows[("b", "learned")]
    gap = Table(keys=TABLE.keys, columns=TABLE.columns, ratio="gap", gap_percent=True,
                ratio_on_reference=True, reference_std="ref_std")
    rows = {r["model"]: r for r in tables.report_rows(records[:2], gap)}
    assert rows["learned"]["gap"] == pytest.approx(-20.0) and rows["uniform"]["gap"] == 0.0
    assert rows["learned"]["ref_std"] == 0.0


def test_csv_has_exactly_the_table_columns(tmp_path):
    rows = tables.write_report("t", TABLE, [_record("m", 0, 1.0, 1.0, extra=3)], tmp_path)
    with (tmp_path / "t.csv").open() as handle:
        found = list(csv.DictReader(handle))
    assert list(found[0]) == list(TABLE.columns) and found[0]["ratio"] == ""
    assert rows[0]["test_mse"] == 1.0
    assert "| cell | model |" in (tmp_path / "t.md").read_text()


@pytest.mark.parametrize("name", sorted(specs.TABLES))
def test_committed_reports_rebuild_from_their_records(name, tmp_path):
    """Every committed CSV is what ``run.py report`` makes of the committed JSONL records:
    the same columns, rows and values (the LTSF CSV also holds the rows picked among the
    recipe records)."""
    for records in {name, "recipe"} if name == "ltsf" else {name}:
        shutil.copy(RESULTS / f"{records}_runs.jsonl", tmp_path)
    runner.report(name, tmp_path)
    with (RESULTS / f"{name}.csv").open() as a, (tmp_path / f"{name}.csv").open() as b:
        committed, rebuilt = list(csv.reader(a)), list(csv.reader(b))
    assert committed[0] == rebuilt[0] == list(specs.TABLES[name].columns)
    assert committed == rebuilt


def test_ltsf_md_is_the_summary_beside_published_numbers_and_ltsf_rows_md_every_row(tmp_path):
    """The committed LTSF reports are what ``run.py report`` makes of the committed records
    (the summary takes the default recipe's rows from the recipe records)."""
    for name in ("ltsf", "recipe"):
        shutil.copy(RESULTS / f"{name}_runs.jsonl", tmp_path)
    runner.report("ltsf", tmp_path)
    for report in ("ltsf.md", "ltsf_rows.md"):
        assert (tmp_path / report).read_text() == (RESULTS / report).read_text(), report
    summary = (tmp_path / "ltsf.md").read_text()
    assert "## ETTh1, full protocol" in summary and "(published) |" in summary


def test_recipe_rows_picked_by_lookback_reach_the_ltsf_csv_once_every_lookback_ran(tmp_path):
    """``learned (L by validation)``: the default network at L = 96 or the narrow one at the
    long lookbacks, whichever has the lowest validation MSE, in a cell where all ran."""
    row, (default, narrow) = next(iter(specs.RECIPE_BY_LOOKBACK.items()))
    cell = {"experiment": "recipe", "protocol": "full", "dataset": "ETTh1", "horizon": 96,
            "seed": 0, "commit": "c", "date": "2026-01-01 00:00 UTC"}
    runs = [{**cell, "model": default, "lookback": 96, "val_mse": 0.7, "test_mse": 0.38},
            {**cell, "model": narrow, "lookback": 336, "val_mse": 0.6, "test_mse": 0.37},
            {**cell, "model": narrow, "lookback": 512, "val_mse": 0.8, "test_mse": 0.36}]
    (tmp_path / "ltsf_runs.jsonl").write_text("")
    for count in (2, 3):
        for record in runs[:count]:
            tables.append_jsonl(record, tmp_path / "recipe_runs.jsonl")
        runner.report("ltsf", tmp_path)
        with (tmp_path / "ltsf.csv").open() as handle:
            picked = [r for r in csv.DictReader(handle) if r["model"] == row]
        if count == 2:
            (tmp_path / "recipe_runs.jsonl").unlink()
            assert picked == []
    assert [(r["lookback"], r["test_mse"]) for r in picked] == [("336", "0.37")]
    assert "| 336 | 0.3700 |" in (tmp_path / "ltsf.md").read_text()


# -- specs -------------------------------------------------------------------------------------


def test_every_experiment_names_a_table_known_models_and_budgets():
    families = {"reinpatch", "dlinear", "nlinear", "tsmixer", "tide", "patchtst",
                "repeat", "naive", "spike"}
    for name, experiment in specs.EXPERIMENTS.items():
        assert name in specs.TABLES
        assert experiment.get("budget", "reduced") in specs.BUDGETS
        for model in experiment["models"].values():
            assert model["family"] in families
            for pick in tables._picks(model):
                assert {"group", "row", "of", "keep"} <= set(pick)
        defaults = experiment["default_models"]
        for dataset in experiment["datasets"]:
            runner.select_models(experiment, None, None, dataset)
        assert defaults


def test_every_reinpatch_row_builds_as_the_packages_model(tmp_path):
    """Each model spec's keyword arguments are options of the package's ``ReinPatchModel``
    (the constructor checks them; nothing is trained): no row needs an archived ablation."""
    seen = set()
    for experiment in specs.EXPERIMENTS.values():
        for model in experiment["models"].values():
            kwargs = model.get("kwargs", {})
            if model["family"] != "reinpatch" or repr(sorted(kwargs.items())) in seen:
                continue
            seen.add(repr(sorted(kwargs.items())))
            run = {"lookback": 96, "horizon": 24, "seed": 0, "kwargs": kwargs,
                   "family": "reinpatch", "training": specs.BUDGETS["reduced"]}
            runner.build_model(run, tmp_path, progress=False)
    assert len(seen) > 50


# -- end to end --------------------------------------------------------------------------------


def test_one_tiny_fit_and_score_on_generated_series(tmp_path):
    data = random_walk_data(24, series=2, length=400)
    run = {"lookback": 24, "horizon": 6, "setting": "target", "seed": 0, "family": "reinpatch",
           "kwargs": {"patcher": "uniform", "compression_rate": 4, "d_model": 8, "n_heads": 2,
                      "n_layers": 1},
           "training": {"epochs": 2, "patience": 1, "batch_size": 16, "lr": 1e-3,
                        "max_train_windows": 32}}
    measured = runner.fit_and_score(run, data, tmp_path, patch_stats=True)
    assert measured["test_windows"] == 400 - int(0.8 * 400) - 6 + 1
    assert measured["epochs"] in (1, 2) and measured["grid_distance"] == 0.0
    # one validation loss an epoch run, none of Lightning's sanity check
    curve = measured["val_loss_by_epoch"]
    assert len(curve) == measured["epochs"] and all(np.isfinite(curve))
    again = runner.fit_and_score(run, data, tmp_path)
    assert again["test_mse"] == measured["test_mse"]  # same seed, same score
    baseline = runner.fit_and_score({**run, "family": "repeat"}, data, tmp_path)
    x = data.arrays["test"]
    windows = np.lib.stride_tricks.sliding_window_view(x, 30, axis=0)  # (W, C, 30)
    errors = windows[:, :, 24:] - windows[:, :, 23:24]
    assert baseline["test_mse"] == pytest.approx(float(np.mean(errors.astype(float) ** 2)))
    assert baseline["epochs"] == 0


def test_a_recipe_row_of_its_own_patience_or_epochs_sets_the_training_not_the_model(tmp_path):
    (run,) = runner.plan("recipe", _args(datasets=["ETTh1"], horizons=["96"], seeds=[0],
                                         models=[f"{specs.RECIPE}, patience 10"], budget="full"))
    assert run["training"] == {**specs.BUDGETS["full"], "patience": 10}
    assert "patience" not in run["kwargs"]
    model = runner.build_model(run, tmp_path, progress=False)
    (stopper,) = [c for c in model.trainer_params["callbacks"] if hasattr(c, "patience")]
    assert stopper.patience == 10
    (run,) = runner.plan("recipe", _args(datasets=["ETTh1"], horizons=["96"], seeds=[0],
                                         models=[f"{specs.RECIPE}, 30 epochs, no early stopping"]))
    assert run["training"] == {**specs.BUDGETS["reduced"], "patience": 30, "epochs": 30}
    assert runner.build_model(run, tmp_path, progress=False).n_epochs == 30


def test_data_without_covariates_refuses_a_setting():
    data = Data({"train": np.zeros((4, 1))})
    assert data.covariates("target") == {}
    with pytest.raises(ValueError, match="unknown setting 'load'"):
        data.covariates("load")


def test_runs_of_the_shipped_patcher_name_its_file():
    (run,) = runner.plan("ltsf", _args(models=["foundation"], seeds=[0]))
    assert run["shipped_patcher"] == runner.shipped_patcher() and len(run["shipped_patcher"]) == 10
    (uniform,) = runner.plan("ltsf", _args(models=["uniform R=8"], seeds=[0]))
    assert "shipped_patcher" not in uniform


def test_a_dry_run_of_an_in_process_experiment_prints_its_plan_and_runs_nothing(tmp_path,
                                                                                capsys):
    args = argparse.Namespace(models=["uniform", "learned"], seeds=[0, 1], cycles=None,
                              out_dir=tmp_path, dry_run=True)
    runner.run_in_process("spike", args)
    planned = capsys.readouterr().out.splitlines()
    assert planned == [f"[spike] {model} seed {seed}"
                       for model in ("uniform", "learned") for seed in (0, 1)]
    assert list(tmp_path.iterdir()) == []  # no record, no table
