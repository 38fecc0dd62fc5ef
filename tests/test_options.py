"""One parameter schema: every option reaches every face, with one default."""

from __future__ import annotations

import inspect
from dataclasses import MISSING, fields

import pytest

from reinpatch_forecast import ReinPatchForecaster, ReinPatchModel
from reinpatch_forecast.cli import build_parser
from reinpatch_forecast.options import (
    OPTION_CLASSES,
    ROOT,
    ModelOptions,
    TrainingOptions,
    build_network_config,
    option_names,
    options_from,
)

#: darts parameters the sktime forecaster sets another way, and why.
SKTIME_DERIVES = {
    "output_chunk_length": "the largest step of fh in fit",
    "output_chunk_shift": "fh may start later than one step ahead",
    "use_static_covariates": "sktime data has no static covariates",
}
#: darts TorchForecastingModel arguments the forecaster exposes under an sktime name.
SKTIME_NAMES = {"optimizer_kwargs": "learning_rate"}


def _defaults() -> dict:
    return {f.name: f.default for cls in OPTION_CLASSES for f in fields(cls)
            if f.default is not MISSING}


def _parameters(cls) -> dict[str, inspect.Parameter]:
    return dict(inspect.signature(cls.__init__).parameters)


def test_every_option_has_a_default_documentation_and_a_flag_type():
    for cls in OPTION_CLASSES:
        for f in fields(cls):
            assert f.default is not MISSING, f.name
            assert f.metadata["help"] and f.metadata["type_doc"], f.name
            assert "section" in f.metadata, f"{f.name} does not say where it lands"


@pytest.mark.parametrize("face", [ReinPatchModel, ReinPatchForecaster])
def test_each_face_takes_every_option_with_its_default(face):
    parameters = _parameters(face)
    for name, default in _defaults().items():
        assert name in parameters, f"{face.__name__} lacks the option {name}"
        assert parameters[name].default == default, (face.__name__, name)
        assert f"\n    {name}" in face.__doc__, f"{face.__name__} does not document {name}"


def test_sktime_forecaster_covers_the_darts_model_parameters():
    darts_params = {name for name, p in _parameters(ReinPatchModel).items()
                    if name != "self" and p.kind is not p.VAR_KEYWORD}
    sktime_params = set(_parameters(ReinPatchForecaster)) - {"self"}
    missing = darts_params - sktime_params - set(SKTIME_DERIVES)
    assert not missing, f"ReinPatchForecaster lacks {sorted(missing)}"
    # darts' own TorchForecastingModel arguments that the forecaster forwards
    for darts_name in ("batch_size", "n_epochs", "likelihood", "random_state",
                       "pl_trainer_kwargs", "optimizer_kwargs"):
        assert SKTIME_NAMES.get(darts_name, darts_name) in sktime_params, darts_name


def test_cli_fit_has_a_flag_per_option_with_its_default():
    fit = build_parser()._subparsers._group_actions[0].choices["fit"]
    actions = {action.dest: action for action in fit._actions}
    for name, default in _defaults().items():
        assert name in actions, f"reinpatch-forecast fit lacks --{name.replace('_', '-')}"
        assert actions[name].default == default, name


def test_cli_flags_parse_into_the_options():
    args = build_parser().parse_args([
        "fit", "--csv", "x.csv", "--target", "OT", "--lookback", "48", "--horizon", "12",
        "--out", "m.pt", "--compression-rate", "4,2", "--levels", "2", "--revin-affine",
        "--group-size", "2", "--kl-coef", "0", "--patcher-lr", "0.01", "--dropout", "0.3",
    ])
    model, training = options_from(vars(args))
    assert model == ModelOptions(compression_rate=(4.0, 2.0), levels=2, revin_affine=True,
                                 dropout=0.3)
    assert training == TrainingOptions(group_size=2, kl_coef=0.0, patcher_lr=0.01)


def test_cli_boolean_flags_switch_either_way():
    """Every boolean option has --flag and --no-flag, whatever its default."""
    base = ["fit", "--csv", "x.csv", "--target", "OT", "--lookback", "48", "--horizon", "12",
            "--out", "m.pt"]
    for name, default in _defaults().items():
        if not isinstance(default, bool):
            continue
        flag = name.replace("_", "-")
        assert getattr(build_parser().parse_args(base + [f"--{flag}"]), name) is True
        assert getattr(build_parser().parse_args(base + [f"--no-{flag}"]), name) is False


def test_bad_option_flags_are_usage_errors(capsys):
    for flag, value in (("--group-size", "0"), ("--dropout", "1.5"),
                        ("--compression-rate", "4,2,2"), ("--levels", "3")):
        with pytest.raises(SystemExit) as exit_:
            build_parser().parse_args(["fit", "--csv", "x", "--target", "OT", "--lookback",
                                       "8", "--horizon", "2", "--out", "m", flag, value])
        assert exit_.value.code == 2, flag
    assert "error" in capsys.readouterr().err


def test_the_forecaster_forwards_its_options_to_the_darts_model():
    forecaster = ReinPatchForecaster(input_chunk_length=24, compression_rate=(4, 2), levels=2,
                                     d_model=16, n_heads=2, group_size=2, kl_coef=0.3,
                                     patcher_lr=0.02, revin_affine=True, dropout=0.05)
    model = forecaster._build_model(horizon=6)
    expected = {name: forecaster.get_params()[name] for name in option_names()}
    assert options_from(expected) == (model.options, model.training_options)
    assert model.network_config.n_coarse_patches == 3  # ceil(ceil(24 / 4) / 2)


def test_the_network_config_defaults_equal_the_options_defaults():
    """``nn`` sits below the options (pure PyTorch), so it keeps its own defaults: equal."""
    from reinpatch_forecast.nn import (BackboneConfig, PatcherConfig, ReinPatchConfig,
                                       TrainingConfig)

    network_fields = {}
    for cls in (ReinPatchConfig, BackboneConfig, TrainingConfig):
        network_fields.update({f.name: f.default for f in fields(cls)
                               if f.default is not MISSING})
    shared = set(network_fields) & set(_defaults())
    assert {"compression_rate", "group_size", "kl_coef", "d_model", "dropout",
            "resample_points", "revin_affine", "budget", "levels"} <= shared
    for name in shared:
        assert network_fields[name] == _defaults()[name], name
    assert PatcherConfig().name == _defaults()["patcher"]


def test_a_nested_config_round_trips_through_plain_values():
    """darts stores the network's configuration as plain nested values in checkpoints."""
    from reinpatch_forecast.nn import ReinPatchConfig

    config = ReinPatchConfig(input_length=48, output_length=8, compression_rate=(4, 2),
                             levels=2, nr_params=2, backbone=dict(d_model=16, n_heads=2),
                             patcher=dict(name="learned", density_sigma=1.0),
                             training=dict(group_size=3))
    values = config.to_dict()
    assert isinstance(values["backbone"], dict) and values["patcher"]["density_sigma"] == 1.0
    assert ReinPatchConfig(**values) == config
    assert ReinPatchConfig(**values).backbone.resample_points == 4  # ceil(R1), resolved once
    assert len(fields(ReinPatchConfig)) <= 20


#: A value other than the default for every option with a section of the network's
#: configuration, and the other options such a value needs.
OTHER_VALUES = {
    "compression_rate": (4, {}), "levels": (2, {"compression_rate": (4, 2)}),
    "budget": ("at_most", {}), "d_model": (32, {"n_heads": 2}), "n_heads": (2, {}),
    "n_layers": (3, {}), "dropout": (0.3, {}), "resample_points": (3, {}),
    "step_width": (2, {}), "revin_affine": (True, {}), "group_size": (3, {}),
    "scored_share": (0.5, {}), "kl_coef": (0.3, {}),
}
#: The options that are not in the network's configuration, and where they go instead.
RESOLVED_BY_THE_FACES = {
    "patcher": "the patcher's name (PatcherConfig.name) and, for an object or file, its weights",
    "patcher_init": "the learned patcher's starting weights",
    "patcher_lr": "the Lightning module's optimizer (a parameter group)",
    "ema_decay": "a weight-averaging callback of the trainer",
}


@pytest.mark.parametrize("f", [f for cls in OPTION_CLASSES for f in fields(cls)],
                         ids=lambda f: f.name)
def test_every_option_reaches_the_config_field_its_declaration_names(f):
    section = f.metadata["section"]
    if section is None:
        assert f.name in RESOLVED_BY_THE_FACES, f"{f.name} reaches no configuration field"
        return
    value, needs = OTHER_VALUES[f.name]
    assert value != f.default, f.name
    model, training = options_from({**needs, f.name: value})
    config = build_network_config(model, training, 24, 6, patcher_name="learned")
    holder = config if section == ROOT else getattr(config, section)
    assert getattr(holder, f.name) == (tuple(value) if isinstance(value, tuple) else value)
