"""``torch.neuron``: the device module of the ``neuron`` device, CUDA-shaped.

Registered with ``torch._register_device_module("neuron", ...)`` when torch
autoloads torch_neuronx. Functions take ``device`` as ``None`` (current), an
``int``, ``"neuron:i"`` or a ``torch.device``; an index that is not visible
raises ``RuntimeError`` naming the visible count.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from .. import _C, _state
from . import _utils  # noqa: F401  (torch.neuron._utils, read by torch.load)
from .._device_index import DeviceLike, device_index
from ..runtime.platforms import PLATFORMS
from .cuda_only import missing_attribute_message
from .legacy_storage import LEGACY_STORAGE_CLASSES
from .memory import (
    empty_cache,
    get_per_process_memory_fraction,
    max_memory_cached,
    memory_cached,
    memory_snapshot,
    set_per_process_memory_fraction,
    max_memory_allocated,
    max_memory_reserved,
    mem_get_info,
    memory_allocated,
    memory_reserved,
    memory_stats,
    memory_stats_as_nested_dict,
    memory_summary,
    reset_accumulated_memory_stats,
    reset_max_memory_allocated,
    reset_peak_memory_stats,
)
from .host_memory import (
    host_memory_stats,
    host_memory_stats_as_nested_dict,
    reset_accumulated_host_memory_stats,
    reset_peak_host_memory_stats,
)
from .properties import NeuronDeviceProperties, get_device_capability, get_device_name, get_device_properties
from .random import (
    all_default_generators,
    default_generator,
    get_rng_state,
    get_rng_state_all,
    initial_seed,
    manual_seed,
    manual_seed_all,
    seed,
    seed_all,
    set_rng_state,
    set_rng_state_all,
)
from .streams import (
    Event,
    Stream,
    StreamContext,
    current_stream,
    default_stream,
    query,
    record_event,
    set_stream,
    stream,
    synchronize,
    wait_event,
    wait_stream,
)


# torch.utils.checkpoint saves the device RNG state only when the device
# module reports `_initialized` (as torch.cuda does once CUDA is up).
_initialized: bool = _state.topology is not None


def is_available() -> bool:
    """True when at least one logical NeuronCore is visible and the topology is valid."""
    return _C._device_count() > 0


def device_count() -> int:
    """Number of visible logical NeuronCores (0 if the environment is invalid)."""
    return _C._device_count()


def is_initialized() -> bool:
    """True once the runtime is up (it starts with ``import torch``)."""
    return _state.topology is not None


def init() -> None:
    """Initialises the runtime; raises the topology error if the environment is invalid."""
    _state.require_topology()


def _lazy_init() -> None:
    init()


def current_device() -> int:
    """Index of the calling thread's current device (defaults to ``LOCAL_RANK``).

    Raises:
        TopologyError: the environment describes no valid device set (the error names the
            variable and the fix), as any other device use does.
    """
    if _state.topology is None:
        _state.require_topology()
    return _C._current_device()


def set_device(device: DeviceLike) -> None:
    """Sets the calling thread's current device.

    Raises:
        RuntimeError: for an index that is not a visible device.
    """
    index = device_index(device)
    _C._set_device(index)


class device:
    """Context manager that changes the current device: ``with torch.neuron.device(1): ...``.

    Accepts an int, ``"neuron:i"``, a ``torch.device`` or ``None`` (no-op).
    """

    def __init__(self, device: DeviceLike) -> None:
        self.idx = None if device is None else device_index(device)
        self.prev_idx = -1

    def __enter__(self):
        if self.idx is not None:
            self.prev_idx = _C._current_device()
            _C._set_device(self.idx)
        return self

    def __exit__(self, *exc):
        if self.idx is not None:
            _C._set_device(self.prev_idx)
        return False


class device_of(device):
    """Context manager that makes the device of tensor ``obj`` current (no-op for CPU tensors)."""

    def __init__(self, obj: torch.Tensor) -> None:
        super().__init__(obj.get_device() if obj.device.type == "neuron" else None)


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """True: NeuronCore engines compute in bf16 natively."""
    return True


def get_amp_supported_dtype() -> list[torch.dtype]:
    """Dtypes ``torch.autocast("neuron", dtype=...)`` accepts: bf16 and fp16."""
    return [torch.bfloat16, torch.float16]


def _is_in_bad_fork() -> bool:
    return False


OutOfMemoryError = torch.OutOfMemoryError


def ipc_collect() -> None:
    """CUDA's IPC cleanup: nothing to collect (a shared neuron storage's memory file is released
    when the last process holding it frees it)."""


def is_current_stream_capturing() -> bool:
    """False: there is no graph capture on neuron streams."""
    return False


def get_arch_list() -> list[str]:
    """NeuronCore generations this build models (the platforms ``TORCH_NEURONX_PLATFORM`` can name),
    e.g. ``["NeuronCore-v2", "NeuronCore-v3", "NeuronCore-v4"]``, from the platform table."""
    return sorted({p.core.version for p in PLATFORMS.values()})


#: Attributes served on first access (name → factory), registered by the layers above this one
#: (the package root registers Inductor's code generators, which only Inductor reads).
_LAZY_ATTRIBUTES: dict[str, Callable[[], Any]] = {}


def register_lazy_attribute(name: str, factory: Callable[[], Any]) -> None:
    """Makes ``torch.neuron.<name>`` return ``factory()`` (called on each access, so the factory
    caches if it must). Used for the attributes Inductor reads from a device module
    (``Scheduling``, ``PythonWrapperCodegen``, ``CppWrapperCodegen``), which import Inductor."""
    _LAZY_ATTRIBUTES[name] = factory


register_lazy_attribute("default_generators", all_default_generators)


def __getattr__(name: str):
    factory = _LAZY_ATTRIBUTES.get(name)
    if factory is not None:
        return factory()
    raise AttributeError(missing_attribute_message(name))


# torch.neuron.FloatStorage, ...: PyTorch's typed storages look them up here (legacy_storage.py).
globals().update(LEGACY_STORAGE_CLASSES)


def can_device_access_peer(device: DeviceLike, peer_device: DeviceLike) -> bool:
    """True when ``device`` can copy to and from ``peer_device`` directly: any two different
    visible NeuronCores (``tensor.to("neuron:1")`` from ``neuron:0`` is a device-to-device copy, over
    the chip's DMA engines or NeuronLink between chips on Trainium). False for a core and itself,
    as ``torch.cuda.can_device_access_peer`` answers for a GPU and itself.

    Raises:
        RuntimeError: for an index that is not a visible device.
    """
    return device_index(device) != device_index(peer_device)


def is_fp8_supported() -> bool:
    """True: Trainium2/3 tensor engines take fp8 (e4m3, e5m2) inputs."""
    return True


__all__ = [
    "Event", "NeuronDeviceProperties", "StreamContext", "can_device_access_peer", "get_per_process_memory_fraction",
    "memory_stats_as_nested_dict", "OutOfMemoryError", "get_arch_list", "ipc_collect",
    "is_current_stream_capturing", "max_memory_cached", "memory_cached", "set_per_process_memory_fraction", "Stream",
    "current_device", "current_stream",
    "default_generator", "default_stream", "device", "device_count", "device_of", "empty_cache",
    "get_amp_supported_dtype", "get_device_capability", "get_device_name", "get_device_properties",
    "get_rng_state", "get_rng_state_all", "host_memory_stats", "host_memory_stats_as_nested_dict", "init",
    "initial_seed", "is_available",
    "is_bf16_supported", "is_initialized", "manual_seed", "manual_seed_all", "max_memory_allocated",
    "max_memory_reserved", "mem_get_info", "memory_allocated", "memory_reserved", "memory_stats",
    "memory_snapshot", "memory_summary", "query", "record_event", "reset_accumulated_memory_stats",
    "reset_max_memory_allocated",
    "reset_accumulated_host_memory_stats", "reset_peak_host_memory_stats", "reset_peak_memory_stats", "seed",
    "seed_all", "set_device", "set_rng_state",
    "set_rng_state_all", "set_stream", "stream", "synchronize", "wait_event", "wait_stream",
    *LEGACY_STORAGE_CLASSES,
]
