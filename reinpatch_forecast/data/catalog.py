"""The datasets this package knows by name: the five LTSF series and two event-rich ones.

The five long-term-forecasting (LTSF) datasets (ETTh1, ETTh2, ETTm1, ETTm2, weather) and two
event-rich series (``EPF_FR_BE``: Belgian and French day-ahead electricity prices;
``vic_elec``: Victoria's half-hourly electricity demand), with their split families and, for the
event-rich ones, which columns are targets and which are covariates (:data:`EVENT_DATASETS`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from ..errors import ReinPatchInputError

#: Environment variable naming the folder that holds ``NAME.csv.gz`` / ``NAME.csv``.
DATA_DIR_ENV_VAR = "REINPATCH_DATA_DIR"

#: Dataset name -> split family (``"ETTh"``, ``"ETTm"`` or ``"custom"``).
LTSF_DATASETS: Mapping[str, str] = MappingProxyType(
    {
        "ETTh1": "ETTh",
        "ETTh2": "ETTh",
        "ETTm1": "ETTm",
        "ETTm2": "ETTm",
        "weather": "custom",
        "EPF_FR_BE": "custom",
        "vic_elec": "custom",
    }
)


@dataclass(frozen=True)
class EventDataset:
    """The column roles of an event-rich dataset (one of :data:`EVENT_DATASETS`).

    The file itself is read by :func:`load_ltsf_frame` like an LTSF file (every column except
    ``date``, as float64, in file order, the targets last) and split by the ``custom``
    (70/10/20) rule; these roles say which of its columns to forecast and which are covariates.

    Attributes
    ----------
    name
        The dataset name (the file is ``NAME.csv.gz`` or ``NAME.csv`` in the data folder).
    step
        The spacing of the rows as a pandas offset alias (``"1h"``, ``"30min"``); the files
        have no gap and no repeated timestamp.
    target_columns
        The columns to forecast, in file order: pass them as ``target_columns`` to
        :func:`prepare_ltsf`.
    future_covariates
        Columns known in advance over the forecast horizon (forecasts, calendar flags).
    past_covariates
        Columns observed only up to the forecast origin.

    Raises
    ------
    ValueError
        No target column, or a column named in two roles.
    """

    name: str
    step: str
    target_columns: tuple[str, ...]
    future_covariates: tuple[str, ...] = ()
    past_covariates: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for field_name in ("target_columns", "future_covariates", "past_covariates"):
            value = getattr(self, field_name)
            if isinstance(value, str):
                raise ReinPatchInputError(
                    f"EventDataset {self.name!r}: {field_name} must be a sequence of column "
                    f"names, got the string {value!r}; write ({value!r},)."
                )
            object.__setattr__(self, field_name, tuple(str(c) for c in value))
        if not self.target_columns:
            raise ReinPatchInputError(
                f"EventDataset {self.name!r} needs at least one target column."
            )
        roles = self.target_columns + self.future_covariates + self.past_covariates
        repeated = sorted({c for c in roles if roles.count(c) > 1})
        if repeated:
            raise ReinPatchInputError(
                f"EventDataset {self.name!r}: column(s) {repeated} are named more than once "
                "across target_columns, future_covariates and past_covariates; give each "
                "column one role."
            )

    @property
    def covariates(self) -> tuple[str, ...]:
        """The future covariates, then the past ones."""
        return self.future_covariates + self.past_covariates


#: Event-rich dataset name -> its column roles (both are also in :data:`LTSF_DATASETS`, family
#: ``"custom"``). ``EPF_FR_BE``: hourly day-ahead prices (EUR/MWh) of Belgium and France, with
#: France's day-ahead generation and system-load forecasts. ``vic_elec``: half-hourly demand
#: (MWh) of Victoria, Australia, with Melbourne's temperature and a public-holiday flag (0/1);
#: its dates are UTC (read as naive UTC, see :func:`load_ltsf_frame`), so local calendar
#: features need ``index.tz_localize("UTC").tz_convert("Australia/Melbourne")``.
EVENT_DATASETS: Mapping[str, EventDataset] = MappingProxyType(
    {
        "EPF_FR_BE": EventDataset(
            name="EPF_FR_BE",
            step="1h",
            target_columns=("BE_price", "FR_price"),
            future_covariates=("gen_forecast", "system_load"),
        ),
        "vic_elec": EventDataset(
            name="vic_elec",
            step="30min",
            target_columns=("demand",),
            future_covariates=("holiday",),
            past_covariates=("temperature",),
        ),
    }
)

#: The split families of the standard protocol.
LTSF_FAMILIES: tuple[str, ...] = ("ETTh", "ETTm", "custom")

#: The standard forecast horizons.
LTSF_HORIZONS: tuple[int, ...] = (96, 192, 336, 720)
