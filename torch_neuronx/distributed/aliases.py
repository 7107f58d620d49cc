"""Zero-copy CPU aliases of ``neuron`` tensors, the currency of the ``"neuron"`` c10d backend.

A ``neuron`` tensor's storage is host memory owned by the device allocator, so
gloo can read and write it through a CPU tensor on the same bytes. No data is
ever copied between the device and the host by a collective.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from .. import _C

_alias = _C._cpu_alias


def contiguous_aliases(tensors: torch.Tensor | Sequence[Any]) -> Any:
    """CPU aliases of a tensor, a list of tensors or a list of lists (same nesting), or None.

    The fast path of a collective: None as soon as one tensor is not contiguous (the caller
    then stages it). Each alias is what :func:`cpu_alias` returns.

    Raises:
        TypeError: for a tensor on another device type, as :func:`cpu_alias`.
    """
    if isinstance(tensors, torch.Tensor):
        if not tensors.is_contiguous():
            return None
        if tensors.is_cpu:
            return tensors
        try:
            return _alias(tensors)
        except RuntimeError:  # not a neuron tensor: cpu_alias names the device
            return cpu_alias(tensors)
    out = []
    for t in tensors:
        alias = contiguous_aliases(t)
        if alias is None:
            return None
        out.append(alias)
    return out


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
    if tensor.is_cpu:  # (is_cpu is a C attribute; device.type builds a device object)
        return tensor
    if tensor.device.type == "neuron":
        return _alias(tensor)
    raise TypeError(
        f"the 'neuron' process group moves neuron (or CPU) tensors, got one on {tensor.device}"
    )
