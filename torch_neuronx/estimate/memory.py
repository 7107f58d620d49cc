"""Peak HBM per logical NeuronCore: every ``neuron`` storage alive at each moment, by category.

The same model as PyTorch's ``torch.distributed._tools.mem_tracker.MemTracker`` (storage-keyed weak
references, freed when the storage dies), written for the estimator because MemTracker is not an infra
mode (it stops ``torch.compile`` from compiling) and needs a reset between steps. A storage counts its
``UntypedStorage.nbytes()``, which is what the device's allocator accounts (``csrc/runtime/DeviceAllocator.cpp``: the
request, no rounding), so on a real run the peak equals ``torch.neuron.max_memory_allocated()``; on fake
tensors it is the peak the run would reach.

Categories: ``parameters``, ``gradients``, ``optimizer_state``, ``activations`` (made in forward),
``temporaries`` (made in backward, not gradients), ``kv_cache`` (tagged), ``collective_buffers`` (outputs of
collectives), ``other`` (made outside those phases), ``pre_existing`` (device memory in use before the
estimate began that it does not know). Storages resized in place (FSDP2 frees unsharded parameters with
``UntypedStorage.resize_``, which is no op) are re-read by :meth:`MemoryTracker.refresh`, called from module
hooks.
"""
from __future__ import annotations

import weakref
from collections import defaultdict
from typing import Literal

import torch

__all__ = ["MemoryTracker", "Category", "CATEGORIES"]

Category = Literal["parameters", "gradients", "optimizer_state", "activations", "temporaries", "kv_cache",
                   "collective_buffers", "other", "pre_existing"]
CATEGORIES: tuple[str, ...] = ("parameters", "gradients", "optimizer_state", "activations", "temporaries",
                               "kv_cache", "collective_buffers", "other", "pre_existing")


class _Record:
    __slots__ = ("ref", "nbytes", "category", "device")

    def __init__(self, ref, nbytes: int, category: str, device: int):
        self.ref = ref
        self.nbytes = nbytes
        self.category = category
        self.device = device


class MemoryTracker:
    """Live ``neuron`` storages per device index, their categories, and the peak.

    Attributes:
        peak_bytes: {device index: peak bytes}; peak_by_category: {device: {category: bytes at the peak}};
        samples: [(event index, device, bytes in use)] after each change (for the trace's counter track).
    """

    def __init__(self):
        self._live: dict[int, _Record] = {}
        self.current: dict[int, int] = defaultdict(int)
        self.by_category: dict[int, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        self.peak_bytes: dict[int, int] = defaultdict(int)
        self.peak_by_category: dict[int, dict[str, int]] = {}
        self.samples: list[tuple[int, int, int]] = []
        self.event_index = 0

    # --- bookkeeping ------------------------------------------------------------------------------------
    def _changed(self, device: int) -> None:
        cur = self.current[device]
        self.samples.append((self.event_index, device, cur))
        if cur > self.peak_bytes[device]:
            self.peak_bytes[device] = cur
            self.peak_by_category[device] = {k: v for k, v in self.by_category[device].items() if v}

    def _freed(self, key: int) -> None:
        rec = self._live.pop(key, None)
        if rec is not None:
            self.current[rec.device] -= rec.nbytes
            self.by_category[rec.device][rec.category] -= rec.nbytes
            self.samples.append((self.event_index, rec.device, self.current[rec.device]))

    @staticmethod
    def key(t: torch.Tensor) -> int:
        """Identity of ``t``'s storage (stable while the storage lives)."""
        return id(t.untyped_storage())

    def track(self, t: torch.Tensor, category: str) -> None:
        """Counts ``t``'s storage (once) as ``category`` if it is on ``neuron``."""
        if t.device.type != "neuron":
            return
        st = t.untyped_storage()
        key = id(st)
        if key in self._live:
            return
        device = t.device.index or 0
        nbytes = st.nbytes()
        tracker = weakref.ref(self)

        def gone(_ref, key=key):
            me = tracker()
            if me is not None:
                me._freed(key)

        try:
            ref = weakref.ref(st, gone)
        except TypeError:      # a storage type without weak references: counted, never freed
            ref = None
        self._live[key] = _Record(ref, nbytes, category, device)
        self.current[device] += nbytes
        self.by_category[device][category] += nbytes
        self._changed(device)

    def reclassify(self, t: torch.Tensor, category: str) -> None:
        """Moves ``t``'s storage to ``category`` (tracking it first if needed)."""
        if t.device.type != "neuron":
            return
        rec = self._live.get(id(t.untyped_storage()))
        if rec is None:
            self.track(t, category)
            return
        if rec.category != category:
            self.by_category[rec.device][rec.category] -= rec.nbytes
            self.by_category[rec.device][category] += rec.nbytes
            rec.category = category

    def add_constant(self, device: int, nbytes: int, category: str = "pre_existing") -> None:
        """Counts ``nbytes`` of memory the estimator cannot see (e.g. in use before it began)."""
        if nbytes <= 0:
            return
        self.current[device] += nbytes
        self.by_category[device][category] += nbytes
        self._changed(device)

    def refresh(self) -> None:
        """Re-reads the size of every live storage (storages resized in place, e.g. by FSDP2)."""
        for rec in list(self._live.values()):
            st = rec.ref() if rec.ref is not None else None
            if st is None:
                continue
            n = st.nbytes()
            if n != rec.nbytes:
                self.current[rec.device] += n - rec.nbytes
                self.by_category[rec.device][rec.category] += n - rec.nbytes
                rec.nbytes = n
                self._changed(rec.device)

    def live_bytes(self, device: int = 0) -> int:
        """Bytes in use on ``device`` now."""
        return self.current[device]

    def category_of(self, t: torch.Tensor) -> str | None:
        """The category of ``t``'s storage, None if untracked."""
        rec = self._live.get(id(t.untyped_storage()))
        return rec.category if rec is not None else None

    def is_live(self, key: int) -> bool:
        """True while the storage with this :meth:`key` is alive."""
        return key in self._live
