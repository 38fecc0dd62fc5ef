"""The darts members ReinPatchModel overrides, listed: a new override is a visible change.

Counted as for darts' own models: a name in a class's namespace that the darts base class also
has (the model against ``MixedCovariatesTorchModel``, its Lightning module against
``PLForecastingModule``). darts' TSMixerModel and TiDEModel, counted so, override 3 and 4.
Private darts names are used in ``darts/_darts_api.py`` only.
"""

from __future__ import annotations

import ast
import copyreg
import inspect
from pathlib import Path

import darts.models.forecasting.forecasting_model as forecasting_model
import darts.models.forecasting.pl_forecasting_module as pl_forecasting_module
import darts.models.forecasting.torch_forecasting_model as torch_forecasting_model
import darts.utils.likelihood_models.torch as torch_likelihoods
from darts.models.forecasting.pl_forecasting_module import PLForecastingModule
from darts.models.forecasting.torch_forecasting_model import MixedCovariatesTorchModel

import reinpatch_forecast.darts
from reinpatch_forecast import ReinPatchModel
from reinpatch_forecast.darts.model import _ReinPatchModule

#: Class machinery every class defines (not overrides in the sense of this test).
_MACHINERY = {"__init__", "__doc__", "__module__", "__qualname__", "__dict__", "__weakref__",
              "__annotations__", "__firstlineno__", "__static_attributes__",
              "__abstractmethods__", "_abc_impl", "__parameters__", "__orig_bases__"}

MODEL_OVERRIDES = {
    "_create_model",  # darts' abstract hook
    "supports_static_covariates",
    "fit",  # series checks, Ctrl+C
    "predict",  # window checks, one device under DDP
    "to_onnx",  # no exporter log or benign notices
    "load",  # file checks before darts reads the files
    "load_weights",
    "load_from_checkpoint",
}
MODULE_OVERRIDES = {
    "forward", "training_step",
    # the patcher's sampling generator in the checkpoints (a resumed fit draws the same)
    "on_save_checkpoint", "on_load_checkpoint",
}

ADAPTER = Path(reinpatch_forecast.darts.__file__).parent / "_darts_api.py"


def _overrides(cls: type, base: type) -> set[str]:
    return {name for name in vars(cls) if name not in _MACHINERY and hasattr(base, name)}


def test_the_model_overrides_only_the_listed_darts_members():
    assert _overrides(ReinPatchModel, MixedCovariatesTorchModel) == MODEL_OVERRIDES


def test_the_lightning_module_overrides_only_the_listed_members():
    assert _overrides(_ReinPatchModule, PLForecastingModule) == MODULE_OVERRIDES


def test_the_model_has_no_base_between_it_and_darts():
    assert ReinPatchModel.__bases__ == (MixedCovariatesTorchModel,)
    assert _ReinPatchModule.__bases__ == (PLForecastingModule,)


def _darts_private_names() -> set[str]:
    """Private names of darts' model, module and likelihood files (functions, classes,
    members)."""
    names = set()
    for module in (forecasting_model, torch_forecasting_model, pl_forecasting_module,
                   torch_likelihoods):
        tree = ast.parse(inspect.getsource(module))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name.startswith("_"):
                names.add(node.name)
            elif isinstance(node, ast.Attribute) and node.attr.startswith("_"):
                names.add(node.attr)
    return {name for name in names if not name.startswith("__")} | {"_DartsCheckpointIO"}


def test_private_darts_names_only_in_the_adapter_module():
    private = _darts_private_names()
    folder = ADAPTER.parent
    used = {}
    for path in folder.glob("*.py"):
        if path == ADAPTER:
            continue
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            name = (node.attr if isinstance(node, ast.Attribute)
                    else node.name if isinstance(node, ast.alias) else None)
            if name in private and name != "_create_model":  # the abstract hook is defined
                used.setdefault(path.name, set()).add(name)
    assert used == {}


def test_importing_the_package_changes_no_pickling_of_darts_classes():
    """Saved models with a likelihood load through darts' safe loader as they pickle by
    default (``test_persistence.py``'s quantile case); nothing is registered process-wide."""
    assert not [cls for cls in copyreg.dispatch_table
                if getattr(cls, "__module__", "").startswith("darts")]
