"""The darts members ReinPatchModel overrides, listed: a new override is a visible change.

Each override is a darts upgrade risk. ``darts/model.py`` overrides public members (and the
abstract ``_create_model``); the private ones live in ``DartsFixesMixin``
(``darts/_darts_fixes.py``), each with a comment naming what darts lacks. For comparison,
darts' own TSMixerModel overrides 2 members and TiDEModel 3.
"""

from __future__ import annotations

import inspect

from darts.models.forecasting.torch_forecasting_model import MixedCovariatesTorchModel

from reinpatch_forecast import ReinPatchModel
from reinpatch_forecast.darts._darts_fixes import DartsFixesMixin

#: Class machinery every class defines (not overrides in the sense of this test).
_MACHINERY = {"__init__", "__doc__", "__module__", "__qualname__", "__dict__", "__weakref__",
              "__annotations__", "__firstlineno__", "__static_attributes__",
              "__abstractmethods__", "_abc_impl"}

MODEL_OVERRIDES = {
    "_create_model",  # darts' abstract hook
    "supports_static_covariates",
    "fit",
    "predict",
    "to_onnx",
    "load",
    "load_weights",
    "load_from_checkpoint",
    "save",  # removes what killed checkpoint writes left
}
MIXIN_OVERRIDES = {
    "_create_save_dirs",  # the work-dir race
    "_init_trainer",  # atomic checkpoint files
    "_setup_for_predict",  # single-device prediction under DDP
    "_train",  # a usable model and a KeyboardInterrupt after Ctrl+C
    "__getstate__",  # no TensorBoard logger in the pickle (safe loading)
    "__setstate__",  # the TensorBoard logger rebuilt on load
}


def _overrides(cls: type) -> set[str]:
    return {name for name in vars(cls)
            if name not in _MACHINERY and hasattr(MixedCovariatesTorchModel, name)}


def test_the_model_overrides_only_the_listed_darts_members():
    assert _overrides(ReinPatchModel) == MODEL_OVERRIDES


def test_the_model_overrides_no_private_darts_member_but_its_abstract_hook():
    private = {name for name in _overrides(ReinPatchModel) if name.startswith("_")}
    assert private == {"_create_model"}


def test_the_mixin_overrides_only_the_listed_darts_members():
    assert _overrides(DartsFixesMixin) == MIXIN_OVERRIDES


def test_the_mixin_comes_before_darts_in_the_method_order():
    mro = ReinPatchModel.__mro__
    assert mro.index(DartsFixesMixin) < mro.index(MixedCovariatesTorchModel)
    for name in MIXIN_OVERRIDES:
        assert inspect.getattr_static(ReinPatchModel, name) is vars(DartsFixesMixin)[name]


def test_every_override_of_the_mixin_says_what_darts_lacks():
    source = inspect.getsource(DartsFixesMixin)
    for name in MIXIN_OVERRIDES:
        head = source[:source.index(f"def {name}(")]
        comment = head[head.rindex("\n\n"):]
        assert "darts lacks" in comment, name
