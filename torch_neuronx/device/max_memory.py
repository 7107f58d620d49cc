"""``torch_neuronx.max_memory()``: the ``max_memory`` dict accelerate's ``device_map="auto"`` takes.

accelerate's ``get_max_memory`` has no neuron branch, so ``device_map="auto"`` alone places everything on
CPU; passing this dict makes it plan across the visible NeuronCores (keys are device indices, as accelerate
expects for accelerators, plus ``"cpu"`` for offload).
"""
from __future__ import annotations

import numbers
import os

from .. import _C


def max_memory(fraction: float = 0.9, include_cpu: bool = True) -> dict[int | str, int]:
    """Per-core memory budget for ``from_pretrained(..., device_map="auto", max_memory=...)``.

    Args:
        fraction: share of each core's currently free HBM to offer (0, 1]; the rest is headroom for
            activations, like accelerate's own 10% reserve on CUDA.
        include_cpu: also offer host memory under ``"cpu"`` (for offloading what does not fit).

    Returns:
        ``{0: bytes, 1: bytes, ..., "cpu": bytes}`` — one entry per visible neuron device, in bytes.

    Raises:
        TypeError: ``fraction`` is not a number (a string such as ``"0.9"``, or a bool), or ``include_cpu`` is
            not a bool.
        ValueError: if ``fraction`` is not in (0, 1] (a percentage such as ``90`` included).
    """
    if isinstance(fraction, bool) or not isinstance(fraction, numbers.Real):
        raise TypeError(f"max_memory(fraction={fraction!r}): the fraction is a number in (0, 1], such as 0.9, "
                        f"not a {type(fraction).__name__}")
    if not isinstance(include_cpu, bool):
        raise TypeError(f"max_memory(include_cpu={include_cpu!r}): True or False, not a {type(include_cpu).__name__}")
    if not 0 < fraction <= 1:
        raise ValueError(f"fraction must be in (0, 1], got {fraction}")
    from .memory import mem_get_info

    budget: dict[int | str, int] = {}
    for i in range(_C._device_count()):
        free, _total = mem_get_info(i)
        budget[i] = int(free * fraction)
    if include_cpu:
        pages = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        budget["cpu"] = int(pages * fraction)
    return budget
