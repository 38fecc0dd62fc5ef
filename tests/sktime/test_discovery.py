"""sktime's lookup finds the forecaster; the placeholder record on the sktime page fits the class.

sktime 1.2's ``all_estimators`` crawls the ``sktime`` package only; scikit-base's ``all_objects``
(the crawl it is built on) takes a package name. ``docs/quickstart_sktime.md`` shows both the
crawl of this package and the placeholder record sktime would keep of the forecaster.
"""

from __future__ import annotations

import importlib
import textwrap
import tomllib
from pathlib import Path

from skbase.lookup import all_objects
from sktime.forecasting.base import BaseForecaster
from support import run_script
from test_docs import python_blocks

from reinpatch_forecast import ReinPatchForecaster

ROOT = Path(__file__).resolve().parents[2]
SKTIME_PAGE = ROOT / "docs" / "quickstart_sktime.md"
#: Top-level modules of the optional extras (dev, docs, onnx): the crawl must not need them.
OPTIONAL_MODULES = ("pytest", "hypothesis", "coverage", "flake8", "sphinx", "numpydoc",
                    "myst_parser", "optuna", "onnx", "onnxscript", "onnxruntime")
#: Tags a placeholder record sets for itself rather than copying them from the class.
PACKAGING_TAGS = ("python_dependencies", "python_version")


def test_all_objects_finds_the_forecaster():
    forecasters = all_objects(package_name="reinpatch_forecast",
                              filter_tags={"object_type": "forecaster"})
    assert forecasters == [("ReinPatchForecaster", ReinPatchForecaster)]
    assert all_objects(object_types=BaseForecaster, package_name="reinpatch_forecast",
                       return_names=False) == [ReinPatchForecaster]
    pretrainable = all_objects(package_name="reinpatch_forecast",
                               filter_tags={"capability:pretrain": True,
                                            "capability:exogenous": True},
                               return_names=False)
    assert pretrainable == [ReinPatchForecaster]


def test_the_crawl_needs_no_optional_extra(tmp_path):
    """In a fresh process, the crawl imports no module of an optional extra (so it works
    without them), nor the package's ``__main__`` (which would run the command line)."""
    script = tmp_path / "scripts" / "crawl.py"
    script.parent.mkdir()
    script.write_text(textwrap.dedent(f"""\
        import sys

        from skbase.lookup import all_objects

        OPTIONAL = {OPTIONAL_MODULES!r}
        found = all_objects(package_name="reinpatch_forecast",
                            filter_tags={{"object_type": "forecaster"}})
        assert [name for name, _ in found] == ["ReinPatchForecaster"], found
        loaded = sorted(name for name in sys.modules if name.partition(".")[0] in OPTIONAL)
        assert not loaded, loaded
        assert "reinpatch_forecast.__main__" not in sys.modules  # it would run the CLI
        print("found", found[0][1].__module__)
        """), encoding="utf-8")
    result = run_script(script, timeout=240)
    assert "found reinpatch_forecast.sktime.forecaster" in result.stdout


def _record_block() -> str:
    blocks = [block for block in python_blocks(SKTIME_PAGE) if "_placeholder_record" in block]
    assert len(blocks) == 1, "the sktime page shows one placeholder record"
    return blocks[0]


def test_the_placeholder_record_resolves_to_the_class():
    """Decorated by sktime's ``_placeholder_record`` with the package installed, the record is
    the forecaster itself, imported from the module it names."""
    namespace: dict = {"__name__": "placeholder_record"}
    exec(compile(_record_block(), "quickstart_sktime.md record", "exec"), namespace)
    assert namespace["ReinPatchForecaster"] is ReinPatchForecaster


def test_the_placeholder_record_has_the_class_tags(monkeypatch):
    """The undecorated record: a forecaster whose tags are the class's own, except the
    packaging tags, which name this distribution and its Python requirement."""
    calls = []

    def keep_the_record(module_name, obj_name=None, dependencies=None, condition=True):
        calls.append((module_name, obj_name, dependencies))
        return lambda cls: cls

    monkeypatch.setattr("sktime.utils.dependencies._placeholder_record", keep_the_record)
    namespace: dict = {"__name__": "placeholder_record"}
    exec(compile(_record_block(), "quickstart_sktime.md record", "exec"), namespace)
    record = namespace["ReinPatchForecaster"]
    assert record is not ReinPatchForecaster and issubclass(record, BaseForecaster)
    assert record.__name__ == ReinPatchForecaster.__name__

    [(module_name, obj_name, dependencies)] = calls
    assert obj_name is None  # the record's own name is looked up
    assert getattr(importlib.import_module(module_name), record.__name__) is ReinPatchForecaster

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert dependencies == record._tags["python_dependencies"] == project["name"]
    assert record._tags["python_version"] == project["requires-python"]

    def own(tags: dict) -> dict:
        return {name: value for name, value in tags.items() if name not in PACKAGING_TAGS}

    assert own(record._tags) == own(ReinPatchForecaster._tags)
    for name, value in ReinPatchForecaster.get_class_tags().items():
        if name not in PACKAGING_TAGS:
            assert record.get_class_tag(name) == value, name
