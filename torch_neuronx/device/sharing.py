"""Sending ``neuron`` tensors between processes (DataLoader workers, ``torch.multiprocessing``).

CUDA shares device memory between processes through IPC handles; the software
NeuronCore's memory is private to its process, so a ``neuron`` tensor is sent as a
CPU copy in shared memory and rebuilt on the receiver's ``neuron`` device with the
same index (a copy, as a Trainium runtime would DMA it). Without this, PyTorch's
reducer fails inside the sender's queue thread ("_share_fd_: only available on
CPU") and a DataLoader with workers waits forever.
"""
from __future__ import annotations

from collections.abc import Callable
from multiprocessing.reduction import ForkingPickler
from typing import Any

import torch
from torch.multiprocessing import reductions

_torch_reduce_tensor = reductions.reduce_tensor


def _rebuild_neuron_tensor(host: torch.Tensor, index: int, requires_grad: bool, is_parameter: bool):
    t = host.to(torch.device("neuron", index))
    if is_parameter:
        return torch.nn.Parameter(t, requires_grad=requires_grad)
    return t.requires_grad_(requires_grad) if requires_grad else t


def reduce_tensor(tensor: torch.Tensor) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """Pickling rule for tensors: ``neuron`` ones travel as a shared-memory CPU copy.

    Returns:
        ``(rebuild function, its arguments)``, the pickle protocol's ``__reduce__`` pair.

    Raises:
        RuntimeError: for a non-leaf ``neuron`` tensor that requires grad (as PyTorch
            does for CUDA: autograd graphs cannot cross processes).
    """
    if tensor.device.type != "neuron":
        return _torch_reduce_tensor(tensor)
    if tensor.requires_grad and not tensor.is_leaf:
        raise RuntimeError(
            "Cowardly refusing to serialize non-leaf tensor which requires_grad, "
            "since autograd does not support crossing process boundaries.  "
            "If you just want to transfer the data, call detach() on the tensor before serializing "
            "(e.g., putting it on the queue)."
        )
    host = tensor.detach().to("cpu")
    return (_rebuild_neuron_tensor,
            (host, tensor.device.index, tensor.requires_grad, isinstance(tensor, torch.nn.Parameter)))


def register() -> None:
    """Installs :func:`reduce_tensor` for ``torch.Tensor`` and ``nn.Parameter`` (idempotent)."""
    ForkingPickler.register(torch.Tensor, reduce_tensor)
    ForkingPickler.register(torch.nn.parameter.Parameter, reduce_tensor)
