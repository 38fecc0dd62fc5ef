"""The documentation: the Sphinx site builds with warnings as errors, and its examples (and the
README's) run."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"
#: Pages whose ```python blocks are executed, in order, in one namespace per page.
EXAMPLE_PAGES = ("quickstart_darts.md", "quickstart_sktime.md", "foundation.md", "tuning.md",
                 "choosing_parameters.md", "../README.md")
_PYTHON_BLOCK = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)

_MISSING = [name for name in ("sphinx", "numpydoc", "myst_parser")
            if importlib.util.find_spec(name) is None]


def python_blocks(page: Path) -> list[str]:
    """The bodies of the ```python fenced blocks of a markdown page, in order."""
    return _PYTHON_BLOCK.findall(page.read_text(encoding="utf-8"))


@pytest.mark.skipif(
    bool(_MISSING),
    reason=f"the docs extra is not installed (missing {', '.join(_MISSING)}): "
           "pip install -e '.[docs]'",
)
def test_sphinx_build_has_no_warnings(tmp_path):
    """Built in this process, which has imported the package and its dependencies already
    (autodoc imports every documented module); sphinx reads the sources from scratch."""
    from sphinx.cmd.build import build_main

    warnings = tmp_path / "warnings.txt"
    status = build_main(["-W", "--keep-going", "-q", "-b", "html", "-w", str(warnings),
                         "-d", str(tmp_path / "doctrees"), str(DOCS), str(tmp_path / "html")])
    assert status == 0, f"sphinx-build failed:\n{warnings.read_text(encoding='utf-8')}"
    html = tmp_path / "html"
    for page in ("index", "quickstart_darts", "quickstart_sktime", "method", "foundation",
                 "choosing_parameters", "benchmarks", "cli", "api", "architecture",
                 "reliability", "tuning"):
        assert (html / f"{page}.html").is_file(), page
    assert (html / "_images" / "segmentation.png").is_file()
    api = (html / "api.html").read_text(encoding="utf-8")
    for name in ("reinpatch_forecast.darts.ReinPatchModel", "reinpatch_forecast.sktime."
                 "ReinPatchForecaster", "reinpatch_forecast.nn.learned_patcher.LearnedPatcher",
                 "reinpatch_forecast.plotting.plot_segmentation",
                 "reinpatch_forecast.patcher_io.save_patcher",
                 "reinpatch_forecast.options.ModelOptions",
                 "reinpatch_forecast.data.prepare_ltsf"):
        assert f'id="{name}"' in api, name
    benchmarks = (html / "benchmarks.html").read_text(encoding="utf-8")
    assert "<table" in benchmarks  # the existing reports are included


def test_every_example_page_has_python_blocks():
    for page in EXAMPLE_PAGES:
        assert python_blocks(DOCS / page), page


@pytest.mark.parametrize("page", EXAMPLE_PAGES)
def test_page_examples_run(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # examples write figures and models to the working directory
    monkeypatch.setenv("MPLBACKEND", "Agg")
    namespace: dict = {"__name__": f"docs_{Path(page).stem}"}
    for number, code in enumerate(python_blocks(DOCS / page), start=1):
        try:
            exec(compile(code, f"{page} block {number}", "exec"), namespace)
        except Exception as error:  # pragma: no cover - the message names the block
            pytest.fail(f"{page}, python block {number} failed: {type(error).__name__}: {error}")
