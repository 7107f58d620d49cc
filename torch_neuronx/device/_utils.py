"""``torch.neuron._utils``: the device-index helper PyTorch looks up on a device module.

``torch.load`` (``torch.serialization._validate_device``) calls
``torch.<device>._utils._get_device_index(location, True)`` before it checks
``is_available()``; answering it here lets a checkpoint load on an unavailable
device fail with the reason (the environment variable and its fix) instead of
PyTorch's generic "CPU-only machine" text.
"""
from __future__ import annotations

import torch

from .. import _state
from .._device_index import device_index
from ..runtime.topology import TopologyError


def _get_device_index(device: int | str | torch.device | None, optional: bool = False,
                      allow_cpu: bool = False) -> int:
    """Index of the ``neuron`` device ``device`` names, like ``torch.cuda._utils._get_device_index``.

    Args:
        device: an index, ``"neuron"`` / ``"neuron:i"``, a ``torch.device``, or ``None``.
        optional: an index-less ``"neuron"`` or ``None`` means the current device (else an error).
        allow_cpu: a CPU device is accepted and gives ``-1``.

    Returns:
        The device index (``-1`` for an allowed CPU device).

    Raises:
        TopologyError: the device is unavailable because an environment variable has a bad
            value; the message names it, its fix, and ``map_location='cpu'`` for ``torch.load``.
        ValueError: a device of another type, or no index when ``optional`` is False.
        RuntimeError: an index that is not a visible ``neuron`` device (naming the visible cores and
            ``torch.load``'s ``map_location``).
    """
    if _state.topology is None:
        raise TopologyError(
            f"neuron device unavailable: {_state.topology_error} (to load a checkpoint of neuron tensors on "
            f"the CPU instead, pass map_location='cpu' to torch.load)"
        )
    if isinstance(device, str):
        device = torch.device(device)
    if isinstance(device, torch.device):
        if device.type == "cpu" and allow_cpu:
            return -1
        if device.type != "neuron":
            raise ValueError(f"Expected a neuron device, but got: {device}")
        if device.index is None and not optional:
            raise ValueError(f"Expected a neuron device with a specified index or an integer, but got: {device}")
    elif device is None and not optional:
        raise ValueError("Expected a neuron device with a specified index or an integer, but got: None")
    try:
        return device_index(device)
    except RuntimeError as err:
        if isinstance(err, TopologyError):
            raise
        # A checkpoint saved on a core this process does not see (saved on neuron:3, loaded with
        # two cores visible): PyTorch's own check would say to use map_location; say it too.
        raise RuntimeError(
            f"{err} To load a checkpoint saved on another NeuronCore, pass map_location to torch.load "
            f"(map_location='neuron:0', or 'cpu')."
        ) from err
