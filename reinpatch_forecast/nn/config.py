"""Configuration of :class:`~reinpatch_forecast.nn.network.ReinPatchNetwork`.

Checks every setting when it is built and derives the token budgets and the backbone's
configuration from them, so a network is never built from settings that cannot work.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import asdict, dataclass, field

from ..errors import ReinPatchInputError
from .backbone import BackboneConfig
from .learned_patcher import DEFAULT_PATCHER_SIZES
from .patcher_interface import PATCHER_NAMES
from .policies import DEFAULT_POLICY, POLICY_NAMES
from .readout import DEFAULT_READOUT, STEP_READOUTS
from .segments import check_budget, coarse_token_budget, token_budget

__all__ = ["ReinPatchConfig", "PARAM_KINDS", "KL_SCHEDULES", "BUDGETS"]

#: How the compression rate bounds the tokens (see :attr:`ReinPatchConfig.budget`).
BUDGETS = ("exact", "at_most")

#: How the KL anchor's weight moves over training (see :attr:`ReinPatchConfig.kl_schedule`).
KL_SCHEDULES = ("constant", "linear")

#: How each forecast parameter is mapped back from the normalised scale:
#: ``"location"`` like the series itself (``* std + mean``), ``"softplus_scale"`` as a spread
#: whose consumer applies a softplus (e.g. darts' Gaussian ``sigma``): ``softplus`` is scaled by
#: ``std`` and mapped back through the inverse softplus.
PARAM_KINDS = ("location", "softplus_scale")


@dataclass
class ReinPatchConfig:
    """Configuration of :class:`ReinPatchNetwork`.

    Users set :class:`~reinpatch_forecast.options.ModelOptions` and
    :class:`~reinpatch_forecast.options.TrainingOptions`; the darts model builds this from them
    (``options.build_network_config``) and adds what the data and the loss fix at the first fit:
    ``n_channels``, ``nr_params``, ``param_kinds``, ``monotone_params`` and the covariate
    widths. The defaults here
    equal the options' (``tests/test_options.py`` checks), as ``nn`` imports nothing above it.

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
    patcher
        ``"learned"`` (ReinPatch), ``"uniform"``, ``"random"`` or ``"volatility"``.
    policy
        The learned patcher's boundary policy: ``"density"`` (default), ``"offset"`` or ``"topk"``
        (see :mod:`~reinpatch_forecast.nn.policies`).
    budget
        ``"exact"``: every patching has exactly ``N`` patches. ``"at_most"`` (the paper's
        minimum compression rate): the learned patcher also picks, per series, how many of
        the ``N`` slots it uses (a share of :data:`~reinpatch_forecast.nn.policies.BUDGET_SHARES`);
        the unused slots are masked. It needs the learned patcher with the density policy, one
        level and a time-aligned readout.
    group_size
        ``G``: patchings sampled per series in a GRPG step and scored against the decoded one
        (>= 1 for the learned patcher).
    sample_loss_weight
        ``w``: weight of the ``G`` samples' loss in the backbone's training loss,
        ``(decode loss + w * sample loss) / (1 + w)``; 0 (default) trains the backbone on the
        decoded patching only and forecasts the samples without gradients.
    kl_coef
        ``lambda_KL``: weight of the KL anchor of the policy to its reference (the uniform grid
        for ``"offset"`` and ``"density"``).
    kl_schedule
        One of :data:`KL_SCHEDULES`: ``"constant"`` keeps ``kl_coef`` all through training;
        ``"linear"`` lowers it linearly from ``kl_coef`` at the first policy epoch to 0 at the
        last (a firm anchor while the backbone is young, a free policy at the end).
    patcher_warmup
        Epochs at the start of training in which only the backbone trains, on the patcher's
        decode (the uniform grid for a new patcher), with no group drawn; GRPG starts after
        them, so the first rewards come from a backbone that can already forecast.
    nr_params
        ``Q``: values per forecast step.
    param_kinds
        One entry of :data:`PARAM_KINDS` per forecast parameter; default all ``"location"``.
    monotone_params
        Sort the ``Q`` parameters of every step in increasing order (quantile outputs: no
        quantile crossing, whatever the training state).
    d_model, n_heads, n_layers, ff_multiplier, dropout
        Backbone sizes (see :class:`~reinpatch_forecast.nn.backbone.BackboneConfig`).
    resample_points
        ``P``: points each patch is resampled to for its shape token; ``None`` (default): the
        grid's patch length ``ceil(R)``, so a uniform patch keeps every value and a longer one
        is low-passed, never aliased.
    use_local_mean, use_resampled, use_position, local_activation
        Token parts, for ablations.
    readout, readout_skip
        How the head reads the encoded tokens (time-aligned by default; ``"flatten"``: a
        head over token slots, for ablations) and whether each step's local features bypass
        the patches (see :class:`~reinpatch_forecast.nn.backbone.BackboneConfig`).
    patcher_hidden_size, patcher_layers, patcher_kernel_size
        Sizes of the learned patcher (see
        :class:`~reinpatch_forecast.nn.patchers.LearnedPatcher`).
    patcher_options
        Further settings of the learned patcher's policy (``offset_penalty``,
        ``density_sigma``, ``density_knots``, ``min_length``); ``None``: its defaults.
    revin, revin_affine
        Instance normalisation of every series, and its optional affine map.
    n_past_covariates, n_future_covariates, n_static_covariates
        Covariate features the backbone reads (see :mod:`~reinpatch_forecast.nn.covariates`);
        like ``n_channels``, derived from the data at the first fit.
    levels
        Boundary levels: 1, or 2 for a second, coarser set of starts nested in the first
        (see :class:`~reinpatch_forecast.nn.patchers.LearnedPatcher` and
        :class:`~reinpatch_forecast.nn.backbone.Backbone`); ``compression_rate`` is then a pair.
    """

    input_length: int
    output_length: int
    n_channels: int = 1
    compression_rate: float | tuple[float, float] = 8
    patcher: str = "learned"
    policy: str = DEFAULT_POLICY
    budget: str = "exact"
    group_size: int = 4
    kl_coef: float = 0.1
    kl_schedule: str = "constant"
    patcher_warmup: int = 0
    sample_loss_weight: float = 0.0
    nr_params: int = 1
    param_kinds: tuple[str, ...] | None = None
    monotone_params: bool = False
    d_model: int = 64
    n_heads: int = 4
    n_layers: int = 2
    ff_multiplier: int = 2
    dropout: float = 0.1
    resample_points: int | None = None
    use_local_mean: bool = True
    use_resampled: bool = True
    use_position: bool = True
    local_activation: bool = True
    readout: str = DEFAULT_READOUT
    readout_skip: bool | None = None
    patcher_hidden_size: int = DEFAULT_PATCHER_SIZES["hidden_size"]
    patcher_layers: int = DEFAULT_PATCHER_SIZES["n_layers"]
    patcher_kernel_size: int = DEFAULT_PATCHER_SIZES["kernel_size"]
    patcher_options: dict[str, float] | None = None
    revin: bool = True
    revin_affine: bool = False
    levels: int = 1
    n_past_covariates: int = 0
    n_future_covariates: int = 0
    n_static_covariates: int = 0
    backbone: BackboneConfig = field(init=False, repr=False)

    def policy_schedule(self, epoch: int, n_epochs: int | None) -> tuple[bool, float]:
        """Whether the patcher trains in ``epoch`` (0-based) and the KL weight it trains with.

        ``n_epochs`` is the planned number of epochs (``None``: unknown, the KL weight then
        stays at ``kl_coef``).
        """
        if epoch < self.patcher_warmup:
            return False, 0.0
        if self.kl_schedule == "constant" or not n_epochs:
            return True, float(self.kl_coef)
        policy_epochs = max(1, n_epochs - self.patcher_warmup)
        remaining = 1.0 - (epoch - self.patcher_warmup) / policy_epochs
        return True, float(self.kl_coef) * max(0.0, remaining)

    def __post_init__(self) -> None:
        self._check_levels()
        check_budget(self.input_length, self.fine_compression_rate)
        if self.levels == 2:
            coarse_token_budget(self.n_patches, self.compression_rate[1])  # R2 vs N1
        if self.input_length < 2:
            raise ReinPatchInputError(
                f"input_length must be >= 2 to place patch boundaries, got {self.input_length}."
            )
        if self.patcher not in PATCHER_NAMES:
            raise ReinPatchInputError(
                f"Unknown patcher {self.patcher!r}; use one of {', '.join(PATCHER_NAMES)}."
            )
        if self.policy not in POLICY_NAMES:
            raise ReinPatchInputError(
                f"Unknown policy {self.policy!r}: use 'offset' (boundaries move a few steps "
                "around the uniform grid), 'density' (resolution reallocated across the window) "
                "or 'topk' (Gumbel-top-k over all positions, an ablation)."
            )
        if (isinstance(self.group_size, bool) or not isinstance(self.group_size, int)
                or self.group_size < 1):
            raise ReinPatchInputError(
                f"group_size must be a positive integer (patchings sampled per series and "
                f"scored against the decoded one), got {self.group_size!r}."
            )
        if (isinstance(self.kl_coef, bool) or not isinstance(self.kl_coef, numbers.Real)
                or not math.isfinite(self.kl_coef) or self.kl_coef < 0):
            raise ReinPatchInputError(
                f"kl_coef must be a finite number >= 0, got {self.kl_coef!r}."
            )
        self._check_budget()
        if self.kl_schedule not in KL_SCHEDULES:
            raise ReinPatchInputError(
                f"Unknown kl_schedule {self.kl_schedule!r}: use 'constant' (kl_coef all through "
                "training) or 'linear' (kl_coef lowered linearly to 0 over the policy's epochs)."
            )
        if (isinstance(self.patcher_warmup, bool) or not isinstance(self.patcher_warmup, int)
                or self.patcher_warmup < 0):
            raise ReinPatchInputError(
                f"patcher_warmup must be an integer >= 0 (epochs in which only the backbone "
                f"trains before GRPG starts), got {self.patcher_warmup!r}."
            )
        if (isinstance(self.sample_loss_weight, bool)
                or not isinstance(self.sample_loss_weight, numbers.Real)
                or not math.isfinite(self.sample_loss_weight) or self.sample_loss_weight < 0):
            raise ReinPatchInputError(
                f"sample_loss_weight must be a finite number >= 0 (0: the backbone trains on "
                f"the decoded patching only), got {self.sample_loss_weight!r}."
            )
        if self.resample_points is None:
            self.resample_points = math.ceil(self.fine_compression_rate)
        if self.n_channels < 1:
            raise ReinPatchInputError(f"n_channels must be >= 1, got {self.n_channels}.")
        if self.param_kinds is None:
            self.param_kinds = ("location",) * self.nr_params
        self.param_kinds = tuple(self.param_kinds)
        if len(self.param_kinds) != self.nr_params or not set(self.param_kinds) <= set(PARAM_KINDS):
            raise ReinPatchInputError(
                f"param_kinds must hold nr_params={self.nr_params} entries from {PARAM_KINDS}, "
                f"got {self.param_kinds}."
            )
        self.backbone = BackboneConfig(
            input_length=self.input_length,
            output_length=self.output_length,
            n_patches=self.n_patches,
            nr_params=self.nr_params,
            d_model=self.d_model,
            n_heads=self.n_heads,
            n_layers=self.n_layers,
            ff_multiplier=self.ff_multiplier,
            dropout=self.dropout,
            resample_points=self.resample_points,
            variable_tokens=self.budget == "at_most",
            use_local_mean=self.use_local_mean,
            use_resampled=self.use_resampled,
            use_position=self.use_position,
            local_activation=self.local_activation,
            readout=self.readout,
            readout_skip=self.readout_skip,
            n_coarse_patches=self.n_coarse_patches,
            n_past_covariates=self.n_past_covariates,
            n_future_covariates=self.n_future_covariates,
            n_static_covariates=self.n_static_covariates,
        )

    def _check_budget(self) -> None:
        if self.budget not in BUDGETS:
            raise ReinPatchInputError(
                f"Unknown budget {self.budget!r}: use 'exact' (N patches for every series) or "
                "'at_most' (the learned patcher may use fewer)."
            )
        given = (self.patcher_options or {}).get("at_most")
        if given is not None and given != (self.budget == "at_most"):
            raise ReinPatchInputError(
                f"The given patcher was trained with {'an at-most' if given else 'an exact'} "
                f"token budget, but budget={self.budget!r}: pass "
                f"budget={'at_most' if given else 'exact'!r}."
            )
        if self.budget == "at_most":
            problems = []
            if self.patcher != "learned":
                problems.append(f"patcher={self.patcher!r} (a fixed rule always uses N patches)")
            if self.policy != "density":
                problems.append(f"policy={self.policy!r}")
            if self.levels != 1:
                problems.append(f"levels={self.levels}")
            if self.readout not in STEP_READOUTS:
                problems.append(f"readout={self.readout!r}")
            if problems:
                raise ReinPatchInputError(
                    "budget='at_most' needs the learned patcher with the density policy, one "
                    f"level and a time-aligned readout ({', '.join(STEP_READOUTS)}); got "
                    f"{', '.join(problems)}."
                )

    def _check_levels(self) -> None:
        """Check ``levels`` and the form of ``compression_rate``; store a pair as a tuple."""
        if isinstance(self.levels, bool) or self.levels not in (1, 2):
            raise ReinPatchInputError(
                f"levels must be 1 (one set of patch boundaries) or 2 (fine and coarse "
                f"boundaries, nested), got {self.levels!r}."
            )
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

    def to_dict(self) -> dict:
        """The constructor arguments, as plain Python values."""
        values = asdict(self)
        values.pop("backbone")
        return values
