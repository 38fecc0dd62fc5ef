"""Row chunks for large CPU passes.

Every row of the patcher's conv stack, the tokeniser's local features and the backbone is
computed on its own, so a large pass can run over consecutive chunks of rows with the same
result. On the CPU that is faster: glibc serves an allocation above 32 MiB with a fresh
``mmap`` that page-faults on first touch, and a small chunk stays in the cache between the
many passes a module makes over its activations. An accelerator's caching allocator has
neither cost and prefers one large kernel, so only CPU passes are split. A traced export
(ONNX) runs every row in one call: the chunks are a Python loop, which a trace would unroll for
the example's rows, fixing the batch size of the graph.

Two passes that use the same rows per chunk draw their dropout masks in the same order; the
GRPG step relies on it (see :meth:`~reinpatch_forecast.nn.backbone.Backbone.forward`).

Shape legend
------------
R : rows
r : rows of one chunk (the last chunk may hold fewer)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from torch import Tensor

__all__ = ["rows_per_chunk", "map_row_chunks"]


def rows_per_chunk(element_budget: int, elements_per_row: int) -> int:
    """Rows per chunk so that a chunk's widest tensor holds at most ``element_budget`` elements.

    Parameters
    ----------
    element_budget
        Most elements of one tensor of a chunk.
    elements_per_row
        Elements one row adds to that tensor.

    Returns
    -------
    int
        ``max(1, element_budget // elements_per_row)``: at least one row, however wide.
    """
    return max(1, element_budget // elements_per_row)


def map_row_chunks(
    function: Callable[..., Tensor | tuple[Tensor, ...]],
    inputs: Sequence[Tensor | None],
    chunk_rows: int,
) -> Tensor | tuple[Tensor, ...]:
    """``function(*inputs)``, run over consecutive chunks of ``chunk_rows`` rows on the CPU.

    Parameters
    ----------
    function
        Maps ``inputs`` (each ``(r, ...)``, or ``None``) to a tensor ``(r * m, ...)`` or a tuple
        of them, row ``i`` of the inputs giving rows ``i * m .. (i + 1) * m - 1`` of every
        output (``m`` fixed, e.g. ``G`` patchings per series); rows must not interact.
    inputs
        ``(R, ...)`` tensors sharing their first axis; a ``None`` passes through to every chunk.
        The first one must be a tensor: its device and rows decide the split.
    chunk_rows
        Rows per chunk (see :func:`rows_per_chunk`).

    Returns
    -------
    Tensor or tuple of Tensor
        What ``function`` returns on all the rows, ``(R * m, ...)``: one call when the input is
        not on the CPU, fits one chunk or is being exported, else the chunks' outputs
        concatenated.
    """
    first = inputs[0]
    rows = first.shape[0]
    if first.device.type != "cpu" or chunk_rows >= rows or torch.onnx.is_in_onnx_export():
        return function(*inputs)
    outputs = [
        function(*(None if value is None else value[start : start + chunk_rows]
                   for value in inputs))
        for start in range(0, rows, chunk_rows)
    ]
    if isinstance(outputs[0], Tensor):
        return torch.cat(outputs, dim=0)
    return tuple(torch.cat(parts, dim=0) for parts in zip(*outputs))
