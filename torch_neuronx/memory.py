"""``torch_neuronx.memory``: AWS's ``torch_neuronx.memory_*`` API (AWS Neuron documentation, "How
to profile memory usage in torch-neuronx"), re-exported on ``torch_neuronx`` itself.

The counters are ``torch.neuron``'s (``device/memory.py``: the software NeuronCore's per-core
accounting); this module adds the dictionary layout of AWS's ``torch_neuronx.memory_stats`` and
the snapshot recording calls of AWS's examples (``memory_snapshot_start`` /
``memory_snapshot_stop``) over ``device/snapshot.py``. Sizes are bytes.
"""
from __future__ import annotations

import sys
from typing import Any

from ._device_index import DeviceLike
from .device import memory as _memory
from .device import snapshot as _snapshot_module
from .device.memory import (
    empty_cache,
    max_memory_allocated,
    max_memory_reserved,
    mem_get_info,
    memory_allocated,
    memory_reserved,
    memory_summary,
    reset_accumulated_memory_stats,
    reset_peak_memory_stats,
)

#: The byte statistics of AWS's layout, each ``{"current", "peak", "allocated", "freed"}``.
_BYTE_STATS = ("allocated_bytes", "reserved_bytes", "active_bytes", "requested_bytes")


def memory_stats(device: DeviceLike = None) -> dict[str, Any]:
    """Allocator statistics of ``device`` (default: the current core) in both layouts users read.

    AWS's layout: ``"allocated_bytes"``, ``"reserved_bytes"``, ``"active_bytes"`` (and
    ``"requested_bytes"``), each a dict ``{"current", "peak", "allocated", "freed"}`` (bytes; peak
    since the last :func:`reset_peak_memory_stats`, allocated / freed the totals since the last
    :func:`reset_accumulated_memory_stats`); ``"num_alloc_retries"`` (always 0: there is no cache
    to flush and retry), ``"num_ooms"``, ``"num_tensor_frees"`` (blocks freed) and
    ``"allocation_requests"`` (blocks allocated) since the last accumulated reset. Also every
    flat CUDA-shaped key of ``torch.neuron.memory_stats`` (``"allocated_bytes.all.current"``,
    ``"reserved_bytes.small_pool.peak"``, ...; small / large pool split at 1 MiB, as Trainium's
    allocator splits them). ``reserved >= allocated == active`` always holds.

    Raises:
        RuntimeError: for a ``device`` that is not visible.
    """
    flat = _memory.memory_stats(device)
    out: dict[str, Any] = dict(flat)
    for name in _BYTE_STATS:
        out[name] = {field: int(flat[f"{name}.all.{field}"]) for field in ("current", "peak", "allocated", "freed")}
    out["num_alloc_retries"] = int(flat.get("num_alloc_retries", 0))
    out["num_ooms"] = int(flat["num_ooms"])
    out["num_tensor_frees"] = int(flat["allocation.all.freed"])
    out["allocation_requests"] = int(flat["allocation.all.allocated"])
    return out


def memory_snapshot_start(max_entries: int = sys.maxsize, stacks: bool = True) -> None:
    """Starts recording every ``neuron`` allocation and free (with its Python stack unless
    ``stacks=False``), dropping what an earlier recording kept; :func:`memory_snapshot_stop`
    returns the snapshot. Same as
    ``torch.neuron.memory._record_memory_history(max_entries=..., clear_history=True)``.

    Raises:
        ValueError: ``max_entries`` < 0.
    """
    _snapshot_module.record_memory_history(
        "all", "all" if stacks else None, "python", max_entries, clear_history=True
    )


def memory_snapshot_stop() -> dict[str, Any]:
    """Stops the recording :func:`memory_snapshot_start` began and returns the memory snapshot
    (PyTorch's format, ``torch.neuron.memory._snapshot()``: ``"segments"`` live now and
    ``"device_traces"`` recorded); pickle it to open it in PyTorch's memory visualizer."""
    _snapshot_module.record_memory_history(None)
    return _snapshot_module.snapshot()


def memory_snapshot(device: DeviceLike = None) -> dict[str, Any]:
    """The memory snapshot now (PyTorch's format, see ``torch.neuron.memory._snapshot``): the live
    segments of every core (``device`` given: of that core) and the events recorded so far.

    Raises:
        RuntimeError: for a ``device`` that is not visible.
    """
    return _snapshot_module.snapshot(device)


__all__ = [
    "empty_cache", "max_memory_allocated", "max_memory_reserved", "mem_get_info", "memory_allocated",
    "memory_reserved", "memory_snapshot", "memory_snapshot_start", "memory_snapshot_stop", "memory_stats",
    "memory_summary", "reset_accumulated_memory_stats", "reset_peak_memory_stats",
]
