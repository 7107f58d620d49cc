"""Memory snapshots of the software NeuronCore, in PyTorch's memory-snapshot format.

The format is the one ``torch.cuda.memory._snapshot()`` returns and PyTorch's memory
visualizer (https://pytorch.org/memory_viz, ``torch.cuda._memory_viz``) reads: a dict with
``"segments"`` (the live device memory, one entry per segment with its blocks) and
``"device_traces"`` (one list of allocator events per device, oldest first). It is built from
what the device allocator knows (``csrc/runtime/DeviceAllocator.cpp``: every live block with its
requested and reserved bytes) and from the allocation history recorded while
:func:`record_memory_history` is on (``csrc/runtime/MemoryHistory.cpp``: every allocation and
free, with the Python stack that made it).

The software NeuronCore gives every tensor a block of its own (no caching segment allocator), so
each block is its own segment: a segment's ``total_size`` is the block's reserved bytes (the
request rounded up to 64 bytes), its ``requested_size`` the bytes asked for, and its
``segment_type`` the pool Trainium's allocator would serve it from (``"small"`` below 1 MiB,
``"large"`` from 1 MiB, AWS's "Guidelines for memory management"). An allocation is recorded as
``segment_alloc`` + ``alloc``, a free as ``free_requested`` + ``free_completed`` +
``segment_free`` at the same instant (execution is synchronous). Stacks are Python frames only
(``{"filename", "line", "name"}``); C++ frames are not captured.
"""
from __future__ import annotations

import pickle
import sys
from typing import Any, Literal

from .. import _C
from .._device_index import DeviceLike, device_index

#: Requests below this many bytes go to the small pool of Trainium's caching segment allocator
#: (AWS Neuron documentation, "Guidelines for memory management"; the C++ statistics use the same
#: split, ``kSmallPoolLimit`` in ``csrc/runtime/DeviceAllocator.cpp``).
SMALL_POOL_LIMIT = 1 << 20


def record_memory_history(
    enabled: Literal["state", "all"] | None = "all",
    context: Literal["state", "alloc", "all"] | None = "all",
    stacks: Literal["python", "all"] = "all",
    max_entries: int = sys.maxsize,
    device: DeviceLike = None,
    clear_history: bool = False,
) -> None:
    """Starts (or stops, ``enabled=None``) recording the allocation history of every ``neuron``
    core, as ``torch.cuda.memory._record_memory_history`` does for CUDA.

    Args:
        enabled: ``"all"`` records every allocation and free (kept for :func:`snapshot`'s
            ``device_traces``); ``"state"`` records only the allocation stack of each live block
            (no events); ``None`` stops recording (what was recorded is kept until
            ``clear_history`` or the next start with it).
        context: ``None`` records no stacks; ``"state"``, ``"alloc"`` and ``"all"`` record the
            Python stack of each allocation (and of each free).
        stacks: ``"python"`` or ``"all"``: Python frames either way (no C++ frames here).
        max_entries: events kept per device; the oldest are dropped past it.
        device: accepted for CUDA's signature (CUDA records every device too); checked.
        clear_history: drop what was recorded so far.

    Raises:
        ValueError: for an ``enabled`` / ``context`` / ``stacks`` value not listed above, or
            ``max_entries`` < 0.
        RuntimeError: for a ``device`` that is not visible.
    """
    if enabled not in (None, "state", "all"):
        raise ValueError(f"enabled must be None, 'state' or 'all', got {enabled!r}")
    if context not in (None, "state", "alloc", "all"):
        raise ValueError(f"context must be None, 'state', 'alloc' or 'all', got {context!r}")
    if stacks not in ("python", "all"):
        raise ValueError(f"stacks must be 'python' or 'all', got {stacks!r}")
    if max_entries < 0:
        raise ValueError(f"max_entries must be >= 0, got {max_entries}")
    if device is not None:
        device_index(device)
    entries = min(int(max_entries), sys.maxsize) if enabled == "all" else 0
    _C._record_memory_history(enabled is not None, context is not None, entries, bool(clear_history))


def is_recording_memory_history() -> bool:
    """True while :func:`record_memory_history` is on."""
    return bool(_C._memory_history_enabled())


def _segment_type(requested: int) -> str:
    return "small" if requested < SMALL_POOL_LIMIT else "large"


def snapshot(device: DeviceLike = None) -> dict[str, Any]:
    """The memory snapshot of every ``neuron`` core (``device`` given: of that core only), in the
    format of ``torch.cuda.memory._snapshot()``.

    Returns:
        ``{"segments": [...], "device_traces": [[...], ...], "allocator_settings": {...}}``.
        A segment: ``device``, ``address``, ``total_size`` / ``allocated_size`` /
        ``active_size`` (the block's reserved bytes), ``requested_size`` (bytes asked for),
        ``stream`` (0), ``segment_type`` (``"small"`` / ``"large"``), ``segment_pool_id``
        (``(0, 0)``), ``is_expandable`` (False), ``frames`` and ``blocks`` (one block,
        ``state`` ``"active_allocated"``, with the allocation's ``frames`` when recorded).
        ``device_traces[i]`` lists core ``i``'s events: ``action``, ``addr``, ``size`` (reserved
        bytes), ``requested_size``, ``stream`` (0), ``time_us`` (since the Unix epoch),
        ``frames``. All sizes in bytes.

    Raises:
        RuntimeError: for a ``device`` that is not visible.
    """
    only = None if device is None else device_index(device)
    blocks, events = _C._memory_snapshot_raw()
    segments: list[dict[str, Any]] = []
    for dev, address, requested, reserved, frames in blocks:
        if only is not None and dev != only:
            continue
        segments.append({
            "device": dev,
            "address": address,
            "total_size": reserved,
            "allocated_size": reserved,
            "active_size": reserved,
            "requested_size": requested,
            "stream": 0,
            "segment_type": _segment_type(requested),
            "segment_pool_id": (0, 0),
            "is_expandable": False,
            "frames": frames,
            "blocks": [{
                "address": address,
                "size": reserved,
                "requested_size": requested,
                "state": "active_allocated",
                "frames": frames,
            }],
        })
    count = _C._device_count()
    traces: list[list[dict[str, Any]]] = [[] for _ in range(count)]
    for dev, action, address, size, requested, time_us, frames in sorted(events, key=lambda e: e[5]):
        if dev >= count or (only is not None and dev != only):
            continue
        traces[dev].append({
            "action": action,
            "addr": address,
            "size": size,
            "requested_size": requested,
            "stream": 0,
            "time_us": time_us,
            "frames": frames,
        })
    return {
        "segments": segments,
        "device_traces": traces,
        # No caching segment allocator: every block its own, reserved in 64-byte granules.
        "allocator_settings": {"caching": False, "granularity_bytes": 64, "small_pool_limit_bytes": SMALL_POOL_LIMIT},
    }


def memory_snapshot(device: DeviceLike = None) -> list[dict[str, Any]]:
    """The live segments of every ``neuron`` core (``device`` given: of that core), as
    ``torch.cuda.memory_snapshot()``: ``snapshot()["segments"]``."""
    return snapshot(device)["segments"]


def dump_snapshot(filename: str = "dump_snapshot.pickle") -> None:
    """Pickles :func:`snapshot` to ``filename``, the file PyTorch's memory visualizer opens
    (https://pytorch.org/memory_viz, or ``python -m torch.cuda._memory_viz trace_plot FILE``)."""
    with open(filename, "wb") as f:
        pickle.dump(snapshot(), f)
