"""The parameters of ReinPatch, typed once for every face.

Two dataclasses hold every option a user sets: :class:`ModelOptions` (what the model is: its
patching and its backbone sizes) and :class:`TrainingOptions` (how GRPG trains the patcher:
advanced). The darts :class:`~reinpatch_forecast.darts.ReinPatchModel`, the sktime
:class:`~reinpatch_forecast.sktime.ReinPatchForecaster` and the command line take their
defaults, their documentation and their command-line flags from these fields, so no face can
drift from another. Fields that follow from the data or the loss (channels, likelihood
parameters) are not options: the darts model derives them at its first fit and only the
network's own configuration (:class:`~reinpatch_forecast.nn.ReinPatchConfig`) holds them.

Validation lives in one place, :class:`~reinpatch_forecast.nn.ReinPatchConfig`, which
:func:`build_network_config` builds from the options; its messages name the lengths with the
faces' words (``input_chunk_length``, ``output_chunk_length``), not the network's.
"""

from __future__ import annotations

import argparse
import math
import numbers
import os
import re
import textwrap
from dataclasses import MISSING, Field, dataclass, field, fields
from typing import TYPE_CHECKING, Any, Callable, Mapping

from .errors import ReinPatchInputError

if TYPE_CHECKING:  # pragma: no cover
    from .nn import LearnedPatcher, ReinPatchConfig

__all__ = ["ModelOptions", "TrainingOptions", "OPTION_CLASSES", "option_names",
           "options_from", "build_network_config", "document_options", "PretrainingDefaults",
           "PRETRAINING", "option_default"]


#: The ``section`` of an option that is a field of ``ReinPatchConfig`` itself.
ROOT = "root"


def _option(default: Any, help: str, type_doc: str, section: str | None) -> Any:
    """A dataclass field with its documentation (numpydoc ``type_doc`` and ``help``) and the
    place of its value in the network's configuration.

    ``section`` names where :func:`build_network_config` puts the option in
    :class:`~reinpatch_forecast.nn.ReinPatchConfig`, always under the option's own name:
    :data:`ROOT` for a field of the configuration itself, ``"backbone"`` or ``"training"`` for a
    field of that nested section, ``None`` for an option the faces resolve themselves.
    """
    return field(default=default, metadata={"help": help, "type_doc": type_doc,
                                            "section": section})


@dataclass(frozen=True)
class ModelOptions:
    """What the model is: its patching and its backbone sizes.

    Attributes
    ----------
    %(options)s
    """

    compression_rate: float | tuple[float, float] = _option(
        8, "Average patch length: every series gets exactly ``ceil(L / compression_rate)`` "
        "patches. With ``levels=2``, a pair ``(R1, R2)``: ``N1 = ceil(L / R1)`` fine patches "
        "and ``N2 = ceil(N1 / R2)`` coarse ones, e.g. ``(4, 4)`` for 4x then 16x overall.",
        "float or (float, float)", section=ROOT)
    levels: int = _option(
        1, "Boundary levels: 1, or 2 for coarse patches nested in the fine ones (hierarchical "
        "patching; the backbone runs blocks on the fine tokens, pools them into coarse tokens, "
        "runs blocks there and reads both).", "int", section=ROOT)
    # the faces turn a patcher object or file into the patcher's name and its weights
    patcher: str | os.PathLike | LearnedPatcher | dict = _option(
        "learned", "``\"learned\"`` (ReinPatch), ``\"uniform\"`` (fixed patches, "
        "PatchTST-like), ``\"random\"``, ``\"volatility\"`` (cut at the largest jumps), or a "
        "foundation patcher used frozen (only the backbone trains, with no group rollouts): "
        "``\"pretrained\"`` (the one shipped in the package), a "
        ":class:`~reinpatch_forecast.nn.LearnedPatcher` or the path of one saved with "
        ":func:`~reinpatch_forecast.patcher_io.save_patcher`.",
        "str, path or LearnedPatcher", section=None)
    patcher_init: str | os.PathLike | LearnedPatcher | dict | None = _option(
        None, "With ``patcher=\"learned\"``: start GRPG from these weights (``\"pretrained\"``, "
        "a ``LearnedPatcher`` or the path of a saved patcher) and train them end to end; "
        "``None`` starts from a new patcher (which decodes the uniform grid).",
        "str, path, LearnedPatcher or None", section=None)
    budget: str = _option(
        "exact", "How the compression rate bounds the tokens: ``\"exact\"`` (``N = "
        "ceil(L / R)`` patches for every series) or ``\"at_most\"`` (the paper's minimum "
        "compression rate: the learned patcher also chooses, per series, to use 1/4, 1/2, 3/4 "
        "or all of the ``N`` token slots; learned patcher and one level only).", "str",
        section=ROOT)
    d_model: int = _option(64, "Width of the Transformer.", "int", section="backbone")
    n_heads: int = _option(4, "Attention heads.", "int", section="backbone")
    n_layers: int = _option(2, "Transformer layers.", "int", section="backbone")
    dropout: float = _option(0.1, "Dropout rate (encoder layers and the head's input).",
                             "float", section="backbone")
    resample_points: int | None = _option(
        None, "Points each patch is resampled to (area resampling) for its shape token; "
        "``None``: ``ceil(compression_rate)``, every value of a uniform patch.", "int or None",
        section="backbone")
    step_width: int | None = _option(
        None, "Features per time step that the head reads (``input_chunk_length`` times this "
        "many in all); ``None``: ``d_model // resample_points``, as many as the tokens of "
        "the uniform grid hold.", "int or None", section="backbone")
    revin_affine: bool = _option(
        False, "Learn a per-component affine map in the instance normalisation.", "bool",
        section=ROOT)


#: The patcher's learning rate over the backbone's when ``patcher_lr`` is ``None``. GRPG scores
#: an eighth of each batch's rows, so the policy's gradient is a noisy estimate; a faster
#: patcher keeps it learning at that share, while the KL anchor's pull to the grid scales with
#: it.
PATCHER_LR_FACTOR = 6.0


def patcher_learning_rate(patcher_lr: float | None, lr: float) -> float:
    """The patcher's learning rate: ``patcher_lr``, or :data:`PATCHER_LR_FACTOR` times the
    backbone's ``lr`` when it is ``None``."""
    return PATCHER_LR_FACTOR * lr if patcher_lr is None else patcher_lr


@dataclass(frozen=True)
class TrainingOptions:
    """How the model trains: GRPG's settings for the learned patcher and the weight average
    (advanced: the defaults suit most data).

    Attributes
    ----------
    %(options)s
    """

    group_size: int = _option(
        8, "``G``: patchings sampled per series in a training step and scored against the "
        "decoded one (without gradients).", "int", section="training")
    scored_share: float = _option(
        0.125, "Share of the rows (windows times components) of each training batch whose "
        "group is drawn and scored: the first rows of the (shuffled) batch, at least one. The "
        "backbone trains on every window; scoring is the learned patcher's extra cost per "
        "step, the same share of a step for one series, many components or a panel, and a "
        "larger share gives the policy a less noisy gradient.", "float", section="training")
    kl_coef: float = _option(
        0.03, "Weight of the KL anchor that keeps the policy near its reference (the uniform "
        "grid): larger keeps patches on the grid where rewards do not separate, smaller lets "
        "the policy follow events sooner.", "float", section="training")
    # a setting of the trainer (a callback), not of the network
    ema_decay: float | None = _option(
        0.995, "Validate, stop early and predict with an exponential moving average of the "
        "weights: its weight on the previous average per optimizer step, at most this value "
        "and smaller over the first steps (``min(ema_decay, (1 + n) / (10 + n))`` at step "
        "``n``), so a short fit averages a share of its steps; ``None`` uses the last "
        "weights. A weight-averaging callback in ``pl_trainer_kwargs`` replaces it.",
        "float or None", section=None)
    # a setting of the optimizer (the Lightning module's), not of the network
    patcher_lr: float | None = _option(
        None, f"Learning rate of the patcher; ``None`` uses {PATCHER_LR_FACTOR:g}x the "
        "backbone's learning rate.",
        "float or None", section=None)


#: The option dataclasses, in the order the faces list their parameters.
OPTION_CLASSES = (ModelOptions, TrainingOptions)


@dataclass(frozen=True)
class PretrainingDefaults:
    """Defaults of a foundation patcher's pretraining that are not model options: a short
    forecasting task over many series and a small throwaway backbone. ``pretrain_patcher`` and
    the command line's ``pretrain-patcher`` both read them; the shipped patcher was trained with
    them. The patcher's budget (``compression_rate``, ``group_size``, ``kl_coef``) defaults to
    the model options' (:func:`option_default`)."""

    input_chunk_length: int = 64
    output_chunk_length: int = 16
    n_epochs: int = 10
    batch_size: int = 64
    max_windows_per_series: int | None = 256
    d_model: int = 32
    n_layers: int = 1
    #: The throwaway backbone's dropout; it trains at a constant learning rate (no schedule),
    #: the recipe the shipped patcher was pretrained with.
    dropout: float = 0.1
    #: The pretrained patcher's decode margin (``LearnedPatcher``'s ``decode_margin``): used
    #: frozen on a series unlike its corpus, it keeps the grid unless its scores are clear.
    decode_margin: float = 1.0
    #: GRPG's share of scored rows and the patcher's learning rate over the throwaway
    #: backbone's in pretraining (the shipped patcher's; a model's own defaults are
    #: ``scored_share`` and :data:`PATCHER_LR_FACTOR`).
    scored_share: float = 0.25
    patcher_lr_factor: float = 3.0


#: The one instance of :class:`PretrainingDefaults`.
PRETRAINING = PretrainingDefaults()


def option_default(name: str) -> Any:
    """The default of the model option ``name`` (a field of ``ModelOptions`` or
    ``TrainingOptions``)."""
    for f in option_fields():
        if f.name == name:
            return _default(f)
    raise KeyError(f"no model option named {name!r}")


def option_names() -> list[str]:
    """Every option's name, in order (the parameters each face must accept)."""
    return [f.name for cls in OPTION_CLASSES for f in fields(cls)]


def option_fields() -> list[Field]:
    """Every option's dataclass field, in order."""
    return [f for cls in OPTION_CLASSES for f in fields(cls)]


def options_from(values: Mapping[str, Any]) -> tuple[ModelOptions, TrainingOptions]:
    """The options named in ``values`` (other keys are ignored; missing ones take defaults)."""
    return tuple(cls(**{f.name: values[f.name] for f in fields(cls) if f.name in values})
                 for cls in OPTION_CLASSES)  # type: ignore[return-value]


def build_network_config(model: ModelOptions, training: TrainingOptions, input_length: int,
                         output_length: int, patcher_name: str,
                         given_patcher_config: Mapping[str, Any] | None = None
                         ) -> "ReinPatchConfig":
    """The network's configuration (which validates every value) from the options.

    Parameters
    ----------
    model, training
        The user's options.
    input_length, output_length
        ``L`` and ``H``.
    patcher_name
        ``model.patcher`` when it names a patcher, ``"learned"`` for a given patcher.
    given_patcher_config
        A given patcher's own configuration (``LearnedPatcher.config()``), whose sizes and
        policy settings the network's patcher takes, and whose levels and budget must fit the
        options; ``None`` for the defaults.
    """
    from .nn import ReinPatchConfig
    from .nn.config import PatcherConfig
    from .nn.patcher_interface import check_patcher_fits

    _check_fixed_length("input_chunk_length", input_length, "lookback L",
                        "every series gets the token budget N = ceil(L / compression_rate) "
                        "patches, and the forecasting head reads the L steps")
    _check_fixed_length("output_chunk_length", output_length, "horizon H",
                        "the forecasting head maps the L steps of the lookback to H outputs, "
                        "and future covariates enter over the H steps")
    lr = training.patcher_lr
    if lr is not None and (isinstance(lr, bool) or not isinstance(lr, numbers.Real)
                           or not math.isfinite(lr) or lr < 0):
        raise ReinPatchInputError(
            f"patcher_lr must be a finite number >= 0 (the patcher's learning rate; 0 keeps "
            f"it fixed) or None ({PATCHER_LR_FACTOR:g}x the optimizer's lr), got {lr!r}."
        )

    if given_patcher_config is not None:
        check_patcher_fits(given_patcher_config.get("levels", 1),
                           bool(given_patcher_config.get("at_most", False)), model.levels,
                           model.budget)
    patcher_fields = set(PatcherConfig.__dataclass_fields__) - {"name"}
    given = {key: value for key, value in (given_patcher_config or {}).items()
             if key in patcher_fields}
    sections = network_sections(model, training)
    try:
        return ReinPatchConfig(input_length=input_length, output_length=output_length,
                               **sections.pop(ROOT), **sections,
                               patcher=PatcherConfig(name=patcher_name, **given))
    except ReinPatchInputError as error:
        raise type(error)(_FACE_NAMES.sub(
            lambda match: _FACE_WORDS[match.group(0)], str(error))) from None


def network_sections(model: ModelOptions, training: TrainingOptions) -> dict[str, dict]:
    """The options' values by the section of the network's configuration each one names
    (see :func:`_option`): ``{ROOT: {...}, "backbone": {...}, "training": {...}}``."""
    sections: dict[str, dict] = {ROOT: {}}
    for options in (model, training):
        for f in fields(options):
            if f.metadata["section"] is not None:
                sections.setdefault(f.metadata["section"], {})[f.name] = getattr(options, f.name)
    return sections


#: The network's names of the lengths and the faces' (darts' and sktime's) names of them.
_FACE_WORDS = {"input_length": "input_chunk_length", "output_length": "output_chunk_length"}
_FACE_NAMES = re.compile(r"\b(?:input_length|output_length)\b")


def _check_fixed_length(name: str, value: Any, what: str, reason: str) -> None:
    """Refuse a range for ``name`` (darts accepts ``(min, max)`` for some models), saying why
    ReinPatch needs one ``what`` (``reason``)."""
    if isinstance(value, (tuple, list, range)):
        raise ReinPatchInputError(
            f"{name}={value!r} is a range, but ReinPatch needs a fixed {what}: {reason}, both "
            f"sized when the model is built. Pass one integer {name} (to compare several, "
            "build one model per value)."
        )


def _default(f: Field) -> Any:
    return None if f.default is MISSING else f.default


def document_options(text: str, indent: int = 4, types: bool = False,
                     classes: tuple[type, ...] = OPTION_CLASSES) -> str:
    """``text`` with its ``%(options)s`` line replaced by the numpydoc entries of every option.

    Parameters
    ----------
    text
        A docstring with a line ``%(options)s`` in its ``Parameters`` section.
    indent
        Spaces before a parameter name in that docstring.
    types
        Write ``name : type, default=value`` (sktime's style) instead of a bare ``name`` (the
        darts style).
    classes
        The option classes to document (default: all).
    """
    pad = " " * indent
    entries = []
    for f in (f for cls in classes for f in fields(cls)):
        head = (f"{f.name} : {f.metadata['type_doc']}, default={_default(f)!r}" if types
                else f.name)
        body = textwrap.fill(f.metadata["help"], width=96 - indent, initial_indent=pad + "    ",
                             subsequent_indent=pad + "    ", break_on_hyphens=False)
        entries.append(f"{pad}{head}\n{body}")
    return text.replace(f"{pad}%(options)s", "\n".join(entries))


def add_option_flags(parser: Any, parse: Mapping[str, Callable[[str], Any]],
                     skip: tuple[str, ...] = (),
                     flags: Mapping[str, Mapping[str, Any]] | None = None) -> None:
    """Add ``--flag`` for every option (but ``skip``) to an ``argparse`` parser.

    Parameters
    ----------
    parser
        The ``argparse`` (sub)parser.
    parse
        The argument type of each option that is not a plain string (by option name).
    skip
        Options the command sets itself.
    flags
        ``add_argument`` settings of each option's flag (``help``, ``metavar``, ``choices``),
        by option name; a flag without ``help`` shows the option's documentation, and every
        help ends with the default.
    """
    for f in option_fields():
        if f.name in skip:
            continue
        flag = "--" + f.name.replace("_", "-")
        settings = dict((flags or {}).get(f.name, {}))
        default = _default(f)
        text = settings.pop("help", f.metadata["help"]).replace("``", "").rstrip(".")
        help_text = text[0].lower() + text[1:]
        if "(default" not in help_text:
            help_text += f" (default: {default})"
        if isinstance(default, bool):
            # --flag / --no-flag, so an option that is on by default can be switched off
            parser.add_argument(flag, action=argparse.BooleanOptionalAction, default=default,
                                help=help_text)
            continue
        settings.setdefault("type", parse.get(f.name, str))
        parser.add_argument(flag, default=default, help=help_text, **settings)


for _cls in OPTION_CLASSES:
    _cls.__doc__ = document_options(_cls.__doc__, types=True, classes=(_cls,))
