"""Normalising the ways users name a neuron device to an index."""
from __future__ import annotations

import torch


def device_index(device=None, optional: bool = True) -> int:
    """Index of ``device``: ``None`` (current), ``int``, ``"neuron"``, ``"neuron:1"``, ``torch.device``.

    Raises:
        ValueError: for a device of another type (e.g. ``"cuda:0"``).
        RuntimeError: for an index that is not a visible neuron device.
    """
    from . import _C

    if device is None:
        return _C._check_device(-1)
    if isinstance(device, str):
        device = torch.device(device)
    if isinstance(device, torch.device):
        if device.type != "neuron":
            raise ValueError(f"Expected a neuron device, but got: {device}")
        return _C._check_device(-1 if device.index is None else device.index)
    if isinstance(device, int):
        return _C._check_device(device)
    raise TypeError(f"device must be an int, a string or a torch.device, not {type(device).__name__}")
