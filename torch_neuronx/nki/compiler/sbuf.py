"""``nki.compiler.sbuf``: SBUF direct allocation (legacy direct-allocation guide).

``mod_alloc`` / ``alloc`` return a :class:`~torch_neuronx.nki.memory.Placement` used as ``buffer=``:
the simulator keeps the requested address fields for messages and charges SBUF capacity for the
physical tiles requested (``num_free_tiles`` / ``num_par_tiles``), not for every logical block. The
module itself is the automatic SBUF buffer (``buffer=ncc.sbuf``).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..memory import Placement

__all__ = ["mod_alloc", "alloc", "auto_alloc", "kind"]

kind = "sbuf"


def mod_alloc(*, base_addr: int, base_partition: int = 0, num_par_tiles: Any = (),
              num_free_tiles: Any = ()) -> Placement:
    """Modulo allocation of the logical blocks of an SBUF tensor (physical tile ``i % num_free_tiles``)."""
    return Placement("sbuf", {"base_addr": base_addr, "base_partition": base_partition,
                              "num_par_tiles": tuple(num_par_tiles), "num_free_tiles": tuple(num_free_tiles)})


def alloc(func: Callable) -> Placement:
    """Allocation by a callable ``func(idx, pdim_size, fdim_size) -> (start_partition, byte_addr)``."""
    if not callable(func):
        raise TypeError(f"ncc.sbuf.alloc takes a callable, got {func!r}")
    return Placement("sbuf", {"func": func})


def auto_alloc() -> Placement:
    """Automatic SBUF allocation (the default)."""
    return Placement("sbuf", {})
