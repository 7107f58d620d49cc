"""Sharing ``neuron`` tensors between processes (``torch.multiprocessing``, DataLoader workers).

The software NeuronCore's device memory is shared host memory (``csrc/runtime/SharedArena.h``),
so sharing is real, as CUDA IPC is for CUDA tensors:

* **fork**: a child forked after a ``neuron`` tensor was created shares its memory with the
  parent; the child's in-place updates reach the parent (Hogwild training after
  ``model.share_memory()``, which PyTorch makes a no-op for devices). PyTorch's
  ``is_shared()`` is ``True`` for every device storage, and here that is true.
* **spawn / forkserver / queues**: a ``neuron`` tensor is pickled as the descriptor of a memory
  file holding its storage (the storage moves into a file of its own the first time, with one
  copy, as CPU's ``share_memory_()`` moves a storage into shared memory). The receiver maps the
  same file on the ``neuron`` device of the same index: both processes see one memory, and the
  received tensor is accounted to the receiver's core like an allocation. Tensors sharing one
  storage (a tensor and its views, tied weights) arrive sharing one storage, accounted once: the
  receiver keys what it mapped by the file's identity in PyTorch's ``shared_cache``, as PyTorch
  does for CPU tensors (file descriptors) and CUDA tensors (IPC handles).

The sender must keep the tensor alive until the receiver has it (PyTorch's rule for CUDA and
CPU tensors too).
"""
from __future__ import annotations

import os
from collections.abc import Callable
from multiprocessing.reduction import DupFd, ForkingPickler
from typing import Any

import torch
from torch.multiprocessing import reductions

from .. import _C

_torch_reduce_tensor = reductions.reduce_tensor


def _received_storage(raw_fd: int, nbytes: int, index: int) -> torch.UntypedStorage:
    """The storage over a received memory file: the one already mapped here for the same file
    (same core, same size) while it is alive, else a new mapping. Owns ``raw_fd``."""
    key = ("neuron", index, nbytes, *reductions.fd_id(raw_fd))
    storage = reductions.storage_from_cache(torch.UntypedStorage, key)
    if storage is not None:
        os.close(raw_fd)
        return storage
    storage = _C._import_shared_storage(raw_fd, nbytes, index).untyped_storage()  # closes raw_fd
    reductions.shared_cache[key] = reductions.StorageWeakRef(storage)
    return storage


def _rebuild_neuron_tensor(fd: Any, nbytes: int, index: int, dtype: torch.dtype, offset: int,
                           size: tuple[int, ...], stride: tuple[int, ...], requires_grad: bool,
                           is_parameter: bool) -> torch.Tensor:
    device = torch.device("neuron", index)
    if nbytes:
        storage = _received_storage(fd.detach(), nbytes, index)
        t = torch.empty((0,), dtype=dtype, device=device).set_(storage, offset, size, stride)
    else:
        t = torch.empty_strided(size, stride, dtype=dtype, device=device)
    if is_parameter:
        return torch.nn.Parameter(t, requires_grad=requires_grad)
    return t.requires_grad_(requires_grad) if requires_grad else t


def reduce_tensor(tensor: torch.Tensor) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """Pickling rule for tensors: a ``neuron`` one travels as the descriptor of the shared
    memory file holding its storage (see the module docstring); others use PyTorch's rule.

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
    storage = tensor.untyped_storage()
    fd: Any = None
    nbytes = storage.nbytes()
    if nbytes:
        raw_fd, nbytes = _C._share_storage_fd(tensor)
        fd = DupFd(raw_fd)
    return (_rebuild_neuron_tensor,
            (fd, nbytes, tensor.device.index, tensor.dtype, tensor.storage_offset(), tuple(tensor.size()),
             tuple(tensor.stride()), tensor.requires_grad, isinstance(tensor, torch.nn.Parameter)))


def register() -> None:
    """Installs :func:`reduce_tensor` for ``torch.Tensor`` and ``nn.Parameter`` (idempotent)."""
    ForkingPickler.register(torch.Tensor, reduce_tensor)
    ForkingPickler.register(torch.nn.parameter.Parameter, reduce_tensor)
