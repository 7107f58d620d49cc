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

#: Dtypes gloo (the transport) moves and reduces as they are (measured on torch 2.13: every other
#: dtype fails inside the transfer with "Invalid scalar type"). Complex tensors are handled by
#: ``torch.distributed`` itself (it passes ``view_as_real`` views).
GLOO_DTYPES = frozenset({
    torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8, torch.uint8,
    torch.int32, torch.int64, torch.bool, torch.complex64, torch.complex128,
})

#: For a collective that only moves bytes (broadcast, gathers, scatter, all-to-all, send/recv),
#: the gloo dtype of the same item size that carries a tensor gloo cannot move itself (float8,
#: int16, uint16/32/64): the bytes are copied unchanged, never converted, as NCCL moves float8 as
#: ``ncclUint8``.
_CARRIER = {1: torch.uint8, 2: torch.float16, 4: torch.int32, 8: torch.int64}


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


def byte_carriers(aliases: Any) -> Any:
    """``aliases`` (a tensor, a list or a list of lists) with every tensor of a dtype gloo
    cannot move re-viewed as the gloo dtype of the same item size (same shape, same bytes).

    Only for collectives that copy bytes without arithmetic; a reduction must be refused
    instead (:func:`check_reducible`).
    """
    if isinstance(aliases, torch.Tensor):
        return aliases if aliases.dtype in GLOO_DTYPES else aliases.view(_CARRIER[aliases.element_size()])
    return [byte_carriers(a) for a in aliases]


def check_reducible(op: str, tensors: torch.Tensor | Sequence[Any]) -> None:
    """Refuses a reduction ``op`` on a dtype the transport cannot reduce, before any rank waits.

    Raises:
        TypeError: for float8, int16, uint16, uint32 or uint64 tensors, naming the dtype and the
            fix (reduce in a wider dtype, e.g. ``t.float()`` / ``t.int()``, then cast back). NCCL
            refuses float8 reductions the same way.
    """
    if isinstance(tensors, torch.Tensor):
        if tensors.dtype not in GLOO_DTYPES:
            raise TypeError(
                f"'neuron' process group: {op} cannot reduce {tensors.dtype} tensors (the transport "
                f"reduces float32/float64/float16/bfloat16, int8/uint8/int32/int64 and bool). Reduce "
                f"a copy in a wider dtype (e.g. t.float() or t.int()) and cast the result back; "
                f"collectives that only move data (broadcast, all_gather, scatter, all_to_all, "
                f"send/recv) accept {tensors.dtype} as it is."
            )
        return
    for t in tensors:
        check_reducible(op, t)


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
