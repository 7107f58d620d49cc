"""``torch.neuron`` streams and events (what FSDP2 and accelerate use).

The software NeuronCore runs each op to completion before returning, like
``NEURON_LAUNCH_BLOCKING=1`` on hardware, so streams impose no extra ordering
and events complete when recorded; events created with ``enable_timing=True``
measure host time between records (``elapsed_time`` in milliseconds).
"""
from __future__ import annotations


import torch

from .. import _C
from .._device_index import DeviceLike, device_index


class Stream(torch.Stream):
    """A neuron stream (``torch.Stream`` subclass).

    Args:
        device: neuron device (default current).
        priority: requested priority (FSDP2 passes -1); clamped to the device's one level, 0,
            as CUDA clamps a priority to its range (see :meth:`priority_range`).
    """

    def __new__(cls, device: DeviceLike = None, priority: int = 0, **kwargs):
        index = device_index(device)
        return super().__new__(cls, device=torch.device("neuron", index), priority=priority, **kwargs)

    @property
    def priority(self) -> int:
        """This stream's priority: 0, the only level (:meth:`priority_range`)."""
        return 0

    @staticmethod
    def priority_range() -> tuple[int, int]:
        """``(least, greatest)`` stream priority: ``(0, 0)``. The software NeuronCore runs every op
        to completion in issue order, so there is one priority level."""
        return (0, 0)

    def wait_stream(self, stream: torch.Stream) -> None:
        """Orders this stream after ``stream`` (a no-op: execution is synchronous)."""
        super().wait_stream(stream)


class _NeuronEventMeta(type):
    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, torch.Event) and obj.device.type == "neuron"


class Event(metaclass=_NeuronEventMeta):
    """A neuron event: ``torch.neuron.Event(enable_timing=True)``.

    Returns a ``torch.Event`` on the current neuron device (PyTorch's event
    methods accept only exact ``torch.Event`` objects as arguments, so this is
    a factory; ``isinstance(e, torch.neuron.Event)`` holds for neuron events).
    See the module doc for what recording and timing mean here.
    """

    def __new__(cls, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False):
        return torch.Event(
            device=torch.device("neuron", device_index(None)),
            enable_timing=enable_timing,
            blocking=blocking,
            interprocess=interprocess,
        )


def current_stream(device: DeviceLike = None) -> torch.Stream:
    """The calling thread's current stream on ``device``."""
    return torch.accelerator.current_stream(device_index(device))


def default_stream(device: DeviceLike = None) -> torch.Stream:
    """The default stream (id 0) of ``device``."""
    index = device_index(device)
    return torch.Stream(stream_id=0, device_index=index, device_type=_NEURON_DEVICE_TYPE)


# c10::DeviceType::PrivateUse1, which `neuron` renames.
_NEURON_DEVICE_TYPE = 20


def set_stream(stream: torch.Stream) -> None:
    """Makes ``stream`` the current stream of its device."""
    if stream is not None:
        torch.accelerator.set_stream(stream)


class StreamContext:
    """Context manager that makes ``stream`` current (``torch.cuda.StreamContext``'s behaviour).

    On entry the stream's device becomes the current device and the stream its current stream; on
    exit the current device and the current streams of both devices are what they were. ``None``
    is a no-op.
    """

    def __init__(self, stream: torch.Stream | None) -> None:
        self.stream = stream
        self._saved: list[torch.Stream] = []

    def __enter__(self) -> torch.Stream | None:
        if self.stream is None:
            return None
        here = current_stream(torch.accelerator.current_device_index())
        there = current_stream(self.stream.device_index)
        self._saved.append(here)
        self._saved.append(there)
        set_stream(self.stream)
        return self.stream

    def __exit__(self, *exc: object) -> None:
        if self.stream is None:
            return
        there = self._saved.pop()
        here = self._saved.pop()
        set_stream(there)   # the stream's device gets its stream back
        set_stream(here)    # then the device current on entry, with its stream, is current again


def stream(s: torch.Stream | None) -> StreamContext:
    """``with torch.neuron.stream(s):`` makes ``s`` (and its device) current for the block;
    ``None`` is a no-op. Returns a :class:`StreamContext`."""
    return StreamContext(s)


def synchronize(device: DeviceLike = None) -> None:
    """Waits for all work on ``device``: every op already finished, except those queued by
    adaptive eager execution (``TORCH_NEURONX_ADAPTIVE_EAGER=1``), which run now.

    Raises:
        RuntimeError: for an index that is not a visible device.
    """
    device_index(device)
    _C._adaptive_flush()


def wait_stream(stream: torch.Stream) -> None:
    """Orders the current stream after ``stream`` (a no-op: every op already completed)."""
    current_stream().wait_stream(stream)


def wait_event(event: torch.Event) -> None:
    """Makes the current stream wait for ``event`` (a no-op: a recorded event is complete)."""
    current_stream().wait_event(event)


def record_event(event: torch.Event | None = None) -> torch.Event:
    """Records ``event`` (a new one when ``None``) on the current stream and returns it; it is
    complete at once (``event.query()`` is True)."""
    return current_stream().record_event(event)


def query() -> bool:
    """True when all work on the current stream has completed: always, execution is synchronous
    (adaptive eager's queued ops are run first)."""
    _C._adaptive_flush()
    return current_stream().query()
