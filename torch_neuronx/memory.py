"""``torch_neuronx.memory``: AWS's ``torch_neuronx.memory_*`` API (AWS Neuron documentation, "How
to profile memory usage in torch-neuronx"), re-exported on ``torch_neuronx`` itself.

The counters are ``torch.neuron``'s (``device/memory.py``: the software NeuronCore's per-core
accounting); this module adds the dictionary layout of AWS's ``torch_neuronx.memory_stats``. Sizes are
bytes.
"""
from __future__ import annotations

from typing import Any

from ._device_index import DeviceLike
from .device import memory as _memory
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
    flat CUDA-shaped key of ``torch.neuron.memory_stats`` (``"allocated_bytes.all.current"``, ...).
    ``reserved >= allocated == active`` always holds.

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


__all__ = [
    "empty_cache", "max_memory_allocated", "max_memory_reserved", "mem_get_info", "memory_allocated",
    "memory_reserved", "memory_stats",
    "memory_summary", "reset_accumulated_memory_stats", "reset_peak_memory_stats",
]
