"""ReinPatchForecaster: ReinPatch as an sktime ``BaseForecaster``.

The forecaster is a thin adapter: training and prediction are delegated to the darts
:class:`~reinpatch_forecast.darts.ReinPatchModel` (one training engine, see the design notes).
What this module adds is the sktime side: pandas <-> darts conversion, the forecasting horizon,
panels as one global model, ``update``, probabilistic forecasts from samples, ``pretrain`` and
persistence of the trained weights.

Every target column of every series (every instance of a panel) becomes one univariate darts
series: ReinPatch is channel independent, so this is the same model as training on the
multivariate series, and a model pretrained on one panel transfers to series with any number
of columns.

Built by sktime's extension template: the forecaster implements sktime's extension points
(``_fit``, ``_predict``, ``_update``, ``_predict_quantiles``, ``_pretrain``, ``_pretrain_update``,
``_get_fitted_params``, ``__post_init__``, ``__dynamic_tags__``, ``get_test_params``) and keeps
the data it forecasts from in ``_cur_y``/``_cur_X``, as sktime's own forecasters do. The other
overrides are ``_check_X_y`` and the four probabilistic methods (``predict_interval``,
``predict_quantiles``, ``predict_var``, ``predict_proba``), each of which checks one thing before
sktime's own method runs (see there). The pandas <-> darts conversion lives in :mod:`._frames`,
the checks of sktime's inputs in :mod:`._checks`.
"""

from __future__ import annotations

__author__ = ["reinpatch_forecast developers"]
__all__ = ["ReinPatchForecaster"]

import copy
import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd
from sktime.forecasting.base import BaseForecaster, ForecastingHorizon

from ..errors import ReinPatchInputError
from .._lightning import quiet_trainer_kwargs
from ..options import ModelOptions, TrainingOptions, build_network_config, document_options, \
    option_names, options_from
from ._checks import check_instances, check_pandas_input, check_reach
from ._frames import darts_covariates, forecast_frame, split_instances, steps_and_index, to_darts

_LIKELIHOODS = (None, "quantile", "gaussian")


class _TrainedModel:
    """A trained ``ReinPatchModel`` that keeps its weights through pickle and deepcopy.

    darts drops the Lightning module of a torch model when it is pickled or deep-copied (by
    design: it expects ``save``/``load``). This holder carries the module (``model.model``)
    beside the darts model in its state and re-attaches it, so that a fitted or pretrained
    forecaster can be pickled, deep-copied and cloned by sktime without losing its weights.

    Parameters
    ----------
    model
        A fitted :class:`~reinpatch_forecast.darts.ReinPatchModel`.
    """

    def __init__(self, model) -> None:
        self.model = model

    def __getstate__(self) -> dict[str, Any]:
        return {"model": self.model, "module": self.model.model}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.model = state["model"]
        if state["module"] is not None:
            self.model.model = state["module"]

    def __repr__(self) -> str:
        return f"_TrainedModel({type(self.model).__name__})"


def _after_likelihood_check(method: Callable, what: str) -> Callable:
    """sktime's probabilistic ``method``, after the forecaster's check that it has a
    likelihood (``_check_likelihood``): without one, a ``NotImplementedError`` says what to
    pass. The signature and documentation are sktime's."""
    @functools.wraps(method)
    def checked(self, *args, **kwargs):
        self._check_likelihood(what)
        return method(self, *args, **kwargs)
    return checked


class ReinPatchForecaster(BaseForecaster):
    """ReinPatch: a Transformer over variable-size patches chosen by a policy trained with GRPG.

    Each target column's lookback window of ``input_chunk_length`` steps is cut into
    ``ceil(input_chunk_length / compression_rate)`` contiguous patches by a *patcher*; each
    patch becomes a token, a Transformer encodes the tokens, and a head reading every time step
    from its patch's token (a time-aligned readout) forecasts the horizon. The
    learned patcher is trained by Group Relative Policy Gradient (arXiv 2603.26097): the
    backbone trains on the patcher's decoded (most likely) patching, the one prediction uses;
    ``group_size`` sampled patchings per series are scored against it, and a sample's advantage
    is its reward (negative forecasting loss) minus the decode's. A new learned patcher decodes
    exactly the uniform grid and moves a boundary only where the reward pays for it.

    This forecaster delegates training and prediction to the darts model
    :class:`~reinpatch_forecast.darts.ReinPatchModel`. The model parameters keep their darts
    names (``input_chunk_length`` is the lookback); the darts ``output_chunk_length`` is not a
    parameter: it is the largest step of ``fh`` passed to ``fit`` (or to ``pretrain``).

    The model is channel independent: every column of ``y`` is forecast from its own history by
    one shared network. A panel or hierarchical ``y`` trains one global model on all its series.
    Exogenous ``X`` (optional) is given to every column as covariates (see ``covariates``).

    Parameters
    ----------
    input_chunk_length : int, default=96
        Lookback: the number of past steps the network reads. Every series passed to ``fit``
        needs at least ``input_chunk_length + max(fh)`` steps.
    %(options)s
    batch_size : int, default=32
        Training windows per batch.
    n_epochs : int, default=20
        Training epochs in ``fit``, in ``update`` with ``update_params=True``, and in each
        ``pretrain`` call. ``fit`` holds out no validation data to stop early, so the count
        is fixed; the weight average (``ema_decay``) smooths what the last epochs add.
    learning_rate : float, default=1e-3
        Learning rate of the backbone (darts ``optimizer_kwargs={"lr": ...}``), constant, as
        in the darts model.
    likelihood : str or None, default=None
        ``None`` trains on the MSE and gives point forecasts only; ``"quantile"`` (quantile
        regression on ``quantiles``) or ``"gaussian"`` make the forecaster probabilistic:
        ``predict_interval``, ``predict_quantiles`` and ``predict_var`` are then available
        and ``predict`` returns the median (quantile) or the mean (gaussian).
    quantiles : tuple of float or None, default=None
        Quantile levels of ``likelihood="quantile"`` (0.5 is always added); ``None`` uses darts'
        default levels from 0.01 to 0.99.
    num_samples : int, default=200
        Samples drawn per forecast step for ``predict_quantiles`` / ``predict_interval``.
    covariates : {"future", "past"}, default="future"
        How exogenous ``X`` reaches the network. ``"future"``: ``X`` is known ahead (calendar
        features, planned events), so ``predict`` needs ``X`` at the steps of ``fh`` (a step
        between the cutoff and the last step of ``fh`` that ``X`` does not give takes the last
        known values); the darts model gets it as future covariates. ``"past"``: only the
        history of ``X`` is used (past covariates), so ``X`` in ``predict`` may be left out.
        Every column of ``X`` is a covariate of every column of ``y``.
    random_state : int, RandomState or None, default=None
        Seed of training and sampling. With a seed, ``fit`` then ``predict`` (and the
        probabilistic predictions) are reproducible.
    pl_trainer_kwargs : dict or None, default=None
        Arguments of the PyTorch Lightning ``Trainer``, applied on top of quiet CPU defaults
        (``accelerator="cpu"``, no progress bar, no logger, no model summary); e.g.
        ``{"accelerator": "gpu", "devices": [0]}``.

    Attributes
    ----------
    model_ : _TrainedModel
        Holder of the fitted darts model (``model_.model``); use ``get_fitted_params()["model"]``.
    horizon_ : int
        Steps the network forecasts in one pass (its ``output_chunk_length``).
    pretrained_model_, pretrain_horizon_, n_pretrain_instances_
        Set by ``pretrain``: the pretrained model, its horizon and the number of series seen.

    See Also
    --------
    reinpatch_forecast.darts.ReinPatchModel : the darts model this forecaster delegates to.

    Notes
    -----
    ``update(y, update_params=False)`` only appends the new data: the next forecast reads the
    latest ``input_chunk_length`` steps. ``update_params=True`` also continues training the
    current network on all data seen so far for ``n_epochs`` epochs (a warm start, not a refit).

    ``pretrain(panel, fh=...)`` trains a global model on a panel; a following ``fit(y, fh)``
    fine-tunes a copy of it on ``y`` for ``n_epochs`` epochs. The pretrained network's horizon
    is fixed: ``max(fh)`` in ``fit`` may not exceed the one given to ``pretrain``.

    Examples
    --------
    >>> from sktime.datasets import load_airline
    >>> from reinpatch_forecast import ReinPatchForecaster
    >>> y = load_airline()
    >>> forecaster = ReinPatchForecaster(
    ...     input_chunk_length=24, compression_rate=4, group_size=4, d_model=16, n_heads=2,
    ...     n_layers=1, n_epochs=2, random_state=0,
    ... )
    >>> forecaster.fit(y, fh=[1, 2, 3])
    ReinPatchForecaster(...)
    >>> y_pred = forecaster.predict()
    >>> len(y_pred)
    3
    """

    _tags = {
        # packaging info
        # --------------
        "authors": ["reinpatch_forecast developers"],
        "maintainers": ["reinpatch_forecast developers"],
        "python_dependencies": ["darts>=0.48,<0.49", "torch"],
        # estimator type
        # --------------
        "y_inner_mtype": ["pd.DataFrame", "pd-multiindex", "pd_multiindex_hier"],
        "X_inner_mtype": ["pd.DataFrame", "pd-multiindex", "pd_multiindex_hier"],
        "capability:multivariate": True,
        "capability:exogenous": True,
        "capability:insample": False,
        "capability:pred_int": True,  # set per instance (__dynamic_tags__): with a likelihood
        "capability:pred_int:insample": False,
        "capability:missing_values": False,
        "capability:unequal_length": True,
        "capability:update": True,
        "capability:random_state": True,
        "property:randomness": "derandomized",
        "requires-fh-in-fit": True,
        "fit_is_empty": False,
        # pretraining
        # -----------
        "capability:pretrain": True,
        "pretrain:fitted_params": [
            "pretrained_model_",
            "pretrain_horizon_",
            "n_pretrain_instances_",
        ],
    }

    def __init__(
        self,
        input_chunk_length: int = 96,
        compression_rate: float | tuple[float, float] = ModelOptions.compression_rate,
        levels: int = ModelOptions.levels,
        patcher: Any = ModelOptions.patcher,
        patcher_init: Any = ModelOptions.patcher_init,
        budget: str = ModelOptions.budget,
        d_model: int = ModelOptions.d_model,
        n_heads: int = ModelOptions.n_heads,
        n_layers: int = ModelOptions.n_layers,
        dropout: float = ModelOptions.dropout,
        resample_points: int | None = ModelOptions.resample_points,
        step_width: int | None = ModelOptions.step_width,
        revin_affine: bool = ModelOptions.revin_affine,
        group_size: int = TrainingOptions.group_size,
        scored_share: float = TrainingOptions.scored_share,
        kl_coef: float = TrainingOptions.kl_coef,
        ema_decay: float | None = TrainingOptions.ema_decay,
        patcher_lr: float | None = TrainingOptions.patcher_lr,
        batch_size: int = 32,
        n_epochs: int = 20,
        learning_rate: float = 1e-3,
        likelihood: str | None = None,
        quantiles: Sequence[float] | None = None,
        num_samples: int = 200,
        covariates: str = "future",
        random_state: int | np.random.RandomState | None = None,
        pl_trainer_kwargs: dict | None = None,
    ) -> None:
        self.input_chunk_length = input_chunk_length
        self.compression_rate = compression_rate
        self.levels = levels
        self.patcher = patcher
        self.patcher_init = patcher_init
        self.budget = budget
        self.d_model = d_model
        self.n_heads = n_heads
        self.n_layers = n_layers
        self.dropout = dropout
        self.resample_points = resample_points
        self.step_width = step_width
        self.revin_affine = revin_affine
        self.group_size = group_size
        self.scored_share = scored_share
        self.kl_coef = kl_coef
        self.ema_decay = ema_decay
        self.patcher_lr = patcher_lr
        self.batch_size = batch_size
        self.n_epochs = n_epochs
        self.learning_rate = learning_rate
        self.likelihood = likelihood
        self.quantiles = quantiles
        self.num_samples = num_samples
        self.covariates = covariates
        self.random_state = random_state
        self.pl_trainer_kwargs = pl_trainer_kwargs

        super().__init__()

    def __dynamic_tags__(self) -> None:
        """Probabilistic forecasts (``capability:pred_int``) only with a likelihood."""
        self.set_tags(**{"capability:pred_int": self.likelihood is not None})

    def __post_init__(self) -> None:
        """Validate the parameters early, with messages that say what to change."""
        if self.likelihood not in _LIKELIHOODS:
            raise ReinPatchInputError(
                f"likelihood must be None, 'quantile' or 'gaussian', got {self.likelihood!r}."
            )
        if self.quantiles is not None:
            if self.likelihood != "quantile":
                raise ReinPatchInputError(
                    "quantiles is used only with likelihood='quantile'; got "
                    f"likelihood={self.likelihood!r}. Set likelihood='quantile' or drop quantiles."
                )
            if len(self.quantiles) == 0 or not all(0 < q < 1 for q in self.quantiles):
                raise ReinPatchInputError(
                    f"quantiles must be levels strictly between 0 and 1, got {self.quantiles!r}."
                )
        if not isinstance(self.num_samples, (int, np.integer)) or self.num_samples < 1:
            raise ReinPatchInputError(
                f"num_samples must be a positive integer, got {self.num_samples!r}."
            )
        if self.covariates not in ("future", "past"):
            raise ReinPatchInputError(
                f"covariates must be 'future' (X is known over the forecast horizon) or 'past' "
                f"(only the history of X is used), got {self.covariates!r}."
            )
        if not isinstance(self.n_epochs, (int, np.integer)) or self.n_epochs < 1:
            raise ReinPatchInputError(
                f"n_epochs must be a positive integer, got {self.n_epochs!r}."
            )
        from ..nn import PATCHER_NAMES

        if isinstance(self.patcher, str) and self.patcher in PATCHER_NAMES:
            # the horizon is not known before fit; any valid one checks the other sizes. A
            # pretrained patcher is checked by the darts model at fit.
            model, training = options_from(self.get_params(deep=False))
            build_network_config(model, training, self.input_chunk_length, output_length=1,
                                 patcher_name=self.patcher)

    # -- darts model ------------------------------------------------------------------------
    def _seed(self) -> int | None:
        """An integer seed from ``random_state`` (``None`` stays random)."""
        if self.random_state is None:
            return None
        if isinstance(self.random_state, (int, np.integer)):
            return int(self.random_state)
        from sklearn.utils import check_random_state

        return int(check_random_state(self.random_state).randint(0, 2**31 - 1))

    def _darts_likelihood(self):
        if self.likelihood is None:
            return None
        from darts.utils.likelihood_models.torch import GaussianLikelihood, QuantileRegression

        if self.likelihood == "gaussian":
            return GaussianLikelihood()
        if self.quantiles is None:
            return QuantileRegression()
        return QuantileRegression(quantiles=sorted(set(map(float, self.quantiles)) | {0.5}))

    def _build_model(self, horizon: int):
        """A new (untrained) darts ``ReinPatchModel`` forecasting ``horizon`` steps."""
        from ..darts import ReinPatchModel

        params = self.get_params(deep=False)
        return ReinPatchModel(
            input_chunk_length=self.input_chunk_length,
            output_chunk_length=horizon,
            **{name: params[name] for name in option_names()},
            batch_size=self.batch_size,
            n_epochs=self.n_epochs,
            optimizer_kwargs={"lr": self.learning_rate},
            likelihood=self._darts_likelihood(),
            random_state=self._seed(),
            pl_trainer_kwargs=quiet_trainer_kwargs(**(self.pl_trainer_kwargs or {})),
        )

    def _train_on(self, instances, X: pd.DataFrame | None, horizon: int, purpose: str, model):
        """The pipeline of fit, update and pretrain: check ``instances`` (long enough for the
        lookback plus ``horizon``, complete, finite), then train ``model`` on them and the
        covariates from ``X``. ``purpose`` is ``"training"`` or ``"pretraining"``."""
        check_instances(instances, self.input_chunk_length + horizon, purpose,
                        self.input_chunk_length)
        model.fit(to_darts([frame for _, frame in instances]), verbose=False,
                  **darts_covariates(instances, X, self.covariates, purpose))
        return model

    # -- data conversion ----------------------------------------------------------------------
    def _steps_of(self, fh: ForecastingHorizon, instances) -> list:
        """``(steps ahead, time index)`` of ``fh`` per series; every step must be out of sample."""
        steps = [steps_and_index(fh, frame) for _, frame in instances]
        if min(int(ahead.min()) for ahead, _ in steps) < 1:
            raise ReinPatchInputError(
                f"ReinPatchForecaster forecasts only out of sample, but fh={list(fh)} contains "
                "steps at or before the end of a series. Use steps 1, 2, ... after the cutoff."
            )
        return steps

    def _horizon_of(self, fh: ForecastingHorizon, instances) -> int:
        """The largest step of ``fh`` over all series; every step must be out of sample."""
        return max(int(ahead.max()) for ahead, _ in self._steps_of(fh, instances))

    # sktime 1.2 has no hook before this check, whose errors name no column or fix: ours run first
    def _check_X_y(self, X=None, y=None, **kwargs):
        check_pandas_input(y, "y")
        check_pandas_input(X, "X")
        return super()._check_X_y(X=X, y=y, **kwargs)

    # -- fit / predict -------------------------------------------------------------------------
    def _fit(self, y: pd.DataFrame, X: pd.DataFrame | None = None, fh=None):
        """Train the darts model on ``y`` (or fine-tune the pretrained one).

        Parameters
        ----------
        y : pd.DataFrame
            One series, or a panel / hierarchy (row MultiIndex) trained as one global model.
        X : pd.DataFrame or None
            Exogenous data with the time index of ``y``: covariates of every column of ``y``.
        fh : ForecastingHorizon
            Its largest step is the network's horizon.

        Returns
        -------
        self : reference to self
        """
        self._cur_y, self._cur_X = y, X
        instances = split_instances(y)
        horizon = self._horizon_of(fh, instances)
        if hasattr(self, "pretrained_model_"):
            check_reach(horizon, self.pretrain_horizon_, pretrained=True)
            model = copy.deepcopy(self.pretrained_model_).model
            horizon = self.pretrain_horizon_
        else:
            model = self._build_model(horizon)
        self.model_ = _TrainedModel(self._train_on(instances, X, horizon, "training", model))
        self.horizon_ = horizon
        self._sampling_seed = self._seed()
        return self

    def _update(self, y: pd.DataFrame, X: pd.DataFrame | None = None, update_params: bool = True):
        """Append ``y`` to the data seen; with ``update_params``, continue training on it all.

        Parameters
        ----------
        y : pd.DataFrame
            New observations, in the format of ``fit``.
        X : pd.DataFrame or None
            The exogenous data of the new observations (needed when ``fit`` had ``X``).
        update_params : bool, default=True
            Continue training the network for ``n_epochs`` epochs on all data seen so far.
            With ``False`` the weights stay; forecasts read the latest lookback window.

        Returns
        -------
        self : reference to self
        """
        from sktime.datatypes import update_data

        self._cur_y = update_data(self._cur_y, y)
        if self._cur_X is not None and X is not None:
            self._cur_X = update_data(self._cur_X, X)
        if update_params:
            self._train_on(split_instances(self._cur_y), self._cur_X, self.horizon_, "training",
                           self.model_.model)
        return self

    def _forecast_plan(self, fh: ForecastingHorizon):
        """The series to predict from, their steps and time indices, and the steps to predict."""
        instances = split_instances(self._cur_y)
        check_instances(instances, self.input_chunk_length, "forecasting",
                        self.input_chunk_length, read_steps=self.input_chunk_length)
        plans = [(key, frame, *steps) for (key, frame), steps
                 in zip(instances, self._steps_of(fh, instances))]
        n = max(int(steps.max()) for _, _, steps, _ in plans)
        check_reach(n, self.horizon_, pretrained=False)
        return plans, n

    def _darts_predict(self, n: int, plans, X: pd.DataFrame | None, **kwargs) -> list:
        model = self.model_.model
        instances = [(key, frame) for key, frame, _, _ in plans]
        series = to_darts([frame for _, frame in instances], tail=self.input_chunk_length)
        if self._cur_X is not None and self.covariates == "future" and X is None:
            raise ReinPatchInputError(
                "This forecaster was fitted with X as future covariates (covariates='future'), "
                "so predict needs X at the steps of fh. Pass X, or use covariates='past'."
            )
        covariates = darts_covariates(instances, self._cur_X, self.covariates, "a forecast",
                                      lookback=self.input_chunk_length, n=n, X_ahead=X,
                                      fh=self._fh)
        return model.predict(n, series=series, verbose=False, **covariates, **kwargs)

    def _predict(self, fh: ForecastingHorizon, X: pd.DataFrame | None = None) -> pd.DataFrame:
        """Point forecast: the mean forecast, or the median / mean of the likelihood.

        Parameters
        ----------
        fh : ForecastingHorizon
            Steps to forecast, out of sample, at most ``horizon_`` steps ahead.
        X : pd.DataFrame or None
            Exogenous data at the steps of ``fh`` (with ``covariates="future"``).

        Returns
        -------
        y_pred : pd.DataFrame
            Forecasts at ``fh``, with the columns of ``y``.
        """
        plans, n = self._forecast_plan(fh)
        if self.likelihood is None:
            predictions = self._darts_predict(n, plans, X)
            location = 0
        else:
            # the likelihood's location parameter: deterministic, unlike one sample
            predictions = self._darts_predict(n, plans, X, predict_likelihood_parameters=True)
            model_likelihood = self.model_.model.likelihood
            quantiles = getattr(model_likelihood, "quantiles", None)
            location = quantiles.index(0.5) if quantiles is not None else 0
        values = np.stack([p.values(copy=False)[:, location] for p in predictions], axis=1)
        return forecast_frame(plans, values, self._cur_y.columns, self._cur_y.index.names)

    def _predict_quantiles(
        self, fh: ForecastingHorizon, X: pd.DataFrame | None, alpha: list[float]
    ) -> pd.DataFrame:
        """Quantile forecasts, from ``num_samples`` samples of the likelihood.

        Parameters
        ----------
        fh : ForecastingHorizon
            Steps to forecast, out of sample, at most ``horizon_`` steps ahead.
        X : pd.DataFrame or None
            Exogenous data at the steps of ``fh`` (with ``covariates="future"``).
        alpha : list of float
            Quantile levels.

        Returns
        -------
        quantiles : pd.DataFrame
            Columns ``(variable, alpha)``, rows as in ``predict``.
        """
        plans, n = self._forecast_plan(fh)
        samples = self._darts_predict(
            n, plans, X, num_samples=self.num_samples, random_state=self._sampling_seed
        )
        values = np.stack([s.all_values(copy=False)[:, 0, :] for s in samples], axis=1)  # (n,S*C,K)
        levels = np.quantile(values, alpha, axis=-1)  # (A, n, S*C)
        levels = np.moveaxis(levels, 0, -1)  # (n, S*C, A)
        columns = pd.MultiIndex.from_product([self._cur_y.columns, alpha])
        return forecast_frame(plans, levels, columns, self._cur_y.index.names)

    # -- probabilistic forecasts without a likelihood ---------------------------------------
    # sktime 1.2 raises "does not have the capability ... open an issue on sktime" in these four
    # methods before any extension point runs: ours names the argument to pass, then sktime's runs
    predict_interval = _after_likelihood_check(BaseForecaster.predict_interval,
                                               "prediction intervals")
    predict_quantiles = _after_likelihood_check(BaseForecaster.predict_quantiles,
                                                "quantile predictions")
    predict_var = _after_likelihood_check(BaseForecaster.predict_var, "variance predictions")
    predict_proba = _after_likelihood_check(BaseForecaster.predict_proba,
                                            "fully probabilistic predictions")

    def _check_likelihood(self, what: str) -> None:
        """Raise sktime's ``NotImplementedError`` for ``what``, saying which likelihood to pass,
        when the forecaster has none (its ``capability:pred_int`` tag is then ``False``)."""
        if self.likelihood is None:
            raise NotImplementedError(
                f"ReinPatchForecaster with likelihood=None does not have the capability to "
                f"return {what}: it trains on the MSE and gives point forecasts only. Pass a "
                "likelihood and fit again: likelihood='quantile' (quantile regression; "
                "`quantiles` sets its levels) or likelihood='gaussian', e.g. "
                "ReinPatchForecaster(likelihood='quantile')."
            )

    # -- pretraining --------------------------------------------------------------------------
    def _pretrain(self, y: pd.DataFrame, X: pd.DataFrame | None = None, fh=None):
        """Train a global model on a panel, to be fine-tuned by ``fit``.

        Parameters
        ----------
        y : pd.DataFrame
            Panel or hierarchical data (row MultiIndex).
        X : pd.DataFrame or None
            Exogenous data of the panel; a forecaster pretrained with ``X`` is fitted with it.
        fh : ForecastingHorizon
            Required on the first call: its largest step fixes the network's horizon.

        Returns
        -------
        self : reference to self
        """
        if fh is None:
            raise ReinPatchInputError(
                "pretrain needs fh: its largest step is the horizon of the pretrained network, "
                "e.g. pretrain(y_panel, fh=[1, 2, 3])."
            )
        instances = split_instances(y)
        horizon = self._pretrain_horizon(fh, y, instances)
        model = self._build_model(horizon)
        self.pretrained_model_ = _TrainedModel(
            self._train_on(instances, X, horizon, "pretraining", model))
        self.pretrain_horizon_ = horizon
        self.n_pretrain_instances_ = len(instances)
        return self

    def _pretrain_update(self, y: pd.DataFrame, X: pd.DataFrame | None = None, fh=None):
        """Continue pretraining on more panel data (the horizon stays)."""
        if not hasattr(self, "pretrained_model_"):
            return self._pretrain(y=y, X=X, fh=fh)
        instances = split_instances(y)
        if fh is not None:
            check_reach(self._pretrain_horizon(fh, y, instances), self.pretrain_horizon_,
                        pretrained=True)
        model = copy.deepcopy(self.pretrained_model_).model
        self.pretrained_model_ = _TrainedModel(
            self._train_on(instances, X, self.pretrain_horizon_, "pretraining", model))
        self.n_pretrain_instances_ += len(instances)
        return self

    def _pretrain_horizon(self, fh, y: pd.DataFrame, instances) -> int:
        if not isinstance(fh, ForecastingHorizon):
            fh = ForecastingHorizon(fh)
        if not fh.is_relative:
            from sktime.datatypes import get_cutoff
            from sktime.utils.validation.forecasting import check_fh

            fh = check_fh(fh, freq=get_cutoff(y, return_index=True))
        return self._horizon_of(fh, instances)

    # -- fitted parameters and tests ------------------------------------------------------------
    def _get_fitted_params(self) -> dict[str, Any]:
        """Fitted parameters.

        Returns
        -------
        dict
            ``model``: the fitted darts :class:`~reinpatch_forecast.darts.ReinPatchModel` (e.g.
            for ``patch_boundaries``); ``horizon``: steps forecast in one pass;
            ``n_series``: univariate series trained on (columns x instances).
        """
        return {
            "model": self.model_.model,
            "horizon": self.horizon_,
            "n_series": len(split_instances(self._cur_y)) * self._cur_y.shape[1],
        }

    @classmethod
    def get_test_params(cls, parameter_set: str = "default") -> list[dict[str, Any]]:
        """Return testing parameter settings for the estimator.

        Parameters
        ----------
        parameter_set : str, default="default"
            Name of the set of test parameters to return, for use in tests.

        Returns
        -------
        params : list of dict
            Two tiny configurations (one epoch of one batch, lookback 6) for sktime's shortest
            test series (10 steps, horizon up to 3), covering both patcher kinds, both kinds
            of forecast and both ways ``X`` reaches the network: a quantile forecaster with the
            uniform patcher and future ``X``, a point forecaster with the learned patcher
            (GRPG groups of 2) and past ``X``.
        """
        tiny = {
            "input_chunk_length": 6,
            "d_model": 8,
            "n_heads": 1,
            "n_layers": 1,
            "n_epochs": 1,
            "batch_size": 64,
            "resample_points": 4,
        }
        return [
            {
                **tiny,
                "patcher": "uniform",
                "compression_rate": 2,
                "likelihood": "quantile",
                "quantiles": (0.1, 0.5, 0.9),
                "num_samples": 50,
            },
            {
                **tiny,
                "patcher": "learned",
                "compression_rate": 3,
                "group_size": 2,
                "kl_coef": 0.2,
                "covariates": "past",
            },
        ]


ReinPatchForecaster.__doc__ = document_options(ReinPatchForecaster.__doc__, types=True)
