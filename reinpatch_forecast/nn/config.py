"""Configuration of :class:`~reinpatch_forecast.nn.network.ReinPatchNetwork`.

:class:`ReinPatchConfig` holds what the data and the token budget fix, and nests the parts
that belong together: :class:`BackboneConfig` (the Transformer's sizes), :class:`PatcherConfig`
(which patcher, and the learned patcher's sizes and policy settings) and
:class:`TrainingConfig` (GRPG). Every setting is checked once, when the configuration is built,
so a network is never built from settings that cannot work. :meth:`ReinPatchConfig.to_dict`
gives plain nested values (what darts stores in checkpoints) and ``ReinPatchConfig(**values)``
builds the same configuration back: the nested parts may be given as dictionaries.
"""

from __future__ import annotations

import math
import numbers
import warnings
from dataclasses import asdict, dataclass, field

from ..errors import ReinPatchInputError
from .learned_patcher import DEFAULT_PATCHER_SIZES
from .patcher_interface import BUDGETS, PATCHER_NAMES, check_budget_rule, check_levels
from .segments import check_budget, coarse_token_budget, token_budget

__all__ = ["ReinPatchConfig", "BackboneConfig", "PatcherConfig", "TrainingConfig",
           "PARAM_KINDS", "BUDGETS"]

#: How each forecast parameter is mapped back from the normalised scale:
#: ``"location"`` like the series itself (``* std + mean``), ``"softplus_scale"`` as a spread
#: whose consumer applies a softplus (e.g. darts' Gaussian ``sigma``): ``softplus`` is scaled by
#: ``std`` and mapped back through the inverse softplus.
PARAM_KINDS = ("location", "softplus_scale")


def _check_positive_int(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ReinPatchInputError(f"{name} must be an integer >= 1, got {value!r}.")


def _check_share(name: str, value: object, what: str) -> None:
    if (isinstance(value, bool) or not isinstance(value, numbers.Real)
            or not 0 < value <= 1):
        raise ReinPatchInputError(
            f"{name} must be a number in (0, 1] {what}, got {value!r}; e.g. 0.125 scores "
            "one row in eight."
        )


def _check_non_negative(name: str, value: object, what: str = "") -> None:
    if (isinstance(value, bool) or not isinstance(value, numbers.Real)
            or not math.isfinite(value) or value < 0):
        raise ReinPatchInputError(f"{name} must be a finite number >= 0{what}, got {value!r}.")


@dataclass
class BackboneConfig:
    """Sizes of the backbone (:class:`~reinpatch_forecast.nn.backbone.Backbone`).

    Attributes
    ----------
    d_model, n_heads, n_layers, dropout
        Transformer encoder sizes; the feed-forward width is ``ff_multiplier * d_model``.
    ff_multiplier
        Feed-forward width over ``d_model``.
    resample_points
        ``P``: points each patch's raw values are area-resampled to for its shape token;
        ``None``: the grid's patch length ``ceil(R)`` (set by :class:`ReinPatchConfig`), so a
        uniform patch keeps every value and a longer one is low-passed, never aliased.
    step_width
        ``k``: features per time step of the time-aligned readout; the head reads ``L * k``
        of them. ``None``: ``max(1, d_model // P)`` (see :attr:`ReinPatchConfig.step_width`).
    """

    d_model: int = 64
    n_heads: int = 4
    n_layers: int = 2
    ff_multiplier: int = 2
    dropout: float = 0.1
    resample_points: int | None = None
    step_width: int | None = None

    def __post_init__(self) -> None:
        for name in ("d_model", "n_heads", "n_layers", "ff_multiplier"):
            _check_positive_int(name, getattr(self, name))
        for name in ("resample_points", "step_width"):
            if getattr(self, name) is not None:
                _check_positive_int(name, getattr(self, name))
        if self.d_model % self.n_heads != 0:
            raise ReinPatchInputError(
                f"d_model={self.d_model} must be divisible by n_heads={self.n_heads}."
            )
        if not 0.0 <= self.dropout < 1.0:
            raise ReinPatchInputError(f"dropout must be in [0, 1), got {self.dropout}.")


@dataclass
class PatcherConfig:
    """Which patcher cuts the series, and the learned patcher's settings.

    Attributes
    ----------
    name
        ``"learned"`` (ReinPatch), ``"uniform"``, ``"random"`` or ``"volatility"``.
    hidden_size, n_layers, kernel_size
        Sizes of the learned patcher's conv stack (see
        :class:`~reinpatch_forecast.nn.learned_patcher.LearnedPatcher`).
    density_sigma, density_knots, min_length
        Exploration scale, cells per grid patch and shortest patch of its density policy.
    decode_margin
        The decode's soft threshold on the policy's cell means, in units of
        ``density_sigma``: ``0`` for a new patcher; a given (pretrained) patcher brings its own.
    """

    name: str = "learned"
    hidden_size: int = DEFAULT_PATCHER_SIZES["hidden_size"]
    n_layers: int = DEFAULT_PATCHER_SIZES["n_layers"]
    kernel_size: int = DEFAULT_PATCHER_SIZES["kernel_size"]
    density_sigma: float = 0.5
    density_knots: int = 4
    min_length: int = 2
    decode_margin: float = 0.0

    def __post_init__(self) -> None:
        if self.name not in PATCHER_NAMES:
            raise ReinPatchInputError(
                f"Unknown patcher {self.name!r}; use one of {', '.join(PATCHER_NAMES)}."
            )

    def learned_settings(self) -> dict:
        """Constructor arguments of the learned patcher (but ``levels`` and ``at_most``)."""
        values = asdict(self)
        values.pop("name")
        return values


@dataclass
class TrainingConfig:
    """How GRPG trains the learned patcher.

    Attributes
    ----------
    group_size
        ``G``: patchings sampled per series in a GRPG step and scored against the decoded one.
    kl_coef
        ``lambda_KL``: weight of the KL anchor of the policy to its reference (the uniform grid).
    scored_share
        Share of the rows (windows times channels) of a batch whose group a GRPG step draws
        and scores: the first ``ceil(scored_share * B * C)`` rows (batches come shuffled), at
        least one. The backbone trains on the decode of every row; the policy learns from the
        scored rows. Scoring the group is the step's extra cost over uniform patches, so a
        share keeps that cost the same fraction of a step for one series, many channels or a
        panel, and for any batch size.
    """

    group_size: int = 8
    kl_coef: float = 0.03
    scored_share: float = 0.125

    def __post_init__(self) -> None:
        if (isinstance(self.group_size, bool) or not isinstance(self.group_size, int)
                or self.group_size < 1):
            raise ReinPatchInputError(
                f"group_size must be a positive integer (patchings sampled per series and "
                f"scored against the decoded one), got {self.group_size!r}."
            )
        _check_non_negative("kl_coef", self.kl_coef)
        _check_share("scored_share", self.scored_share,
                     "(the share of a batch's rows whose group a training step scores)")


#: The count of scored series that configurations saved before ``scored_share`` carry.
_LEGACY_SCORED_COUNT = "scored_series"


def _without_legacy_training(value: object) -> object:
    """``value`` without the scored-series count of configurations saved before
    ``scored_share`` (it sets how a step trains, not the weights, so a saved model loads and
    forecasts as before; further training uses the default share), with a warning."""
    if not isinstance(value, dict) or _LEGACY_SCORED_COUNT not in value:
        return value
    warnings.warn(
        f"The training setting {_LEGACY_SCORED_COUNT}={value[_LEGACY_SCORED_COUNT]!r} (a count "
        f"of series) is replaced by scored_share (a share of a batch's rows); it is ignored "
        f"and scored_share={value.get('scored_share', TrainingConfig.scored_share)} is used. "
        "Pass scored_share instead.", FutureWarning, stacklevel=4)
    return {key: item for key, item in value.items() if key != _LEGACY_SCORED_COUNT}


def _nested(value: object, cls: type, name: str) -> object:
    """``value`` as a ``cls`` (given as one, as a dictionary of its fields, or as ``None``)."""
    if value is None:
        return cls()
    if isinstance(value, dict):
        return cls(**value)
    if not isinstance(value, cls):
        raise ReinPatchInputError(
            f"{name} must be a {cls.__name__} or a dictionary of its fields, got {value!r}."
        )
    return value


@dataclass
class ReinPatchConfig:
    """Configuration of :class:`ReinPatchNetwork`.

    Users set :class:`~reinpatch_forecast.options.ModelOptions` and
    :class:`~reinpatch_forecast.options.TrainingOptions`; the darts model builds this from them
    (``options.build_network_config``) and adds what the data and the loss fix at the first fit:
    ``n_channels``, ``nr_params``, ``param_kinds``, ``monotone_params`` and the covariate
    widths. The defaults here equal the options' (``tests/test_options.py`` checks), as ``nn``
    imports nothing above it.

    Attributes
    ----------
    input_length
        Lookback ``L``.
    output_length
        Horizon ``H``.
    n_channels
        ``C`` (used only by the affine RevIN; the rest is channel independent).
    compression_rate
        ``R``: the token budget is ``N = ceil(L / R)`` patches for every series. With
        ``levels=2``, a pair ``(R1, R2)``: ``N1 = ceil(L / R1)`` fine patches and
        ``N2 = ceil(N1 / R2)`` coarse ones (``1 <= R2 <= N1``); e.g. ``(4, 4)`` on ``L = 96``
        gives 24 fine and 6 coarse patches.
    levels
        Boundary levels: 1, or 2 for a second, coarser set of starts nested in the first
        (see :class:`~reinpatch_forecast.nn.learned_patcher.LearnedPatcher` and
        :class:`~reinpatch_forecast.nn.backbone.Backbone`); ``compression_rate`` is then a pair.
    budget
        ``"exact"``: every patching has exactly ``N`` patches. ``"at_most"`` (the paper's
        minimum compression rate): the learned patcher also picks, per series, how many of
        the ``N`` slots it uses (a share of :data:`~reinpatch_forecast.nn.policies.BUDGET_SHARES`);
        the unused slots are masked. It needs the learned patcher at one level.
    nr_params
        ``Q``: values per forecast step.
    param_kinds
        One entry of :data:`PARAM_KINDS` per forecast parameter; default all ``"location"``.
    monotone_params
        Sort the ``Q`` parameters of every step in increasing order (quantile outputs: no
        quantile crossing, whatever the training state).
    revin, revin_affine
        Instance normalisation of every series, and its optional affine map.
    n_past_covariates, n_future_covariates, n_static_covariates
        Covariate features the backbone reads (see :mod:`~reinpatch_forecast.nn.covariates`);
        like ``n_channels``, derived from the data at the first fit.
    backbone
        :class:`BackboneConfig` (or a dictionary of its fields).
    patcher
        :class:`PatcherConfig` (or a dictionary of its fields, or just the patcher's name).
    training
        :class:`TrainingConfig` (or a dictionary of its fields).
    """

    input_length: int
    output_length: int
    n_channels: int = 1
    compression_rate: float | tuple[float, float] = 8
    levels: int = 1
    budget: str = "exact"
    nr_params: int = 1
    param_kinds: tuple[str, ...] | None = None
    monotone_params: bool = False
    revin: bool = True
    revin_affine: bool = False
    n_past_covariates: int = 0
    n_future_covariates: int = 0
    n_static_covariates: int = 0
    backbone: BackboneConfig = field(default_factory=BackboneConfig)
    patcher: PatcherConfig = field(default_factory=PatcherConfig)
    training: TrainingConfig = field(default_factory=TrainingConfig)

    def __post_init__(self) -> None:
        if isinstance(self.patcher, str):
            self.patcher = PatcherConfig(name=self.patcher)
        self.backbone = _nested(self.backbone, BackboneConfig, "backbone")
        self.patcher = _nested(self.patcher, PatcherConfig, "patcher")
        self.training = _nested(_without_legacy_training(self.training), TrainingConfig,
                                "training")
        self._check_levels()
        if (isinstance(self.input_length, bool)
                or not isinstance(self.input_length, numbers.Integral) or self.input_length < 2):
            raise ReinPatchInputError(
                f"input_length must be an integer >= 2 to place patch boundaries, got "
                f"{self.input_length!r}."
            )
        _check_positive_int("output_length", self.output_length)
        if self.revin_affine not in (True, False):
            raise ReinPatchInputError(f"revin_affine must be True or False, got "
                                      f"{self.revin_affine!r}.")
        check_budget(self.input_length, self.fine_compression_rate)
        if self.levels == 2:
            coarse_token_budget(self.n_patches, self.compression_rate[1])  # R2 vs N1
        check_budget_rule(self.budget, self.patcher.name, self.levels)
        _check_positive_int("n_channels", self.n_channels)
        _check_positive_int("nr_params", self.nr_params)
        for name in ("n_past_covariates", "n_future_covariates", "n_static_covariates"):
            if getattr(self, name) < 0:
                raise ReinPatchInputError(f"{name} must be >= 0, got {getattr(self, name)}.")
        if self.backbone.resample_points is None:
            self.backbone.resample_points = math.ceil(self.fine_compression_rate)
        if self.param_kinds is None:
            self.param_kinds = ("location",) * self.nr_params
        self.param_kinds = tuple(self.param_kinds)
        if len(self.param_kinds) != self.nr_params or not set(self.param_kinds) <= set(PARAM_KINDS):
            raise ReinPatchInputError(
                f"param_kinds must hold nr_params={self.nr_params} entries from {PARAM_KINDS}, "
                f"got {self.param_kinds}."
            )

    def _check_levels(self) -> None:
        """Check ``levels`` and the form of ``compression_rate``; store a pair as a tuple."""
        check_levels(self.levels)
        rate = self.compression_rate
        is_sequence = isinstance(rate, (tuple, list))
        if self.levels == 1:
            if is_sequence:
                raise ReinPatchInputError(
                    f"compression_rate={rate!r} is a sequence but levels=1: pass one number "
                    "(e.g. compression_rate=8), or levels=2 with a pair (R1, R2)."
                )
            return
        if not is_sequence or len(rate) != 2:
            raise ReinPatchInputError(
                f"levels=2 needs compression_rate=(R1, R2), a pair: N1 = ceil(L / R1) fine "
                f"patches and N2 = ceil(N1 / R2) coarse ones, e.g. (4, 4); got {rate!r}."
            )
        for value in rate:
            if (isinstance(value, bool) or not isinstance(value, numbers.Real)
                    or not math.isfinite(value)):
                raise ReinPatchInputError(
                    f"compression_rate=(R1, R2) must hold two finite numbers >= 1, got {rate!r}."
                )
        self.compression_rate = tuple(rate)

    @property
    def fine_compression_rate(self) -> float:
        """``R`` (one level) or ``R1`` (two levels): steps per fine patch on average."""
        if isinstance(self.compression_rate, tuple):
            return self.compression_rate[0]
        return self.compression_rate

    @property
    def n_patches(self) -> int:
        """Token budget ``N = ceil(L / R)``; with two levels, the fine one ``N1 = ceil(L / R1)``."""
        return token_budget(self.input_length, self.fine_compression_rate)

    @property
    def n_coarse_patches(self) -> int | None:
        """Coarse budget ``N2 = ceil(N1 / R2)`` with two levels, ``None`` with one."""
        if self.levels == 1:
            return None
        return coarse_token_budget(self.n_patches, self.compression_rate[1])

    @property
    def step_width(self) -> int:
        """``k``: features per time step of the time-aligned readout: the backbone's
        ``step_width`` if set, else ``max(1, d // P)``.

        By default the head reads ``L * k`` features, as many as a head over the ``N * d``
        token features of the uniform grid of ``P``-step patches.
        """
        if self.backbone.step_width is not None:
            return self.backbone.step_width
        return max(1, self.backbone.d_model // self.backbone.resample_points)

    @property
    def uses_covariates(self) -> bool:
        """Whether any covariate kind has features."""
        return bool(self.n_past_covariates or self.n_future_covariates
                    or self.n_static_covariates)

    def to_dict(self) -> dict:
        """The constructor arguments as plain (nested) Python values:
        ``ReinPatchConfig(**config.to_dict())`` equals ``config``."""
        return asdict(self)
