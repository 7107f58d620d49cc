"""``torch.neuron`` pinned host memory statistics, shaped as ``torch.cuda.host_memory_stats()``.

Pinned host memory (``tensor.pin_memory()``, ``DataLoader(pin_memory=True)``, a non-blocking copy
to the host) comes from the device's host allocator, which PyTorch also reaches through
``torch.accelerator.empty_host_cache()``. On Trainium this is page-locked staging memory for DMA;
on the software NeuronCore it is ordinary host memory whose blocks are tracked. Nothing is cached:
a freed block returns to the host at once, so ``allocations`` always equals ``active_requests``
and ``empty_host_cache()`` has nothing to release. Sizes are bytes, times microseconds.
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Any

from .. import _C


def host_memory_stats_as_nested_dict() -> dict[str, Any]:
    """Pinned host allocator statistics as a nested dict.

    Keys: ``allocations``, ``allocated_bytes``, ``active_requests``, ``active_bytes`` (each a dict
    of ``current``, ``peak``, ``allocated``, ``freed``: blocks or bytes), ``num_host_alloc`` and
    ``num_host_free`` (host allocation / free calls), ``host_alloc_time`` and ``host_free_time``
    (dicts of ``total``, ``max``, ``min``, ``count``, ``avg``; microseconds).
    """
    return _C._host_memory_stats()


def host_memory_stats() -> OrderedDict[str, Any]:
    """:func:`host_memory_stats_as_nested_dict` flattened to dotted keys
    (``"active_bytes.current"``, ``"host_alloc_time.total"``, ...), sorted, as on CUDA."""
    flat: list[tuple[str, Any]] = []

    def add(prefix: str, value: Any) -> None:
        if isinstance(value, dict):
            for key, inner in value.items():
                add(f"{prefix}.{key}" if prefix else key, inner)
        else:
            flat.append((prefix, value))

    add("", host_memory_stats_as_nested_dict())
    return OrderedDict(sorted(flat))


def reset_accumulated_host_memory_stats() -> None:
    """Zeroes the ``allocated``/``freed`` totals, the call counts and the time totals."""
    _C._reset_host_memory_stats(False)


def reset_peak_host_memory_stats() -> None:
    """Sets every ``peak`` to its ``current`` value and clears the times' ``max``/``min``."""
    _C._reset_host_memory_stats(True)
