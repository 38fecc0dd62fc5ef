"""The LTSF benchmark's bookkeeping: cache keys, resumption, seeds, the tuned-uniform choice,
the relabelling of first-version runs and the at-a-glance summary."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

HARNESS = Path(__file__).resolve().parents[2] / "benchmarks" / "ltsf.py"
SETTINGS = {"epochs": 10, "seed": 0}


@pytest.fixture(scope="module")
def ltsf():
    spec = importlib.util.spec_from_file_location("ltsf_harness", HARNESS)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve their module while being created
    spec.loader.exec_module(module)
    return module


def _record(ltsf, model, params, val, test, horizon=96, seed=0, commit="abc", dataset="ETTh1",
            backbone=None):
    """A cached run; a ReinPatch row on ``backbone`` (default: the benchmark's default)."""
    if model in ltsf.REINPATCH_FAMILIES:
        params = {**params, **ltsf.BACKBONES[backbone or ltsf.DEFAULT_BACKBONE]}
    spec = ltsf.RunSpec(dataset, horizon, model, params, 96, {**SETTINGS, "seed": seed})
    return {"key": spec.key, "spec": ltsf.asdict(spec), "label": spec.label, "val_mse": val,
            "val_mae": val, "test_mse": test, "test_mae": test, "epochs": 3,
            "train_seconds": 1.0, "commit": commit, "date": "2026-12-02"}


def _runs(*records):
    return {r["key"]: r for r in records}


def _learned(policy="density"):
    return {"R": 8, "G": 4, "policy": policy}


def test_keys_differ_by_config_and_settings(ltsf):
    a = ltsf.RunSpec("ETTh1", 96, "uniform", {"R": 4}, 96, {"epochs": 10})
    b = ltsf.RunSpec("ETTh1", 96, "uniform", {"R": 8}, 96, {"epochs": 10})
    c = ltsf.RunSpec("ETTh1", 96, "uniform", {"R": 4}, 96, {"epochs": 5})
    assert len({a.key, b.key, c.key}) == 3
    assert a.key == ltsf.RunSpec("ETTh1", 96, "uniform", {"R": 4}, 96, {"epochs": 10}).key


def test_plan_expands_uniform_sizes_and_policies(ltsf):
    specs = ltsf.plan(["ETTh1"], [96, 192], ["uniform", "learned", "repeat"], 96, {},
                      policies=["offset", "density", "topk"])
    # per horizon: the uniform sizes, three policies, Repeat on every window and truncated
    assert len(specs) == 2 * (len(ltsf.UNIFORM_SIZES) + 3 + 2)
    assert {s.params.get("drop_last") for s in specs if s.model == "repeat"} == {
        None, ltsf.REPEAT_DROP_LAST}
    assert {s.params.get("R") for s in specs if s.model == "uniform"} == set(ltsf.UNIFORM_SIZES)
    learned = [s.params for s in specs if s.model == "learned" and s.horizon == 96]
    backbone = ltsf.BACKBONES[ltsf.DEFAULT_BACKBONE]
    assert learned == [{"R": 8, "G": 4, "policy": p, **backbone}
                       for p in ("offset", "density", "topk")]


def test_seeds_give_new_keys_and_seed_zero_keeps_the_old_one(ltsf):
    settings = {**SETTINGS, "max_train_windows": 2048}
    specs = ltsf.plan(["ETTh1"], [96], ["uniform"], 96, settings, seeds=[0, 1, 2])
    assert len(specs) == 3 * len(ltsf.UNIFORM_SIZES)
    assert len({s.key for s in specs}) == len(specs)
    # cached before --seeds
    old = ltsf.RunSpec("ETTh1", 96, "uniform", {"R": 4, **ltsf.BACKBONES[ltsf.DEFAULT_BACKBONE]},
                       96, settings)
    assert old.key in {s.key for s in specs}


def test_tuned_uniform_is_chosen_on_validation_not_test(ltsf):
    runs = {}
    # R=16 has the best validation MSE but not the best test MSE: it must still be chosen.
    for r, val, test in [(4, 0.9, 0.40), (8, 0.8, 0.45), (16, 0.7, 0.50), (24, 0.95, 0.41)]:
        record = _record(ltsf, "uniform", {"R": r}, val, test)
        runs[record["key"]] = record
    rows = ltsf.rows_for_report(runs)
    tuned = [row for row in rows if row["model"].startswith("uniform tuned")]
    assert len(tuned) == 1
    assert tuned[0]["model"] == "uniform tuned (R=16)"
    assert tuned[0]["test_mse"] == 0.50


def test_cache_round_trip_and_report(ltsf, tmp_path):
    cache = tmp_path / "ltsf_runs.jsonl"
    record = _record(ltsf, "repeat", {}, 1.5, 1.29)
    ltsf.append_cache(record, cache)
    runs = ltsf.load_cache(cache)
    assert runs == {record["key"]: record}
    ltsf.write_report(runs, tmp_path)
    text = (tmp_path / "ltsf.md").read_text()
    assert "| repeat | 96 | 1.2900 |" in text
    assert "EntroPE (published, other code)" in text
    assert (tmp_path / "ltsf.csv").read_text().count("\n") == 2


def test_peer_learning_rate_is_chosen_on_validation(ltsf):
    runs = {}
    for lr, val, test in [(1e-3, 0.9, 0.40), (1e-4, 0.8, 0.45)]:
        record = _record(ltsf, "nlinear", {"lr": lr}, val, test)
        runs[record["key"]] = record
    rows = ltsf.rows_for_report(runs)
    assert [(r["model"], r["test_mse"]) for r in rows] == [("nlinear (lr=0.0001)", 0.45)]


def test_report_keeps_only_runs_of_the_given_settings(ltsf):
    kept = _record(ltsf, "uniform", {"R": 8}, 0.7, 0.4)
    spec = ltsf.RunSpec("ETTh1", 96, "uniform", {"R": 8}, 96, {"epochs": 3, "seed": 0})
    other = {**kept, "key": spec.key, "spec": ltsf.asdict(spec)}
    rows = ltsf.rows_for_report({kept["key"]: kept, other["key"]: other}, SETTINGS)
    assert [r["model"] for r in rows] == ["uniform R=8"]


def test_seeds_of_one_configuration_make_one_row_with_mean_and_std(ltsf, tmp_path):
    runs = _runs(*[_record(ltsf, "learned", _learned(), 0.7, test, seed=seed)
                   for seed, test in [(0, 0.40), (1, 0.42), (2, 0.44)]])
    # Any seed of the reported protocol counts.
    rows = ltsf.rows_for_report(runs, {**SETTINGS, "seed": 5})
    assert len(rows) == 1
    row = rows[0]
    assert row["model"] == "learned"
    assert (row["n_seeds"], row["seeds"]) == (3, "0 1 2")
    assert row["test_mse"] == pytest.approx(0.42)
    assert row["test_mse_std"] == pytest.approx(0.02)
    ltsf.write_report(runs, tmp_path, SETTINGS)
    assert "| learned | **0.4200 ± 0.0200** |" in (tmp_path / "ltsf.md").read_text()


def test_tuned_uniform_with_seeds_chooses_on_the_mean_validation(ltsf):
    records = []
    # R=4 has the best single validation MSE (seed 0) but R=8 the best mean.
    for r, vals in [(4, (0.5, 0.95)), (8, (0.6, 0.6)), (16, (0.9, 0.9)), (24, (0.9, 0.9))]:
        for seed, val in enumerate(vals):
            records.append(_record(ltsf, "uniform", {"R": r}, val, 0.4 + r / 100, seed=seed))
    tuned = [r for r in ltsf.rows_for_report(_runs(*records)) if "tuned" in r["model"]]
    assert [(r["model"], r["n_seeds"]) for r in tuned] == [("uniform tuned (R=8)", 2)]


def test_tuned_rows_compare_sizes_on_the_seeds_every_size_has(ltsf):
    # R=8 has three seeds and the others seed 0 only. On seed 0, R=8 validates best; its
    # three-seed mean (0.7667) is worse than R=4's one seed (0.6), which would pick R=4.
    records = [_record(ltsf, "uniform", {"R": 8}, val, 0.40, seed=seed)
               for seed, val in enumerate((0.5, 0.9, 0.9))]
    records += [_record(ltsf, "uniform", {"R": r}, val, 0.50) for r, val in
                [(4, 0.6), (16, 0.7), (24, 0.7)]]
    tuned = [r for r in ltsf.rows_for_report(_runs(*records)) if "tuned" in r["model"]]
    # the picked size is reported over all of its seeds
    assert [(r["model"], r["n_seeds"]) for r in tuned] == [("uniform tuned (R=8)", 3)]
    assert tuned[0]["test_mse"] == pytest.approx(0.40)


def test_pick_on_validation_uses_common_seeds_or_else_each_candidates_own(ltsf):
    def runs(vals_by_seed):
        return [_record(ltsf, "nlinear", {"lr": 1e-3}, val, 0.4, seed=seed)
                for seed, val in vals_by_seed.items()]

    assert ltsf.pick_on_validation([runs({0: 0.5, 1: 0.9}), runs({0: 0.6})]) == 0
    assert ltsf.pick_on_validation([runs({0: 0.7, 1: 0.1}), runs({0: 0.6})]) == 1
    # no seed in common: each candidate's own mean
    assert ltsf.pick_on_validation([runs({1: 0.7, 2: 0.3}), runs({0: 0.6})]) == 0
    with pytest.raises(ValueError, match="no candidate"):
        ltsf.pick_on_validation([])


def test_peer_learning_rate_with_seeds_is_picked_on_the_common_seeds(ltsf):
    records = [_record(ltsf, "dlinear", {"lr": 1e-3}, val, 0.40, seed=seed)
               for seed, val in enumerate((0.8, 0.5, 0.5))]
    records.append(_record(ltsf, "dlinear", {"lr": 1e-4}, 0.7, 0.45))
    rows = ltsf.rows_for_report(_runs(*records))
    assert [(r["model"], r["n_seeds"]) for r in rows] == [("dlinear (lr=0.0001)", 1)]


def test_summary_averages_complete_rows_and_bolds_the_best(ltsf):
    runs = {}
    for model, params, horizon, test in [("learned", _learned(), 96, 0.40),
                                         ("learned", _learned(), 192, 0.50),
                                         ("random", {"R": 8}, 96, 0.45)]:
        record = _record(ltsf, model, params, 0.7, test, horizon=horizon)
        runs[record["key"]] = record
    lines = ltsf._summary(ltsf.rows_for_report(runs), "ETTh1", [96, 192])
    learned = next(line for line in lines if line.startswith("| learned |"))
    random = next(line for line in lines if line.startswith("| random |"))
    assert learned == "| learned | **0.4000** | **0.5000** | 0.4500 |"
    assert random == "| random | 0.4500 | – | – |"  # no average over a missing horizon


def test_foundation_rows_of_an_earlier_shipped_patcher_are_not_reported(ltsf):
    current = _record(ltsf, "foundation", {"R": 8, "patcher": ltsf.PRETRAINED_SHA256[:10]},
                      0.7, 0.5)
    earlier = _record(ltsf, "foundation", {"R": 8, "patcher": "0123456789"}, 0.6, 0.4)
    rows = ltsf.rows_for_report({current["key"]: current, earlier["key"]: earlier})
    assert [(r["model"], r["test_mse"]) for r in rows] == [("foundation (zero-shot)", 0.5)]


def test_policies_have_their_own_names(ltsf):
    names = [ltsf.display_name(_record(ltsf, "learned", _learned(p), 0.7, 0.4))
             for p in ("density", "offset", "topk")]
    assert names == ["learned", "learned [offset]", "learned [topk] (v1 ablation)"]
    l2 = _record(ltsf, "learned_l2", {"R": [8, 2], "G": 8, "policy": "offset"}, 0.7, 0.4)
    assert ltsf.display_name(l2) == "learned L2 (R=8,2) [offset] [G=8]"


def _known_commit(commit: str) -> bool:
    root = HARNESS.parents[1]
    found = subprocess.run(["git", "cat-file", "-e", f"{commit}^{{commit}}"], cwd=root,
                           capture_output=True)
    return found.returncode == 0


def test_first_version_runs_are_relabelled_by_commit(ltsf):
    if not (_known_commit("94ea7d6") and _known_commit(ltsf.POLICY_V2_COMMIT)):
        pytest.skip("needs the repository's history")
    old = {"R": 8, "G": 8, "draws": 1}
    v1 = _record(ltsf, "learned", old, 0.7, 0.45, commit="94ea7d6")
    v1_variant = _record(ltsf, "learned", {**old, "entropy": 0.01}, 0.7, 0.44, commit="94ea7d6")
    v1_l2 = _record(ltsf, "learned_l2", {**old, "R": [8, 2]}, 0.7, 0.44, commit="94ea7d6")
    v1_found = _record(ltsf, "foundation", {"R": 8, "patcher": ltsf.PRETRAINED_SHA256[:10]},
                       0.7, 0.46, commit="8be0bfd")
    v2 = _record(ltsf, "learned", _learned(), 0.7, 0.40, commit=ltsf.POLICY_V2_COMMIT)
    uniform = _record(ltsf, "uniform", {"R": 8}, 0.7, 0.41, commit="94ea7d6")
    names = {r["model"] for r in ltsf.rows_for_report(
        _runs(v1, v1_variant, v1_l2, v1_found, v2, uniform))}
    assert names == {"learned v1 (topk)", "learned v1 (topk) [entropy_coef 0.01]",
                     "learned v1 (topk) L2 (R=8,2)", "foundation v1 (topk, zero-shot)",
                     "learned", "uniform R=8"}


def test_without_history_first_version_runs_are_told_by_their_options(ltsf):
    unknown = "0000000"
    old = _record(ltsf, "learned", {"R": 8, "G": 8, "draws": 1}, 0.7, 0.45, commit=unknown)
    new = _record(ltsf, "learned", _learned("density"), 0.7, 0.45, commit=unknown)
    assert (ltsf.is_v1(old), ltsf.is_v1(new)) == (True, False)
    assert ltsf.display_name(old) == "learned v1 (topk)"


def test_at_a_glance_counts_wins_and_checks_the_targets(ltsf, tmp_path):
    records = []
    # ETTh1: learned wins H=96, loses H=192 by 0.5 %; ETTh2: learned loses H=96 by 2 %.
    for dataset, horizon, learned, uniform8 in [("ETTh1", 96, 0.39, 0.40),
                                                ("ETTh1", 192, 0.4020, 0.40),
                                                ("ETTh2", 96, 0.306, 0.30)]:
        records.append(_record(ltsf, "learned", _learned(), 0.7, learned, horizon=horizon,
                               dataset=dataset))
        for r in ltsf.UNIFORM_SIZES:  # R=8 is the tuned choice (lowest validation MSE)
            records.append(_record(ltsf, "uniform", {"R": r}, 0.7 if r == 8 else 0.9,
                                   uniform8 if r == 8 else uniform8 - 0.1, horizon=horizon,
                                   dataset=dataset))
    ltsf.write_report(_runs(*records), tmp_path, SETTINGS)
    text = (tmp_path / "ltsf.md").read_text()
    glance = text[text.index("## At a glance"):text.index("## ETTh1")]
    assert "| learned | 0.3960 | 0.3060 |" in glance
    assert "| uniform R=8 | 0.4000 | 0.3000 |" in glance
    assert "| model | vs uniform R=8 | vs uniform tuned |" in glance
    assert "| learned | 1/3 (ETTh1 1/2, ETTh2 0/1) | 1/3 (ETTh1 1/2, ETTh2 0/1) |" in glance
    assert "average <= uniform R=8 on each dataset: NOT met" in glance
    assert "ETTh1 0.3960 vs 0.4000 (met)" in glance
    assert "ETTh2 0.3060 vs 0.3000 at H=96 only (NOT met)" in glance
    assert "No cell worse by > 1 %: NOT met (worst: ETTh2 H=96, +2.0 %; 3 cells)" in glance
    # the report opens with the table, the win counts, the plot, then the targets
    order = [glance.index(marker) for marker in
             ("| model | ETTh1 | ETTh2 |", "| model | vs uniform R=8", "](ltsf.png)",
              "**Targets**")]
    assert order == sorted(order)


def _table(ltsf, cells, settings=SETTINGS):
    """Records of a learned, uniform R=8/tuned and DLinear row per (dataset, horizon).

    ``cells`` maps (dataset, horizon) to (learned, uniform R=8, other uniform sizes, dlinear at
    lr 1e-3, dlinear at lr 1e-4); uniform R=8 and DLinear at 1e-3 win on validation."""
    records = []
    for (dataset, horizon), (learned, uniform8, other, fast, slow) in cells.items():
        extra = dict(horizon=horizon, dataset=dataset)
        records.append(_record(ltsf, "learned", _learned(), 0.7, learned, **extra))
        for r in ltsf.UNIFORM_SIZES:
            records.append(_record(ltsf, "uniform", {"R": r}, 0.7 if r == 8 else 0.9,
                                   uniform8 if r == 8 else other, **extra))
        records.append(_record(ltsf, "dlinear", {"lr": 1e-3}, 0.6, fast, **extra))
        records.append(_record(ltsf, "dlinear", {"lr": 1e-4}, 0.8, slow, **extra))
    return records


def test_table_shows_peers_by_family_and_the_published_averages(ltsf, tmp_path):
    cells = {("ETTm2", h): (0.206, 0.2, 0.3, 0.5, 0.1) for h in (96, 192, 336, 720)}
    cells[("ETTh2", 96)] = (0.29, 0.30, 0.31, 0.5, 0.1)
    cells[("weather", 96)] = (0.20, 0.19, 0.19, 0.5, 0.1)
    ltsf.write_report(_runs(*_table(ltsf, cells)), tmp_path, SETTINGS)
    text = (tmp_path / "ltsf.md").read_text()
    glance = text[text.index("## At a glance"):text.index("## ETTh2")]
    # DLinear picked lr=1e-3 on validation everywhere: one row named by its family
    assert "| dlinear | 0.5000 | 0.5000 | 0.5000 |" in glance
    assert "| *PatchTST@96 (published, other code; iTransformer Table 10)* | *0.3020* | " \
           "*0.2807* | *0.1770* |" in glance
    assert "vs dlinear" in glance and "| learned | 1/6 (ETTh2 1/1, ETTm2 0/4, weather 0/1) |" \
           in glance
    assert "| uniform tuned | 0.3000 [R=8] | 0.2000 [R=8] | 0.1900 [R=8] |" in glance
    assert ("b. equal R: learned at or below uniform R=8 on every dataset average, no cell "
            "more than 1 % worse: **NOT met** — 3 of 5 datasets judged (ETTh2 0.2900 vs "
            "0.3000 at H=96; ETTm2 0.2060 vs 0.2000; weather 0.2000 vs 0.1900 at H=96); above "
            "on ETTm2, weather; worst cell weather H=96 +5.3 %.") in glance


def test_verdict_tuned_is_met_not_yet_or_missed_for_good(ltsf):
    learned = {(d, 96): 0.30 for d in ("ETTh1", "ETTh2", "ETTm1")}
    uniform = {("ETTh1", 96): 0.31, ("ETTh2", 96): 0.29, ("ETTm1", 96): 0.30}
    assert "**not met yet** — 2 of 3 judged (ETTh1 0.3000 vs 0.3100 at H=96;" in \
        ltsf.verdict_tuned(learned, uniform)
    uniform[("ETTm2", 96)] = learned[("ETTm2", 96)] = 0.2
    assert "**met** — 3 of 4 judged" in ltsf.verdict_tuned(learned, uniform)
    worse = {cell: value + 0.1 for cell, value in uniform.items()}
    assert "**NOT met** — 0 of 4 judged" in ltsf.verdict_tuned(worse, uniform)
    # five datasets judged, two below: three needed, none left to judge
    uniform[("weather", 96)], learned[("weather", 96)] = 0.1, 0.2
    learned[("ETTm2", 96)] = 0.3
    assert "**NOT met** — 2 of 5 judged" in ltsf.verdict_tuned(learned, uniform)


def test_verdict_equal_r_judges_averages_and_every_cell(ltsf):
    datasets = ("ETTh1", "ETTh2", "ETTm1", "ETTm2", "weather")
    uniform8 = {(d, h): 0.4 for d in datasets for h in (96, 192)}
    equal = dict(uniform8)
    assert "**met** — 5 of 5 datasets judged" in ltsf.verdict_equal_r(equal, uniform8)
    assert "**met so far** — 1 of 5" in ltsf.verdict_equal_r(
        {c: v for c, v in equal.items() if c[0] == "ETTh1"}, uniform8)
    # the averages are below everywhere, but one cell is 2 % worse
    one_cell = {c: (0.408 if c == ("ETTm1", 192) else 0.39) for c in uniform8}
    verdict = ltsf.verdict_equal_r(one_cell, uniform8)
    assert "**NOT met**" in verdict and "above on none; worst cell ETTm1 H=192 +2.0 %" in verdict
    # within 1 % in every cell, but above on one dataset's average
    above = {c: (0.403 if c[0] == "ETTh2" else 0.4) for c in uniform8}
    assert "**NOT met**" in ltsf.verdict_equal_r(above, uniform8)
    assert "no cell with both" in ltsf.verdict_equal_r({}, uniform8)


def test_verdict_full_protocol_against_the_published_rows(ltsf):
    # published: PatchTST@96 ETTh1 0.414/0.460/0.501/0.500, ETTm1 0.329 at H=96;
    # EntroPE ETTh1 0.3788/0.4222/0.4594/0.4406, ETTm1 0.3153 at H=96
    assert "**not met yet** — 0 of 5" in ltsf.verdict_full_protocol({})
    two = {("ETTh1", 96): 0.3700, ("ETTh1", 336): 0.4594}  # at EntroPE counts
    assert "**met** — 2 of 5 cells run, below PatchTST@96 in 2, at or below EntroPE in 2" in \
        ltsf.verdict_full_protocol(two)
    # one cell at PatchTST@96's number is not below it
    assert "**NOT met**" in ltsf.verdict_full_protocol({**two, ("ETTh1", 720): 0.500})
    # every cell run below PatchTST@96, EntroPE matched once: missed for good
    once = {("ETTh1", 96): 0.37, ("ETTh1", 192): 0.45, ("ETTh1", 336): 0.49,
            ("ETTh1", 720): 0.49, ("ETTm1", 96): 0.32}
    assert "**NOT met** — 5 of 5 cells run, below PatchTST@96 in 5, at or below EntroPE in 1" \
        in ltsf.verdict_full_protocol(once)
    assert "**met**" in ltsf.verdict_full_protocol(once, entrope_needed=1)
    assert ltsf.published_mse(ltsf.ENTROPE, "ETTm1", 96) == 0.3153
    assert ltsf.published_mse(ltsf.PATCHTST, "EPF_FR_BE", 24) is None


def test_learned_tuned_picks_its_patch_size_on_validation_per_backbone(ltsf):
    records = []
    # learned R=16 has the best validation MSE, R=4 the best test MSE
    for r, val, test in [(4, 0.9, 0.30), (8, 0.8, 0.45), (16, 0.7, 0.50), (24, 0.95, 0.41)]:
        records.append(_record(ltsf, "learned", {**_learned(), "R": r}, val, test))
        records.append(_record(ltsf, "uniform", {"R": r}, 1.0 - r / 100, 0.4))
    # the flatten head's learned rows at one size only: no tuned row of their own
    records.append(_record(ltsf, "learned", _learned(), 0.1, 0.2, backbone="flatten"))
    rows = ltsf.rows_for_report(_runs(*records))
    names = {r["model"]: r for r in rows}
    assert names["learned tuned (R=16)"]["test_mse"] == 0.50
    assert names["uniform tuned (R=24)"]["test_mse"] == 0.4
    assert {"learned", "learned R=4", "learned R=16", "learned R=24",
            "learned [flatten head]"} <= set(names)
    assert not any(n.startswith("learned tuned") and "flatten" in n for n in names)
    assert ltsf.glance_name(names["learned tuned (R=16)"]) == "learned tuned"
    lines = ltsf._summary(rows, "ETTh1", [96])
    assert any(line.startswith("| learned tuned | 0.5000 [R=16] |") for line in lines)
    assert not any(line.startswith("| learned R=4 ") for line in lines)


def test_flatten_runs_have_their_own_names_and_tuned_row(ltsf):
    records = [_record(ltsf, "uniform", {"R": r}, 1.0 - r / 100, 0.4, backbone="flatten")
               for r in ltsf.UNIFORM_SIZES]
    records.append(_record(ltsf, "uniform", {"R": 8}, 0.5, 0.3))
    names = {r["model"] for r in ltsf.rows_for_report(_runs(*records))}
    assert names == {f"uniform R={r} [flatten head]" for r in ltsf.UNIFORM_SIZES} | {
        "uniform tuned (R=24) [flatten head]", "uniform R=8"}
    assert ltsf.glance_name({"model": "uniform tuned (R=24) [flatten head]",
                             "family": "uniform"}) == "uniform tuned [flatten head]"


def test_full_protocol_rows_stand_beside_their_reduced_budget_rows(ltsf, tmp_path):
    reduced = _table(ltsf, {("ETTh1", 96): (0.40, 0.41, 0.42, 0.45, 0.46)})
    full_settings = {**SETTINGS, **ltsf.FULL_PROTOCOL}
    full = []
    for record in _table(ltsf, {("ETTh1", 96): (0.38, 0.41, 0.40, 0.44, 0.46)}):
        spec = ltsf.RunSpec(**{**record["spec"], "settings": full_settings})
        full.append({**record, "key": spec.key, "spec": ltsf.asdict(spec), "epochs": 7})
    ltsf.write_report(_runs(*reduced, *full), tmp_path, SETTINGS)
    text = (tmp_path / "ltsf.md").read_text()
    section = text[text.index("## Full protocol"):text.index("## ETTh1")]
    assert ("| ETTh1 | 96 | learned | 0.4000 | 0.3800 | -5.0 % | 7 | 1 | *0.414* | *0.3788* |"
            in section)
    # target f: one of five cells run, below PatchTST@96 but above EntroPE
    assert "**not met yet** — 1 of 5 cells run, below PatchTST@96 in 1, at or below EntroPE " \
        "in 0 (ETTh1 H=96 0.3800 vs PatchTST@96 0.414, EntroPE 0.3788)" in section
    assert "| ETTh1 | 96 | uniform tuned | 0.4100 [R=8] | 0.4100 [R=8] | +0.0 % |" in section
    assert "| ETTh1 | 96 | dlinear | 0.4500 [lr=0.001] | 0.4400 [lr=0.001] | -2.2 % |" in section
    # the full-protocol runs stay out of the reduced-budget tables, and the CSV tells them apart
    glance = text[text.index("## At a glance"):text.index("## Full protocol")]
    assert "| learned | **0.4000** |" in glance
    csv = (tmp_path / "ltsf.csv").read_text().splitlines()
    # learned, 4 uniform sizes, tuned, dlinear
    assert sum(line.startswith("full,") for line in csv) == 7
