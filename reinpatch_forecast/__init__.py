"""reinpatch_forecast: ReinPatch (arXiv 2603.26097) for darts and sktime."""

__version__ = "0.1.0.dev0"
