"""``torch.neuron`` memory API: per-core HBM accounting of the software NeuronCore.

Every ``neuron`` tensor (op results included) is counted against its core's
HBM capacity; allocating past it raises ``torch.OutOfMemoryError``. There is no
caching: freed memory returns at once, so ``memory_reserved`` is the allocated
bytes rounded to the 64-byte host allocation granularity. All sizes are bytes.
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Any

import torch

from .. import _C
from .._device_index import DeviceLike, device_index
from .snapshot import dump_snapshot, memory_snapshot, record_memory_history, snapshot  # noqa: F401

# torch.neuron.memory._record_memory_history / _snapshot / _dump_snapshot / memory_snapshot, as
# torch.cuda.memory names them (snapshot.py).
_record_memory_history = record_memory_history
_snapshot = snapshot
_dump_snapshot = dump_snapshot


def memory_allocated(device: DeviceLike = None) -> int:
    """Bytes held by live ``neuron`` tensors on ``device`` (default: current)."""
    return _C._memory_allocated(device_index(device))


def max_memory_allocated(device: DeviceLike = None) -> int:
    """Peak of :func:`memory_allocated` since start or :func:`reset_peak_memory_stats`, bytes."""
    return _C._memory_counters(device_index(device))["peak_allocated"]


def memory_reserved(device: DeviceLike = None) -> int:
    """Bytes reserved on ``device``'s HBM (allocated, rounded to 64-byte granules)."""
    return _C._memory_counters(device_index(device))["reserved"]


def max_memory_reserved(device: DeviceLike = None) -> int:
    """Peak of :func:`memory_reserved`, bytes."""
    return _C._memory_counters(device_index(device))["peak_reserved"]


def reset_peak_memory_stats(device: DeviceLike = None) -> None:
    """Resets the peaks reported by ``max_memory_*`` to the current values."""
    torch._C._accelerator_resetPeakStats(device_index(device))


def reset_max_memory_allocated(device: DeviceLike = None) -> None:
    """Same as :func:`reset_peak_memory_stats` (CUDA's older name)."""
    reset_peak_memory_stats(device)


def reset_accumulated_memory_stats(device: DeviceLike = None) -> None:
    """Resets the cumulative counters (allocations, frees, OOMs) of ``device``."""
    torch._C._accelerator_resetAccumulatedStats(device_index(device))


def set_per_process_memory_fraction(fraction: float, device: DeviceLike = None) -> None:
    """Caps this process's use of ``device``'s HBM at ``fraction`` (0, 1] of its capacity.

    Allocations past the cap raise ``torch.OutOfMemoryError``, as with CUDA.

    Raises:
        RuntimeError: for a fraction outside (0, 1] or a bad device index.
    """
    index = device_index(device)
    _C._set_memory_fraction(index, float(fraction))
    _FRACTIONS[index] = float(fraction)


# The fraction each core was last capped at by this process (torch.cuda keeps it the same way).
_FRACTIONS: dict[int, float] = {}


def get_per_process_memory_fraction(device: DeviceLike = None) -> float:
    """The fraction of ``device``'s HBM this process may use: the last value given to
    :func:`set_per_process_memory_fraction`, 1.0 if none.

    Raises:
        RuntimeError: for a bad device index.
    """
    return _FRACTIONS.get(device_index(device), 1.0)


def memory_cached(device: DeviceLike = None) -> int:
    """Deprecated CUDA name of :func:`memory_reserved`."""
    return memory_reserved(device)


def max_memory_cached(device: DeviceLike = None) -> int:
    """Deprecated CUDA name of :func:`max_memory_reserved`."""
    return max_memory_reserved(device)


def empty_cache() -> None:
    """Returns cached device memory to the system.

    The software NeuronCore does not cache freed blocks, so there is never
    anything to return; the call exists so code written for CUDA runs as is.
    """


def mem_get_info(device: DeviceLike = None) -> tuple[int, int]:
    """``(free, total)`` HBM bytes of ``device``: total is the core's capacity."""
    free, total = torch._C._accelerator_getMemoryInfo(device_index(device))
    return free, total


def memory_stats(device: DeviceLike = None) -> OrderedDict[str, Any]:
    """CUDA-shaped allocator statistics of ``device`` (``"allocated_bytes.all.current"``, ...).

    Adds ``"hbm_capacity_bytes"`` and ``"num_ooms"``.
    """
    index = device_index(device)
    stats = torch.accelerator.memory_stats(index)
    counters = _C._memory_counters(index)
    stats["hbm_capacity_bytes"] = counters["capacity"]  # after set_per_process_memory_fraction
    stats["num_ooms"] = counters["num_ooms"]
    return OrderedDict(sorted(stats.items()))


def memory_stats_as_nested_dict(device: DeviceLike = None) -> dict[str, Any]:
    """:func:`memory_stats` nested at its dots (``stats["allocated_bytes"]["all"]["current"]``), as
    ``torch.cuda.memory_stats_as_nested_dict``."""
    nested: dict[str, Any] = {}
    for key, value in memory_stats(device).items():
        *path, last = key.split(".")
        node = nested
        for part in path:
            node = node.setdefault(part, {})
        node[last] = value
    return nested


def _fmt(n: int) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(n) >= size:
            return f"{n / size:8.2f} {unit}"
    return f"{n:8d} B  "


def memory_summary(device: DeviceLike = None, abbreviated: bool = False) -> str:
    """A readable table of ``device``'s memory use, like ``torch.cuda.memory_summary``."""
    from .properties import get_device_properties

    index = device_index(device)
    c = _C._memory_counters(index)
    props = get_device_properties(index)
    free, total = mem_get_info(index)
    width = 75
    rows = [
        ("Allocated memory", c["allocated"], c["peak_allocated"]),
        ("Reserved memory", c["reserved"], c["peak_reserved"]),
    ]
    lines = [
        "=" * width,
        f" neuron:{index} memory summary — {props.name}, software NeuronCore".ljust(width),
        "-" * width,
        f" {'Metric':<24}{'Current':>16}{'Peak':>16}",
        "-" * width,
    ]
    for name, cur, peak in rows:
        lines.append(f" {name:<24}{_fmt(cur):>16}{_fmt(peak):>16}")
    lines += [
        "-" * width,
        f" HBM capacity {_fmt(total)}   free {_fmt(free)}   in use {100 * (total - free) / total:5.1f}%",
    ]
    if not abbreviated:
        lines += [
            f" Allocations {c['num_allocs']}   frees {c['num_frees']}   "
            f"out-of-memory errors {c['num_ooms']}",
            " Freed memory returns to the host at once (no caching allocator).",
        ]
    lines.append("=" * width)
    return "\n".join(lines)
