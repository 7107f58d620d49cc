"""DLPack for ``neuron`` tensors: ``Tensor.__dlpack_device__`` answers for the renamed device.

PyTorch exports a PrivateUse1 tensor as a DLPack capsule whose device is ``kDLExtDev`` (12) with
the tensor's device index (``torch.utils.dlpack.to_dlpack``, ``Tensor.__dlpack__``), and imports
such a capsule back onto the PrivateUse1 device of that index. ``Tensor.__dlpack_device__``, the
protocol's question "where is this memory", answers ``kDLExtDev`` only when the device type is
spelled ``"privateuse1"``: once the backend is renamed to ``neuron`` it raises
``ValueError: Unknown device type neuron for Dlpack``, and with it ``torch.from_dlpack(t)`` fails
for every ``neuron`` tensor although the capsule itself is right.

``install()`` puts a ``__dlpack_device__`` on ``torch.Tensor`` that answers
``(DLDeviceType.kDLExtDev, index)`` for a ``neuron`` tensor (the device the capsule names) and
defers to PyTorch's for every other device. ``torch.from_dlpack`` of a ``neuron`` tensor then
returns a ``neuron`` tensor on the same core sharing its memory, as for a CUDA tensor. Other
libraries (NumPy, JAX) refuse a ``kDLExtDev`` capsule with their own "unsupported device" error,
as they refuse CUDA memory: Trainium device memory is not host memory, so
``tensor.cpu()`` is the way to hand a ``neuron`` tensor to them.
"""
from __future__ import annotations

import enum
import functools

import torch

_installed = False


def dlpack_device(tensor: torch.Tensor) -> tuple[enum.IntEnum, int]:
    """``(DLDeviceType.kDLExtDev, index)`` for a ``neuron`` tensor: the device PyTorch's exporter
    writes into the tensor's DLPack capsule (index: the tensor's core, 0 if unset).

    Raises ``ValueError`` if ``tensor`` is not a ``neuron`` tensor.
    """
    from torch.utils.dlpack import DLDeviceType

    if tensor.device.type != "neuron":
        raise ValueError(f"dlpack_device: expected a neuron tensor, got one on {tensor.device}")
    index = tensor.device.index if tensor.device.index is not None else 0
    return (DLDeviceType.kDLExtDev, index)


def install() -> None:
    """Makes ``torch.Tensor.__dlpack_device__`` answer for ``neuron`` tensors (see the module
    docstring); PyTorch's method still answers for every other device. Idempotent."""
    global _installed
    if _installed:
        return
    torch_dlpack_device = torch.Tensor.__dlpack_device__

    @functools.wraps(torch_dlpack_device)
    def __dlpack_device__(self: torch.Tensor) -> tuple[enum.IntEnum, int]:
        # Subclasses with __torch_function__ go through PyTorch's method, which dispatches them.
        if self.device.type == "neuron" and not torch.overrides.has_torch_function_unary(self):
            return dlpack_device(self)
        return torch_dlpack_device(self)

    torch.Tensor.__dlpack_device__ = __dlpack_device__  # type: ignore[method-assign]
    _installed = True
