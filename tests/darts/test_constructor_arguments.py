"""Constructor errors name the user's arguments (``input_chunk_length``, ...), not the
network's (``input_length``, ...), and refuse early what would train wrongly."""

from __future__ import annotations

import pytest

from reinpatch_forecast import ReinPatchModel

LENGTHS = dict(input_chunk_length=24, output_chunk_length=6)


def _message(**arguments) -> str:
    with pytest.raises(ValueError) as raised:
        ReinPatchModel(**{**LENGTHS, **arguments})
    message = str(raised.value)
    assert "input_length" not in message and "output_length" not in message, message
    return message


def test_a_lookback_range_says_why_reinpatch_needs_one_lookback():
    message = _message(input_chunk_length=(12, 24))
    assert "input_chunk_length=(12, 24)" in message
    assert "fixed lookback" in message
    assert "N = ceil(L / compression_rate)" in message


def test_a_horizon_range_is_refused_with_the_users_name():
    message = _message(output_chunk_length=[3, 6])
    assert "output_chunk_length=[3, 6]" in message and "fixed horizon" in message


@pytest.mark.parametrize("value", [0, 1, 24.5, "24", True])
def test_a_bad_lookback_names_input_chunk_length(value):
    message = _message(input_chunk_length=value)
    assert message.startswith("input_chunk_length must be an integer >= 2"), message
    assert repr(value) in message


@pytest.mark.parametrize("value", [0, 2.5])
def test_a_bad_horizon_names_output_chunk_length(value):
    assert _message(output_chunk_length=value).startswith("output_chunk_length must be")


def test_a_lookback_shorter_than_a_patch_names_input_chunk_length():
    message = _message(input_chunk_length=3, compression_rate=8)
    assert "input_chunk_length=3" in message and "compression_rate <= 3" in message


@pytest.mark.parametrize("arguments, name", [
    (dict(output_chunk_shift=-1), "output_chunk_shift"),
    (dict(output_chunk_shift=1.5), "output_chunk_shift"),
    (dict(patcher_lr=-1.0), "patcher_lr"),
    (dict(patcher_lr=float("nan")), "patcher_lr"),
    (dict(revin_affine="yes"), "revin_affine"),
])
def test_arguments_that_would_train_silently_wrong_are_refused(arguments, name):
    assert _message(**arguments).startswith(f"{name} must be")


def test_the_sktime_forecaster_names_input_chunk_length_too():
    from reinpatch_forecast.sktime import ReinPatchForecaster

    with pytest.raises(ValueError, match=r"input_chunk_length=\(12, 24\) is a range"):
        ReinPatchForecaster(input_chunk_length=(12, 24))


@pytest.mark.parametrize("arguments", [dict(patcher_lr=0.0), dict(patcher_lr=None),
                                       dict(output_chunk_shift=2), dict(revin_affine=True)])
def test_valid_values_are_accepted(arguments):
    ReinPatchModel(**LENGTHS, **arguments)


@pytest.mark.parametrize("arguments", [dict(readout="profile"), dict(policy="topk"),
                                       dict(patcher_warmup=1), dict(kl_schedule="linear")])
def test_the_archived_ablations_are_no_arguments_of_the_model(arguments):
    """Other readouts, policies and schedules were benchmark ablations, now archived with
    their tables (``benchmarks/results/archive/ablations``); the model refuses them."""
    with pytest.raises(ValueError, match=next(iter(arguments))):
        ReinPatchModel(**LENGTHS, **arguments)
