"""The demo's pieces: the learned-vs-uniform finding, the grid title, the spike task.

The end-to-end run of ``reinpatch-forecast demo`` is in ``test_cli.py``; that the learned
patcher wins the spike task is checked at full size in ``tests/nn/test_grpg_learns.py``.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest
import torch

from reinpatch_forecast.cli.demo import (DemoResult, grid_title, learned_vs_uniform,
                                         run_spike_task, spike_batch, spike_boundaries,
                                         spike_finding)
from reinpatch_forecast.darts import PatchBoundaries
from reinpatch_forecast.nn import ReinPatchNetwork, uniform_starts


def _scores(learned_mse: float, uniform_mse: float, learned_s: float = 30.0,
            uniform_s: float = 10.0) -> list[DemoResult]:
    return [DemoResult("ReinPatch (learned)", learned_mse, 0.5, learned_s, None, "learned"),
            DemoResult("uniform patches", uniform_mse, 0.5, uniform_s, None, "uniform"),
            DemoResult("NaiveSeasonal (K=24)", 1.0, 0.8, 0.1, None)]


@pytest.mark.parametrize("learned, verdict", [(0.405, "ties with"), (0.40, "beats"),
                                              (0.44, "loses to")])
def test_learned_vs_uniform_states_what_the_scores_say(learned, verdict):
    line = learned_vs_uniform(_scores(learned, 0.41))
    assert f"the learned patcher {verdict} uniform patches" in line
    assert f"MSE {learned:.4f} vs 0.4100" in line
    assert "took 3.0x uniform's fit time" in line


def _boundaries(starts: np.ndarray) -> PatchBoundaries:
    length = 24
    return PatchBoundaries(pd.RangeIndex(length), np.zeros((length, len(starts))),
                           np.asarray(starts), [f"c{i}" for i in range(len(starts))])


def test_grid_title_says_when_the_starts_are_the_uniform_grid():
    grid = uniform_starts(24, 4).numpy()
    assert grid_title([_boundaries(np.stack([grid, grid]))] * 3, "ETTh1") == \
        "Learned patcher on ETTh1: decodes the uniform grid"
    moved = grid.copy()
    moved[1] += 2
    title = grid_title([_boundaries(np.stack([grid, moved]))], "ETTh1")
    # one start of eight is off the grid, by two steps
    assert title == ("Learned patcher on ETTh1: 88% of the starts on the uniform grid, "
                     "mean shift 0.25 steps")


def test_spike_batch_puts_one_spike_whose_amplitude_is_the_target():
    x, y, position = spike_batch(16, torch.Generator().manual_seed(0))
    assert x.shape == (16, 96, 1) and y.shape == (16, 8, 1) and position.shape == (16,)
    spike = x[torch.arange(16), position, 0]
    assert torch.all(y[:, 0, 0] == y[:, -1, 0])
    # the window's value at the spike is the amplitude plus noise of sigma 0.3
    assert torch.all((spike - y[:, 0, 0]).abs() < 1.5)


def test_spike_task_runs_at_a_tiny_size_and_is_reproducible():
    first, again = (run_spike_task("learned", steps=2, n_test=64, n_shown=3) for _ in range(2))
    uniform = run_spike_task("uniform", steps=2, n_test=64)
    assert first.mse == again.mse and np.array_equal(first.starts, again.starts)
    assert first.windows.shape == (3, 96) and first.starts.shape == (3, 8)
    assert 0.0 <= first.near_spike <= 1.0
    # the uniform patcher cuts the same grid in every window
    assert np.array_equal(uniform.starts, np.tile(uniform_starts(96, 8).numpy(), (3, 1)))
    boundaries = spike_boundaries(first)
    assert boundaries.values.shape == (96, 3)
    assert boundaries.components == [f"spike at t = {p}" for p in first.positions]
    line = spike_finding(first, uniform)
    assert f"MSE {first.mse:.3f} vs {uniform.mse:.3f}" in line


def test_the_spike_task_trains_through_the_public_training_loss(monkeypatch):
    """The demo's steps minimise ``TrainingLosses.loss``, the loss the darts model trains on:
    with that loss's gradient zeroed (its parts untouched), training changes nothing."""
    untrained = run_spike_task("learned", steps=0, n_test=64)
    trained = run_spike_task("learned", steps=2, n_test=64)
    training_losses = ReinPatchNetwork.training_losses

    def without_gradient(self, *args, **kwargs):
        losses = training_losses(self, *args, **kwargs)
        return dataclasses.replace(losses, loss=losses.loss * 0)

    monkeypatch.setattr(ReinPatchNetwork, "training_losses", without_gradient)
    frozen = run_spike_task("learned", steps=2, n_test=64)
    assert trained.mse != untrained.mse
    assert frozen.mse == untrained.mse


def test_the_spike_task_uses_the_shipped_patcher_frozen(monkeypatch):
    """``patcher="pretrained"``: the foundation patcher decodes, only the backbone trains."""
    from reinpatch_forecast.cli import demo
    from reinpatch_forecast.patcher_io import load_pretrained_patcher

    built = []
    spike_network = demo.spike_network
    monkeypatch.setattr(demo, "spike_network",
                        lambda *args, **kwargs: built.append(spike_network(*args, **kwargs))
                        or built[-1])
    result = run_spike_task("pretrained", steps=2, n_test=64)
    network = built[0]
    assert not network.trains_patcher and network.patcher_parameters() == []
    shipped = load_pretrained_patcher().state_dict()
    assert all(torch.equal(value, shipped[name])
               for name, value in network.patcher.state_dict().items())
    x, _, _ = spike_batch(8, torch.Generator().manual_seed(3))
    decoded = load_pretrained_patcher().decode_starts(x[..., 0], 8)[0][:, 0]
    assert torch.equal(network.boundaries(x)[:, 0], decoded)
    assert np.isfinite(result.mse)


def test_the_spike_task_starts_grpg_from_the_shipped_patcher(monkeypatch):
    """``patcher_init="pretrained"``: the learned patcher starts from the shipped weights and
    policy settings, and GRPG trains it."""
    from reinpatch_forecast.cli import demo
    from reinpatch_forecast.patcher_io import load_pretrained_patcher

    built = []
    spike_network = demo.spike_network
    monkeypatch.setattr(demo, "spike_network",
                        lambda *args, **kwargs: built.append(spike_network(*args, **kwargs))
                        or built[-1])
    shipped = load_pretrained_patcher()
    start = {name: value.clone() for name, value in shipped.state_dict().items()}
    result = run_spike_task("learned", steps=3, n_test=64, patcher_init="pretrained")
    network = built[0]
    assert network.trains_patcher and network.patcher_parameters()
    assert network.patcher.config() == shipped.config()
    moved = [name for name, value in network.patcher.state_dict().items()
             if not torch.equal(value, start[name])]
    assert moved and np.isfinite(result.mse)


@pytest.mark.parametrize("patcher", ["uniform", "pretrained"])
def test_the_spike_task_refuses_a_start_for_a_patcher_that_does_not_learn(patcher):
    with pytest.raises(ValueError, match="patcher_init"):
        run_spike_task(patcher, steps=1, n_test=8, patcher_init="pretrained")


def test_a_frozen_patcher_that_keeps_the_grid_trains_the_spike_task_as_uniform(monkeypatch):
    """Loading the patcher leaves the global generator alone: with a patcher that decodes the
    grid (a new one), the backbone sees the windows and initial weights of uniform patches."""
    from reinpatch_forecast.cli import demo
    from reinpatch_forecast.nn import LearnedPatcher

    monkeypatch.setattr(demo, "load_pretrained_patcher", lambda: LearnedPatcher())
    frozen = run_spike_task("pretrained", steps=3, n_test=64)
    uniform = run_spike_task("uniform", steps=3, n_test=64)
    assert frozen.mse == uniform.mse
