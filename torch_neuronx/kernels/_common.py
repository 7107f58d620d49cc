"""Helpers shared by the kernels library: tile-size choices and row flattening."""
from __future__ import annotations

import torch

__all__ = ["chunk", "rows", "pad_rows", "LIB"]

LIB = "neuron_kernels"
"""Namespace of every op in this library: ``torch.ops.neuron_kernels.<name>``."""


def chunk(n: int, cap: int) -> int:
    """Largest divisor of ``n`` that is <= ``cap`` (a free-axis tile size that tiles ``n`` exactly,
    e.g. 768 with cap 512 -> 384)."""
    for c in range(min(n, cap), 0, -1):
        if n % c == 0:
            return c
    return 1


def rows(x: torch.Tensor) -> torch.Tensor:
    """``x`` [..., H] as [N, H] (a view when the layout allows; a copy otherwise)."""
    return x.reshape(-1, x.shape[-1])


def pad_rows(x2: torch.Tensor, multiple: int = 128) -> torch.Tensor:
    """[N, H] padded with zero rows to a multiple of ``multiple`` rows (returned as is if none)."""
    n = x2.shape[0]
    extra = (-n) % multiple
    if not extra:
        return x2
    return torch.cat([x2, x2.new_zeros((extra, x2.shape[1]))], dim=0)
