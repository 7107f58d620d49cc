"""Zero-copy CPU aliases of ``neuron`` tensors, the currency of the ``"neuron"`` c10d backend.

A ``neuron`` tensor's storage is host memory owned by the device allocator, so
gloo can read and write it through a CPU tensor on the same bytes. No data is
ever copied between the device and the host by a collective.
"""
from __future__ import annotations

import torch

from .. import _C


def cpu_alias(tensor: torch.Tensor) -> torch.Tensor:
    """A CPU tensor on the same bytes as ``tensor`` (zero-copy).

    Args:
        tensor: a ``neuron`` tensor of any shape, dtype and strides, or a CPU
            tensor (returned as is, so the backend also accepts host tensors).

    Returns:
        A CPU tensor with the same sizes, strides, storage offset and dtype
        whose storage keeps the ``neuron`` storage alive. Writes through it are
        writes to the device tensor.

    Raises:
        TypeError: for a tensor on another device type (e.g. ``cuda``, ``meta``).
    """
    device_type = tensor.device.type
    if device_type == "neuron":
        return _C._cpu_alias(tensor)
    if device_type == "cpu":
        return tensor
    raise TypeError(
        f"the 'neuron' process group moves neuron (or CPU) tensors, got one on {tensor.device}"
    )
