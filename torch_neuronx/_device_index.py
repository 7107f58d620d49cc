"""The index of a ``neuron`` device named any of the ways PyTorch accepts, checked against the visible cores."""
from __future__ import annotations

from typing import TypeAlias

import torch

#: What ``torch.neuron`` functions accept as ``device``: ``None`` (the current device), an
#: ``int`` index, ``"neuron"`` / ``"neuron:1"``, or a ``torch.device``.
DeviceLike: TypeAlias = int | str | torch.device | None


def device_index(device: DeviceLike = None) -> int:
    """Index of the visible ``neuron`` device ``device`` names.

    Parsing is PyTorch's own (``torch.accelerator._get_device_index``, as OpenReg's device module
    does): ``None`` and an index-less ``"neuron"`` mean the calling thread's current device.
    The index is then checked against the visible logical NeuronCores.

    Raises:
        TypeError: for a value that is none of :data:`DeviceLike` (e.g. ``1.5``), which
            PyTorch's helper would silently read as the current device.
        ValueError: for a device of another type (e.g. ``"cuda:0"``), with PyTorch's message.
        RuntimeError: for an index that is not a visible neuron device; the message names the
            index, the visible cores and the variables that make more cores visible. Also the
            topology error when the environment describes no valid device set.
    """
    from . import _C

    if device is not None and not isinstance(device, (int, str, torch.device)):
        raise TypeError(
            f"device must be None, an int, 'neuron', 'neuron:<index>' or a torch.device, "
            f"not {type(device).__name__} {device!r}"
        )
    index = torch.accelerator._get_device_index(device, optional=True)
    return _C._check_device(index)
