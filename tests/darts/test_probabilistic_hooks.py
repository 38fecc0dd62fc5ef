"""darts' probabilistic hooks as darts defines them: likelihood parameters only with a
likelihood, and Monte-Carlo dropout samples (``mc_dropout=True``) without one."""

from __future__ import annotations

import numpy as np
import pytest
from darts.utils.likelihood_models import GaussianLikelihood, QuantileRegression
from darts.utils.torch import MonteCarloDropout
from support import TINY_DARTS

from reinpatch_forecast import ReinPatchModel
from reinpatch_forecast.nn.backbone import GroupDropout

LIKELIHOODS = {
    "gaussian": lambda: GaussianLikelihood(),
    "quantile": lambda: QuantileRegression([0.1, 0.5, 0.9]),
}


def _distinct(samples: np.ndarray) -> int:
    """Distinct samples of ``(T, C, S)`` values."""
    return len({samples[..., s].tobytes() for s in range(samples.shape[-1])})


@pytest.mark.parametrize("name", sorted(LIKELIHOODS))
def test_likelihood_parameters_with_a_likelihood(make_model, series, name):
    likelihood = LIKELIHOODS[name]()
    model = make_model(TINY_DARTS, likelihood=likelihood)
    assert model.supports_likelihood_parameter_prediction  # before fit: from the parameters
    model.fit(series)
    assert model.supports_likelihood_parameter_prediction
    assert model.supports_probabilistic_prediction
    parameters = model.predict(3, predict_likelihood_parameters=True)
    assert list(parameters.components) == likelihood.component_names(series)
    assert parameters.n_samples == 1 and np.isfinite(parameters.values()).all()


def test_no_likelihood_parameters_without_a_likelihood(make_model, series):
    """darts' own guard refuses the parameters of a point model, with its own message."""
    model = make_model(TINY_DARTS)
    assert not model.supports_likelihood_parameter_prediction
    model.fit(series)
    assert not model.supports_likelihood_parameter_prediction
    with pytest.raises(ValueError, match="only supported for probabilistic models fitted with "
                                         "a likelihood"):
        model.predict(3, predict_likelihood_parameters=True)


def test_mc_dropout_samples_without_a_likelihood(make_model, series):
    """``mc_dropout=True`` gives distinct, seeded samples; without it prediction stays
    deterministic, before and after a Monte-Carlo prediction."""
    model = make_model(TINY_DARTS, dropout=0.2).fit(series)
    assert model.likelihood is None and model.supports_probabilistic_prediction
    point = model.predict(3).all_values()  # (3, 1, 1)
    samples = model.predict(3, num_samples=20, mc_dropout=True, random_state=1).all_values()
    assert samples.shape == (3, 1, 20) and _distinct(samples) == 20
    again = model.predict(3, num_samples=20, mc_dropout=True, random_state=1).all_values()
    assert samples.tobytes() == again.tobytes()
    assert model.predict(3).all_values().tobytes() == point.tobytes()
    # Without mc_dropout, darts' samples are copies of the point forecast (up to the float
    # rounding of a batch of another shape)
    repeated = model.predict(3, num_samples=4).all_values()
    assert _distinct(repeated) == 1
    np.testing.assert_allclose(repeated[..., :1], point, rtol=1e-6, atol=1e-6)


def test_network_dropout_is_darts_monte_carlo_dropout(make_model, series, tmp_path):
    """darts finds every dropout module of the network, also after save and load, and
    ``supports_probabilistic_prediction`` is darts' rule: a likelihood or MC dropout modules
    (as in darts' own models, whatever the rate)."""
    model = make_model(TINY_DARTS).fit(series)  # dropout=0.0: the modules exist all the same
    found = model.model._get_mc_dropout_modules()
    network_dropout = [m for m in model.model.network.modules() if isinstance(m, GroupDropout)]
    assert found and found == set(network_dropout)
    assert all(isinstance(m, MonteCarloDropout) for m in network_dropout)
    assert model.supports_probabilistic_prediction
    path = str(tmp_path / "model.pt")
    model.save(path)
    loaded = ReinPatchModel.load(path)
    assert len(loaded.model._get_mc_dropout_modules()) == len(found)


def test_mc_dropout_survives_save_and_load(make_model, series, tmp_path):
    model = make_model(TINY_DARTS, dropout=0.2).fit(series)
    path = str(tmp_path / "model.pt")
    model.save(path)
    loaded = ReinPatchModel.load(path)
    kwargs = dict(num_samples=8, mc_dropout=True, random_state=2)
    expected = model.predict(3, **kwargs).all_values()
    assert loaded.predict(3, **kwargs).all_values().tobytes() == expected.tobytes()
    assert _distinct(expected) == 8
