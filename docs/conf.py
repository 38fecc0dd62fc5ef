"""Sphinx configuration of the reinpatch-forecast documentation.

Build with ``make -C docs html`` (warnings are errors). The benchmark page includes every
``benchmarks/results/*.md`` report that exists at build time (see ``_include_benchmarks``).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("MPLBACKEND", "Agg")

import reinpatch_forecast  # noqa: E402

project = "reinpatch-forecast"
author = "reinpatch_forecast developers"
copyright = "reinpatch_forecast developers"
release = reinpatch_forecast.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "numpydoc",
    "myst_parser",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "_scripts", "Thumbs.db", ".DS_Store"]
templates_path: list[str] = []

# -- MyST -------------------------------------------------------------------------------------
myst_enable_extensions = ["colon_fence", "dollarmath"]
myst_heading_anchors = 3

# -- autodoc / numpydoc -----------------------------------------------------------------------
autodoc_member_order = "bysource"
autodoc_typehints = "none"  # the numpydoc sections describe the types
autodoc_inherit_docstrings = False  # darts' and torch's inherited docstrings are not ours
autodoc_default_options: dict[str, object] = {}
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

# -- HTML -------------------------------------------------------------------------------------
html_theme = "alabaster"
html_static_path = ["_static"]
html_title = f"reinpatch-forecast {release}"
html_theme_options = {
    "description": "ReinPatch (dynamic tokenization via reinforcement patching) for darts "
                   "and sktime",
    "fixed_sidebar": True,
    "page_width": "1100px",
}

# -- benchmark reports -------------------------------------------------------------------------
#: The reports the benchmark page may include, in this order; missing ones are left out, and
#: any other ``*.md`` report found later in the folder is appended.
BENCHMARK_ORDER = ("ltsf.md", "events.md", "recipe.md", "readout.md", "compression.md",
                   "speed.md", "scaling.md")
BENCHMARK_DIR = ROOT / "benchmarks" / "results"


def benchmark_reports() -> list[Path]:
    """The ``benchmarks/results/*.md`` files that exist now, in page order."""
    found = sorted(BENCHMARK_DIR.glob("*.md")) if BENCHMARK_DIR.is_dir() else []
    ordered = [BENCHMARK_DIR / name for name in BENCHMARK_ORDER if (BENCHMARK_DIR / name).is_file()]
    return ordered + [path for path in found if path not in ordered]


def _include_benchmarks(app, docname: str, source: list[str]) -> None:
    """Append an ``{include}`` of every existing report to the benchmark page."""
    if docname != "benchmarks":
        return
    reports = benchmark_reports()
    if not reports:
        source[0] += "\n\nNo benchmark report has been generated yet.\n"
        return
    parts = []
    for path in reports:
        relative = os.path.relpath(path, DOCS).replace(os.sep, "/")
        # relative-images: a report's plots lie beside it, not beside this page
        parts.append(f"\n\n```{{include}} {relative}\n:heading-offset: 1\n"
                     ":relative-images:\n```\n")
    source[0] += "".join(parts)


def _always_reread_benchmarks(app, env, added, changed, removed) -> list[str]:
    """Re-read the benchmark page on every build: a report may have appeared since the last."""
    return ["benchmarks"] if "benchmarks" in env.all_docs else []


def setup(app):
    app.connect("source-read", _include_benchmarks)
    app.connect("env-get-outdated", _always_reread_benchmarks)
    return {"parallel_read_safe": True}
