"""benchmarks/events.py: the two event datasets' splits and covariates (train-only scalers), the
original-scale MAE, the plan, the choices made on validation, the verdicts, the command line's
errors, and one tiny fit with covariates through ``covariates.run_one``."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
TRAINING = {"epochs": 1, "batch_size": 32, "lr": 1e-3, "patience": 2, "d_model": 8,
            "n_layers": 1, "dropout": 0.1, "seed": 0, "max_train_windows": 32}
#: Rows of each file and its 70/10/20 split (target rows): the data README's rule.
ROWS = {"EPF_FR_BE": (16080, 11256, 1608, 3216), "vic_elec": (52608, 36825, 5262, 10521)}

needs_data = pytest.mark.skipif(not (DATA / "EPF_FR_BE.csv.gz").is_file()
                                or not (DATA / "vic_elec.csv.gz").is_file(),
                                reason="the event datasets are not in shared/data")


@pytest.fixture(scope="module")
def events(import_benchmark):
    return import_benchmark("events")


@pytest.fixture(scope="module")
def loaded(events):
    return {d: events.event_data(d, events.LOOKBACKS[d], events.HORIZONS[d][0], str(DATA))
            for d in events.DATASETS}


# -- data --------------------------------------------------------------------------------------


@needs_data
@pytest.mark.parametrize("dataset", ["EPF_FR_BE", "vic_elec"])
def test_splits_follow_the_readme_and_split_borders(events, loaded, dataset):
    from reinpatch_forecast.data import split_borders

    data = loaded[dataset]
    n, n_train, n_val, n_test = ROWS[dataset]
    lookback = events.LOOKBACKS[dataset]
    assert data.splits.borders == split_borders(dataset, n, lookback) == {
        "train": (0, n_train), "val": (n_train - lookback, n_train + n_val),
        "test": (n - n_test - lookback, n)}
    rows = {name: len(series) for name, series in data.target.items()}
    assert rows == {"train": n_train, "val": n_val + lookback, "test": n_test + lookback}
    roles = events.event_roles(dataset)
    assert data.splits.columns == roles.target_columns
    assert data.array("test").shape == (n_test + lookback, len(roles.target_columns))
    assert np.array_equal(data.array("val"), data.splits.val)
    # the covariates cover every row once, on the targets' dates
    for series in (data.past, data.future):
        if series is not None:
            assert len(series) == n
            assert series.slice_intersect(data.target["test"]).time_index.equals(
                data.target["test"].time_index)


@needs_data
def test_covariate_columns_and_roles(events, loaded):
    epf, vic = loaded["EPF_FR_BE"], loaded["vic_elec"]
    assert epf.past is None
    assert epf.future.components.tolist() == ["gen_forecast", "system_load"]
    assert set(epf.covariates("covariates")) == {"future_covariates"}
    assert epf.covariates("target") == {}
    assert vic.past.components.tolist() == ["temperature"]
    assert vic.future.components.tolist() == ["holiday", "hour", "day_of_week", "month"]
    assert set(vic.covariates("covariates")) == {"past_covariates", "future_covariates"}
    # 2011-12-31 13:00 UTC is midnight of Sunday 1 January 2012 in Melbourne (a holiday)
    first = vic.future[0].values()[0]
    assert first[1:].tolist() == [0.0, 1.0, 0.0] and first[0] > 0
    with pytest.raises(ValueError, match="unknown setting"):
        epf.covariates("calendar")


@needs_data
@pytest.mark.parametrize("dataset", ["EPF_FR_BE", "vic_elec"])
def test_the_scalers_are_fitted_on_the_training_rows_only(events, loaded, dataset):
    data = loaded[dataset]
    n_train = ROWS[dataset][1]
    for values in (data.splits.train,
                   data.covariate_splits.train,
                   (data.past or data.future).values()[:n_train]):
        assert np.allclose(values.mean(axis=0), 0.0, atol=1e-4)
        assert np.allclose(values.std(axis=0), 1.0, atol=1e-3)
    lookback = events.LOOKBACKS[dataset]
    for values in (data.splits.test[lookback:], data.covariate_splits.test[lookback:]):
        assert not np.allclose(values.mean(axis=0), 0.0, atol=1e-3)
    # the scaler maps the scaled test rows back onto the file's values
    from reinpatch_forecast.data import load_ltsf_frame

    frame = load_ltsf_frame(dataset, data_dir=DATA)
    start, stop = data.splits.borders["test"]
    expected = frame[list(data.splits.columns)].to_numpy()[start:stop]
    assert np.allclose(data.splits.inverse_transform(data.splits.test), expected, atol=1e-3 *
                       np.abs(expected).max())


def test_unknown_dataset_is_refused(events):
    with pytest.raises(ValueError, match="unknown event dataset 'ETTh1'"):
        events.event_roles("ETTh1")


# -- original-scale MAE ------------------------------------------------------------------------


def test_original_scale_mae_by_hand(events):
    # BE's scaler std 20 EUR/MWh, FR's 10: scaled MAEs 0.5 and 0.2 are 10 and 2 EUR/MWh
    assert events.original_scale_mae([0.5, 0.2], [20.0, 10.0]) == pytest.approx(6.0)
    with pytest.raises(ValueError, match="2 channel MAEs for a scaler of 1"):
        events.original_scale_mae([0.5, 0.2], [20.0])


def test_original_scale_mae_equals_the_inverse_transformed_errors(events, import_benchmark):
    from reinpatch_forecast.data import prepare_ltsf, sliding_windows

    protocol = import_benchmark("_protocol")
    rng = np.random.default_rng(0)
    index = pd.date_range("2015-01-01", periods=400, freq="h")
    frame = pd.DataFrame({"BE_price": 40 + 20 * rng.standard_normal(400),
                          "FR_price": 35 + 5 * rng.standard_normal(400)}, index=index)
    splits = prepare_ltsf(frame, "custom", 24, 6)
    predict = protocol.baseline_predict_fn("naive", 6, {"K": 24})
    scores = protocol.evaluate_windows(predict, splits.test, 24, 6)
    assert np.mean(scores["mae_per_channel"]) == pytest.approx(scores["mae"])
    x, y = sliding_windows(splits.test, 24, 6)
    direct = np.abs(splits.inverse_transform(predict(x)) - splits.inverse_transform(y))
    found = events.original_scale_mae(scores["mae_per_channel"], splits.std)
    assert found == pytest.approx(float(direct.mean()), rel=1e-6)


def test_seasonal_naive_repeats_the_last_season(import_benchmark):
    protocol = import_benchmark("_protocol")
    x = np.arange(10, dtype=np.float32).reshape(1, 10, 1)
    forecast = protocol.seasonal_naive_forecast(x, 7, 3)
    assert forecast[0, :, 0].tolist() == [7, 8, 9, 7, 8, 9, 7]
    with pytest.raises(ValueError, match="longer than the lookback"):
        protocol.seasonal_naive_forecast(x, 7, 11)


# -- plan --------------------------------------------------------------------------------------


def _plan(events, models=None, seeds=(0, 1)):
    return events.make_plan(events.DATASETS, events.HORIZONS, events.SETTINGS,
                            models or events.MODELS, TRAINING, list(seeds))


def test_plan_keys_settings_peers_and_baselines(events):
    import ltsf

    specs = _plan(events)
    assert len({s.key for s in specs}) == len(specs)
    trained = [s for s in specs if s.model not in ("naive", "repeat")]
    assert all(s.params["covariates"] in events.SETTINGS for s in trained)
    with_covariates = {s.dataset: s.params for s in trained
                       if s.params["covariates"] == "covariates"}
    assert with_covariates["EPF_FR_BE"]["future"] == "gen_forecast,system_load"
    assert "past" not in with_covariates["EPF_FR_BE"]
    assert with_covariates["vic_elec"]["past"] == "temperature"
    assert with_covariates["vic_elec"]["calendar"].endswith("@Australia/Melbourne")
    # the untrained baselines: once per cell, NaiveSeasonal with a day's period
    naive = {(s.dataset, s.horizon): s.params["K"] for s in specs if s.model == "naive"}
    assert naive == {("EPF_FR_BE", 24): 24, ("vic_elec", 48): 48, ("vic_elec", 336): 48}
    assert sum(s.model == "repeat" for s in specs) == 3
    assert {(s.dataset, s.lookback) for s in specs} == {("EPF_FR_BE", 168), ("vic_elec", 336)}
    # per cell, setting and seed: each peer at every rate, uniform and learned at every R
    for cell in {(s.dataset, s.horizon, s.params["covariates"], s.settings["seed"])
                 for s in trained}:
        here = [s for s in trained
                if (s.dataset, s.horizon, s.params["covariates"], s.settings["seed"]) == cell]
        for peer in events.DARTS_PEERS:
            assert sorted(s.params["lr"] for s in here if s.model == peer) == \
                sorted(ltsf.PEER_LRS)
        for family in ("uniform", "learned"):
            assert sorted(s.params["R"] for s in here if s.model == family) == \
                sorted(ltsf.UNIFORM_SIZES)
        reinpatch = [s for s in here if s.model in ("uniform", "learned")]
        assert all(s.params["readout"] == "copy" and s.params["skip"] for s in reinpatch)
    # seed-major: every run of seed 0 before the first of seed 1
    seeds = [s.settings["seed"] for s in trained]
    assert seeds == sorted(seeds)


def test_plan_without_learned_tuned_has_learned_at_r8_only(events):
    specs = _plan(events, ["learned", "uniform"], seeds=[0])
    assert {s.params["R"] for s in specs if s.model == "learned"} == {8}
    with pytest.raises(ValueError, match="unknown model"):
        _plan(events, ["patchtst"])
    with pytest.raises(ValueError, match="unknown setting"):
        events.make_plan(["EPF_FR_BE"], events.HORIZONS, ["calendar"], ["uniform"], TRAINING, [0])
    with pytest.raises(ValueError, match="unknown event dataset"):
        events.make_plan(["weather"], {"weather": (96,)}, ["target"], ["uniform"], TRAINING, [0])


# -- report: choices on validation -------------------------------------------------------------


def _records(events, scores):
    """Fake cached runs of EPF H=24, setting target, seeds 0 and 1: ``scores(spec)`` gives
    (val MSE, test MSE) of each run."""
    records = []
    for spec in _plan(events, ["uniform", "learned_tuned", "dlinear", "tide", "naive"]):
        if spec.dataset != "EPF_FR_BE" or spec.params.get("covariates", "target") != "target":
            continue
        val, test = scores(spec)
        records.append({"key": spec.key, "spec": dataclasses.asdict(spec), "label": spec.label,
                        "setting": "target", "val_mse": val, "test_mse": test,
                        "test_mae": test / 2, "test_mae_original": 10 * test, "epochs": 1,
                        "train_seconds": 1.0, "commit": "abc1234",
                        "date": "2026-01-01 00:00 UTC", "settings": spec.settings})
    return records


def test_tuned_rows_and_peer_rates_are_picked_on_validation(events):
    def scores(spec):
        seed = spec.settings.get("seed", 0)
        if spec.model in ("uniform", "learned"):  # validation prefers R=16, test R=4
            val = {4: 0.5, 8: 0.45, 16: 0.4, 24: 0.6}[spec.params["R"]]
            test = {4: 0.3, 8: 0.5, 16: 0.45, 24: 0.6}[spec.params["R"]]
            return val + 0.01 * seed, test + 0.01 * seed
        if spec.model in ("dlinear", "tide"):  # validation prefers lr 1e-4, test 1e-3
            return ({1e-3: 0.5, 1e-4: 0.4}[spec.params["lr"]],
                    {1e-3: 0.2, 1e-4: 0.6}[spec.params["lr"]])
        return 0.9, 0.9

    rows = events.rows_for_report(_records(events, scores), TRAINING)
    by_name = {r["name"]: r for r in rows}
    assert by_name["uniform tuned"]["model"] == "uniform tuned (R=16)"
    assert by_name["learned tuned"]["model"] == "learned tuned (R=16)"
    assert by_name["uniform tuned"]["test_mse"] == pytest.approx(0.455)  # seeds 0 and 1
    assert by_name["uniform tuned"]["n_seeds"] == 2
    assert by_name["uniform R=8"]["test_mse"] == pytest.approx(0.505)
    assert by_name["learned"]["test_mse"] == pytest.approx(0.505)
    assert by_name["dlinear"]["model"] == "dlinear (lr=0.0001)"
    assert by_name["tide"]["model"] == "tide (lr=0.0001)"
    assert by_name["tide"]["test_mse"] == pytest.approx(0.6)
    # the original-scale MAE is averaged over the same runs as the row's MSE
    for row in rows:
        assert row["test_mae_original"] == pytest.approx(10 * row["test_mse"])
    assert by_name["naive"]["setting"] == "target"
    # runs of another budget are not reported; the untrained baselines are
    other = events.rows_for_report(_records(events, scores), {**TRAINING, "epochs": 9})
    assert {r["name"] for r in other} == {"naive"}


def test_each_dataset_trains_and_reports_on_its_own_number_of_windows(events):
    windows_of = {"EPF_FR_BE": 32, "vic_elec": 128}
    own = events.make_plan(events.DATASETS, events.HORIZONS, ["target"], ["uniform"], TRAINING,
                           [0], windows_of=windows_of)
    assert {(s.dataset, s.settings["max_train_windows"]) for s in own} == {
        ("EPF_FR_BE", 32), ("vic_elec", 128)}
    shared = events.make_plan(["vic_elec"], {"vic_elec": (48,)}, ["target"], ["uniform"],
                              TRAINING, [0])  # TRAINING's 32 windows
    records = [{"key": spec.key, "spec": dataclasses.asdict(spec), "label": spec.label,
                "setting": "target", "val_mse": 0.1,
                "test_mse": spec.settings["max_train_windows"] / 1000, "test_mae": 0.1,
                "test_mae_original": 1.0, "epochs": 1, "train_seconds": 1.0,
                "commit": "abc1234", "date": "2026-01-01 00:00 UTC", "settings": spec.settings}
               for spec in own + shared if spec.params["R"] == 8]

    def uniform_mse(windows) -> dict:
        rows = events.rows_for_report(records, TRAINING, windows)
        return {(r["dataset"], r["horizon"]): r["test_mse"] for r in rows
                if r["name"] == "uniform R=8"}

    assert uniform_mse(windows_of) == {("EPF_FR_BE", 24): 0.032, ("vic_elec", 48): 0.128,
                                       ("vic_elec", 336): 0.128}
    assert uniform_mse(None) == {("EPF_FR_BE", 24): 0.032, ("vic_elec", 48): 0.032}
    assert events.TRAIN_WINDOWS == {"EPF_FR_BE": 2048, "vic_elec": 8192}


# -- verdicts ----------------------------------------------------------------------------------


def _cells(events, **values):
    return {cell: events.Score(*value) for cell, value in values.items()}


EPF, VIC48, VIC336 = ("EPF_FR_BE", 24), ("vic_elec", 48), ("vic_elec", 336)
HORIZONS = {"EPF_FR_BE": (24,), "vic_elec": (48, 336)}


def test_verdict_boundaries(events):
    Score = events.Score
    uniform = {EPF: Score(0.50, 0.01, 3), VIC48: Score(0.20, 0.005, 3),
               VIC336: Score(0.40, 0.01, 3)}
    learned = {EPF: Score(0.48, 0.01, 3), VIC48: Score(0.19, 0.002, 3),
               VIC336: Score(0.38, 0.005, 3)}
    text = events.verdict_boundaries(learned, uniform, HORIZONS)
    assert "EPF_FR_BE **met**" in text and "vic_elec **met**" in text
    # 3 % below but within one std: not met; above: not met
    learned[EPF] = Score(0.48, 0.03, 3)
    learned[VIC336] = Score(0.41, 0.005, 3)
    text = events.verdict_boundaries(learned, uniform, HORIZONS)
    assert "EPF_FR_BE **NOT met**" in text and "vic_elec **NOT met**" in text
    # a missing cell, or fewer than three seeds: not met yet
    learned = {EPF: Score(0.40, 0.001, 2), VIC48: Score(0.19, 0.002, 3)}
    text = events.verdict_boundaries(learned, uniform, HORIZONS)
    assert "EPF_FR_BE **not met yet**" in text and "vic_elec **not met yet**" in text
    assert "H=336: missing" in text


def test_verdict_covariates(events):
    Score = events.Score
    learned = {c: Score(0.30, 0.01, 3) for c in (EPF, VIC48, VIC336)}
    peers = {name: {c: Score(0.31, 0.01, 3) for c in (EPF, VIC48, VIC336)}
             for name in events.DARTS_PEERS}
    text = events.verdict_covariates(learned, peers, HORIZONS)
    assert "**met**" in text
    peers["tide"][VIC336] = Score(0.29, 0.01, 3)
    text = events.verdict_covariates(learned, peers, HORIZONS,
                                     {VIC336: Score(0.28, 0.01, 3)})
    assert "**NOT met**" in text and "best peer tide 0.2900, uniform tuned 0.2800" in text
    peers["tide"][VIC336] = Score(0.31, 0.01, 3)
    del peers["nlinear"][EPF]
    text = events.verdict_covariates(learned, peers, HORIZONS)
    assert "**not met yet**" in text and "no run yet: nlinear" in text
    assert "**not met yet**" in events.verdict_covariates({}, peers, HORIZONS)


def test_verdict_tuned_on_two_datasets(events):
    import ltsf

    text = ltsf.verdict_tuned({EPF: 0.3, VIC48: 0.2}, {EPF: 0.31, VIC48: 0.25}, needed=2,
                              n_datasets=2)
    assert "**met**" in text
    assert "**not met yet**" in ltsf.verdict_tuned({EPF: 0.3}, {EPF: 0.31}, needed=2,
                                                   n_datasets=2)
    assert "**NOT met**" in ltsf.verdict_tuned({EPF: 0.3}, {EPF: 0.2}, needed=2, n_datasets=2)


# -- command line and one fit ------------------------------------------------------------------


@pytest.mark.parametrize("argv, message", [
    (["--datasets", "ETTh1"], "invalid choice"),
    (["--settings", "calendar"], "invalid choice"),
    (["--horizons", "0"], "horizons must be >= 1"),
    (["--lookback", "24", "--datasets", "vic_elec"], "shorter than the season"),
])
def test_user_errors_stop_early(events, argv, message, capsys, tmp_path):
    with pytest.raises(SystemExit):
        events.main([*argv, "--report-only", "--out-dir", str(tmp_path)])
    assert message in capsys.readouterr().err


@needs_data
def test_one_tiny_fit_with_covariates(events, loaded, tmp_path):
    data = loaded["vic_elec"]
    lookback, horizon = events.LOOKBACKS["vic_elec"], events.HORIZONS["vic_elec"][0]
    short = {name: series[-(lookback + horizon + 15):] if name != "train" else series
             for name, series in data.target.items()}  # 16 windows of val and test
    data = dataclasses.replace(data, target=short)
    spec = next(s for s in events.make_plan(["vic_elec"], {"vic_elec": (horizon,)},
                                            ["covariates"], ["uniform"], TRAINING, [0])
                if s.params["R"] == 24)
    record = events.run_one(spec, data, tmp_path)
    assert record["test_windows"] == 16 and record["setting"] == "covariates"
    assert record["test_mae_original"] == pytest.approx(
        record["test_mae"] * data.splits.std[0])
    assert record["unit"] == "MWh"


def test_report_opens_with_the_tables_and_the_targets(events, tmp_path):
    records = _records(events, lambda spec: (0.5, 0.4 if spec.model == "learned" else 0.5))
    events.write_report(records, tmp_path, TRAINING, "python benchmarks/events.py")
    text = (tmp_path / "events.md").read_text()
    assert text.index("## At a glance") < text.index("### EPF_FR_BE, H = 24") \
        < text.index("## Targets") < text.index("## Every row")
    assert "| model | target only: test MSE | MAE | MAE (EUR/MWh) |" in text
    assert "| ReinPatch learned (R=8) | **0.4000 ± 0.0000** | 0.2000 | 4.00 |" in text
    for target in ("- c. where boundaries matter (target only)", "- d. with covariates",
                   "- a. tuned against tuned (target only)"):
        assert target in text
    assert "vic_elec **not met yet** (H=48: missing; H=336: missing)" in text
    header = (tmp_path / "events.csv").read_text().splitlines()[0].split(",")
    assert {"commit", "date", "test_mae_original", "setting"} <= set(header)


def test_report_counts_the_wins_of_the_learned_rows_and_draws_the_cells(events, tmp_path):
    def scores(spec):
        test = {"learned": 0.4, "dlinear": 0.3}.get(spec.model, 0.5)
        return 0.5, test

    records = _records(events, scores)
    events.write_report(records, tmp_path, TRAINING, "python benchmarks/events.py")
    text = (tmp_path / "events.md").read_text()
    wins = text[text.index("Wins in the target only setting"):text.index("## Targets")]
    header, _, learned = wins.splitlines()[2:5]
    columns = [c.strip() for c in header.strip("|").split("|")]
    values = dict(zip(columns, (c.strip() for c in learned.strip("|").split("|"))))
    assert values["model"] == "ReinPatch learned (R=8)"
    assert values["vs ReinPatch uniform (R=8)"] == "1/1 (EPF_FR_BE 1/1)"  # 0.4 < 0.5
    assert values["vs DLinear"] == "0/1 (EPF_FR_BE 0/1)"  # 0.4 > 0.3
    assert values["vs TiDE"] == "1/1 (EPF_FR_BE 1/1)"  # 0.4 < 0.5
    assert "vs NLinear" not in values  # no NLinear run: no column
    assert "Wins in the + covariates setting" not in text  # no run with covariates
    assert "![Event-rich test MSE](events.png)" in text
    assert (tmp_path / "events.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_report_sets_the_full_protocol_beside_the_reduced_budget(events, tmp_path):
    reduced = _records(events, lambda spec: (0.5, 0.4 if spec.model == "learned" else 0.5))
    full_training = {**TRAINING, "epochs": 10, "patience": 3, "max_train_windows": None}
    full = []
    for record in reduced:
        if record["spec"]["model"] in ("naive", "repeat") or record["spec"]["params"].get(
                "R", 8) != 8:
            continue
        settings = {**full_training, "seed": record["settings"]["seed"]}
        spec = {**record["spec"], "settings": settings}
        full.append({**record, "key": record["key"] + "-full", "spec": spec,
                     "settings": settings, "test_mse": 0.3, "test_mae_original": 3.0,
                     "epochs": 7})
    events.write_report(reduced + full, tmp_path, TRAINING, "python benchmarks/events.py")
    text = (tmp_path / "events.md").read_text()
    section = text[text.index("## Full protocol against the reduced budget"):
                   text.index("## Every row")]
    assert "| EPF_FR_BE | 24 | target only | ReinPatch learned (R=8) | 0.4000 ± 0.0000 | " \
           "0.3000 ± 0.0000 | -25.0 % | 3.00 EUR/MWh | 7 | 1 |" in section
    assert "ReinPatch uniform (R=8) | 0.5000 ± 0.0000 | 0.3000 ± 0.0000 | -40.0 %" in section
    assert "naive" not in section.lower()  # the baselines train nothing
    # the reduced tables above keep the reduced runs only
    assert "| ReinPatch learned (R=8) | **0.4000 ± 0.0000** | 0.2000 | 4.00 |" in text
    protocols = [line.split(",")[0] for line in
                 (tmp_path / "events.csv").read_text().splitlines()[1:]]
    assert {"reduced", "full"} == set(protocols)
    # without trained full-protocol runs there is no such section
    events.write_report(reduced, tmp_path, TRAINING, "python benchmarks/events.py")
    assert "## Full protocol" not in (tmp_path / "events.md").read_text()
