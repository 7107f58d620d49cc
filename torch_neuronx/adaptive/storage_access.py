"""Python storage access runs the queued ops that write the storage first.

A result of a queued op has no memory until the queue runs (and the ``out=`` tensor of a queued
``out=`` op holds its old values until then). PyTorch's storage methods read a storage's data
pointer directly, without dispatching an op, and refuse one without memory ("invalid python
storage"): ``copy.deepcopy``, pickling, ``torch.save``, ``safetensors``,
``untyped_storage().clone()`` / ``.cpu()`` / ``.data_ptr()`` all failed on a queued result.

Every Python path from a tensor to its storage goes through ``Tensor.untyped_storage()``
(``Tensor.storage()``, ``_typed_storage()``, ``__reduce_ex__``, ``__deepcopy__`` and the
serializers call it), and PyTorch offers no hook on it nor on read-only data access (see
``csrc/aten/AdaptiveEager.h``). :func:`install` therefore gives ``torch.Tensor`` an
``untyped_storage`` that first runs the queue when the tensor's storage is written by a queued op
(``torch_neuronx._C._adaptive_flush_if_queued``; nothing is run otherwise, so asking for the
storage of other tensors cuts no merge), then returns PyTorch's own result.
"""
from __future__ import annotations

import torch

from .. import _C

_TORCH_UNTYPED_STORAGE = torch._C.TensorBase.untyped_storage


def untyped_storage(self: torch._C.TensorBase) -> torch.UntypedStorage:
    """``Tensor.untyped_storage()``, after running the queued ops that write this tensor's
    storage (none: nothing runs). Returns PyTorch's ``torch.UntypedStorage`` for the tensor."""
    _C._adaptive_flush_if_queued(self)
    return _TORCH_UNTYPED_STORAGE(self)


def install() -> None:
    """Makes ``torch.Tensor.untyped_storage`` run the queue first (idempotent; called by
    :func:`torch_neuronx.adaptive.install`, so only once adaptive eager execution is turned on)."""
    if torch.Tensor.__dict__.get("untyped_storage") is not untyped_storage:
        torch.Tensor.untyped_storage = untyped_storage  # type: ignore[method-assign]
