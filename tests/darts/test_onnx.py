"""ONNX export: ``ReinPatchModel.to_onnx`` and the exported graph in onnxruntime.

For every patcher that exports (uniform, learned, frozen pretrained), at one and two levels,
with and without covariates, the graph run by darts' ``run_onnx_prediction`` gives
``predict``'s forecasts to 1e-5, rolled over its own forecasts beyond the horizon; the decoded
boundaries in onnxruntime are the eager ones, bit for bit. Exporting dominates the time of
these tests (seconds per graph, whatever the size of the network), so each configuration is
exported once. Skipped without the onnx extra (``pip install 'reinpatch-forecast[onnx]'``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from darts import TimeSeries
from support import TINY_DARTS, noisy_sine
from test_docs import python_blocks

pytest.importorskip("onnx", reason="the onnx extra is not installed: pip install -e '.[onnx]'")
pytest.importorskip("onnxscript",
                    reason="the onnx extra is not installed: pip install -e '.[onnx]'")
ort = pytest.importorskip("onnxruntime",
                          reason="the onnx extra is not installed: pip install -e '.[onnx]'")
from darts.utils.onnx import run_onnx_prediction  # noqa: E402 (needs onnxruntime)

DOCS = Path(__file__).resolve().parents[2] / "docs"
#: The tiny model, with a lookback of 24 so that two levels have room: N1 = 8, N2 = 4.
SIZE = dict(TINY_DARTS, input_chunk_length=24, output_chunk_length=4, compression_rate=3)
TWO_LEVELS = dict(levels=2, compression_rate=(3, 2))
#: id -> (model overrides, covariate kinds: "p"ast, "f"uture, "s"tatic, components). The
#: default model without covariates is exported by the deployment page's example.
CONFIGURATIONS = {
    "uniform-2-levels": (dict(patcher="uniform", **TWO_LEVELS), "", 1),
    "learned-2-levels": (dict(TWO_LEVELS), "", 1),
    "learned-at-most": (dict(budget="at_most", compression_rate=2), "", 1),
    "uniform-covariates": (dict(patcher="uniform"), "pfs", 1),
    "learned-covariates": (dict(), "pfs", 1),
    "learned-2-levels-multivariate-covariates": (dict(TWO_LEVELS), "pfs", 3),
    "pretrained-covariates": (dict(patcher="pretrained"), "pfs", 1),
}
TOLERANCE = 1e-5


def with_moved_boundaries(model) -> None:
    """Random score heads for a trainable learned patcher: after one epoch it still decodes
    the uniform grid, which would leave the policy's quantile and offset steps untested."""
    patcher = model.model.network.patcher
    if not hasattr(patcher, "output") or not patcher.trainable:
        return
    generator = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for name in ("output", "coarse_output", "count_output"):
            head = getattr(patcher, name, None)
            if head is not None:
                head.weight.copy_(0.3 * torch.randn(head.weight.shape, generator=generator))


def fitted(make_model, overrides: dict, kinds: str, components: int = 1):
    """A fitted model, its series and its covariates (``fit``'s keyword arguments)."""
    series = noisy_sine(length=120, components=components)
    covariates = {}
    if "s" in kinds:
        series = series.with_static_covariates(pd.DataFrame({"a": [0.5], "b": [2.0]}))
    if "p" in kinds:
        covariates["past_covariates"] = noisy_sine(length=120, components=2, seed=3, period=7)
    if "f" in kinds:
        covariates["future_covariates"] = noisy_sine(length=160, seed=4, period=5)
    model = make_model(SIZE, **overrides)
    model.fit(series, **covariates)
    with_moved_boundaries(model)
    return model, series, covariates


def onnx_and_eager(model, tmp_path, windows: list[TimeSeries], covariates: dict, n: int):
    """Forecasts ``(S, n, C)`` of the exported graph and of ``predict``, for each window."""
    path = tmp_path / "model.onnx"
    model.to_onnx(str(path))
    session = ort.InferenceSession(str(path))
    per_window = {name: [value] * len(windows) for name, value in covariates.items()}
    exported = run_onnx_prediction(n, session, windows, verbose=False, **per_window)
    eager = model.predict(n, series=windows, **per_window)
    return (np.stack([s.values() for s in exported]), np.stack([s.values() for s in eager]))


@pytest.mark.slow
@pytest.mark.parametrize("name", list(CONFIGURATIONS))
def test_exported_graph_gives_the_forecasts_of_predict(name, make_model, tmp_path):
    """Also ``n`` beyond the horizon (4): the graph rolls over its own forecasts, as
    ``predict`` does."""
    overrides, kinds, components = CONFIGURATIONS[name]
    model, series, covariates = fitted(make_model, overrides, kinds, components)
    windows = [series[start:start + 40] for start in range(0, 80, 9)]
    before = model.predict(11, series=windows[0], **covariates).values()
    exported, eager = onnx_and_eager(model, tmp_path, windows, covariates, n=11)
    assert exported.shape == (len(windows), 11, components)
    np.testing.assert_allclose(exported, eager, rtol=0, atol=TOLERANCE)
    # Exporting leaves the model as it was.
    assert np.array_equal(model.predict(11, series=windows[0], **covariates).values(), before)


class _Boundaries(torch.nn.Module):
    """The network's decoded starts (and coarse starts) as a graph output."""

    def __init__(self, network) -> None:
        super().__init__()
        self.network = network

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        if self.network.config.levels == 1:
            return (self.network.boundaries(x),)
        return self.network.boundaries(x), self.network.coarse_boundaries(x)


#: The learned patchers whose decode the graph must give exactly (on moved boundaries).
DECODES = {"learned": dict(), "learned-2-levels": dict(TWO_LEVELS),
           "learned-at-most": dict(budget="at_most", compression_rate=2)}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(DECODES))
def test_exported_decode_gives_the_same_boundaries(name, make_model, tmp_path):
    """The policy's export forms (comparison counts for searchsorted, prefix maxima for
    cummax) decode exactly the eager boundaries, on windows that move them off the grid.

    (The frozen pretrained patcher runs the same code; on these sine windows it keeps the
    grid, so it would test less.)"""
    model, series, _ = fitted(make_model, DECODES[name], "")
    network = model.model.network.eval()
    values = series.values()
    x = torch.as_tensor(np.stack([values[i:i + 24] for i in range(len(values) - 24)]))  # (B,L,1)
    decode = _Boundaries(network).eval()
    with torch.no_grad():
        expected = decode(x)
    path = tmp_path / "boundaries.onnx"
    # the graph as traced: torch.onnx's optimisation passes (a third of the export time) are
    # checked on darts' export above
    torch.onnx.export(decode, (x,), str(path), dynamo=True, verbose=False, optimize=False)
    session = ort.InferenceSession(str(path))
    got = session.run(None, {session.get_inputs()[0].name: x.numpy()})
    for exported, eager in zip(got, expected):
        assert np.array_equal(exported, eager.numpy())
    grid = network.boundaries(x[:1])[0, 0]
    assert bool((expected[0] != grid).any()), "the test windows should move some boundaries"


@pytest.mark.slow
def test_a_dynamic_batch_axis_survives_row_chunking(make_model, tmp_path):
    """Exported with a dynamic batch axis from an example large enough to be split into row
    chunks, the graph still serves any batch size: the export runs whole rows."""
    model, series, _ = fitted(make_model, dict(TWO_LEVELS), "")
    network = model.model.network.eval()
    network.patcher.chunk_elements = 1  # one row per chunk in eager runs
    values = series.values()
    example = torch.as_tensor(np.stack([values[i:i + 24] for i in range(6)]))
    path = tmp_path / "network.onnx"
    batch = torch.export.Dim("batch", min=1, max=1024)
    torch.onnx.export(network, (example,), str(path), dynamo=True, verbose=False,
                      dynamic_shapes=({0: batch},), input_names=["x"], optimize=False)
    session = ort.InferenceSession(str(path))
    for size in (1, 5, 31):
        x = torch.as_tensor(np.stack([values[i:i + 24] for i in range(size)]))
        with torch.no_grad():
            expected = network(x).numpy()
        np.testing.assert_allclose(session.run(None, {"x": x.numpy()})[0], expected, rtol=0,
                                   atol=TOLERANCE)


@pytest.mark.parametrize("patcher", ["random", "volatility"])
def test_patchers_without_an_onnx_form_are_refused_with_the_reason(patcher, make_model,
                                                                   tmp_path):
    model = make_model(SIZE, patcher=patcher)
    model.fit(noisy_sine(length=60))
    with pytest.raises(ValueError, match=f"patcher='{patcher}' cannot be exported to ONNX: "
                                         f"it.* The learned, pretrained and uniform"):
        model.to_onnx(str(tmp_path / "model.onnx"))
    assert not (tmp_path / "model.onnx").exists()


def test_a_fit_after_an_export_trains_in_training_mode(make_model, tmp_path):
    """darts' export leaves the module (and darts' shared default loss) in evaluation mode; a
    later fit still trains with dropout."""
    model = make_model(SIZE, patcher="uniform")
    model.fit(noisy_sine(length=60))
    model.to_onnx(str(tmp_path / "model.onnx"))
    assert not any(module.training for module in model.model.modules())
    model.fit(noisy_sine(length=60), epochs=1)
    assert all(module.training for module in model.model.modules())


def test_an_untrained_model_is_refused(make_model, tmp_path):
    with pytest.raises(ValueError, match=r"fit\(\)"):
        make_model(SIZE).to_onnx(str(tmp_path / "model.onnx"))


@pytest.mark.slow
def test_deployment_page_examples_run(tmp_path, monkeypatch):
    """docs/deployment.md's python blocks, in order, in one namespace."""
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "docs_deployment"}
    blocks = python_blocks(DOCS / "deployment.md")
    assert blocks
    for number, code in enumerate(blocks, start=1):
        exec(compile(code, f"deployment.md block {number}", "exec"), namespace)


def test_a_missing_onnx_extra_is_named(make_model, tmp_path, monkeypatch):
    import importlib.util

    find_spec = importlib.util.find_spec

    def without_onnxscript(name, *args):
        return None if name == "onnxscript" else find_spec(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", without_onnxscript)
    with pytest.raises(ImportError, match=r"onnxscript.*reinpatch-forecast\[onnx\]"):
        make_model(SIZE).to_onnx(str(tmp_path / "model.onnx"))
