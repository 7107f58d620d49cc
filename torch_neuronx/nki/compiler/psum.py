"""``nki.compiler.psum``: PSUM direct allocation (legacy direct-allocation guide); see
:mod:`.sbuf`. The module itself is the automatic PSUM buffer (``buffer=ncc.psum``)."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..memory import Placement

__all__ = ["mod_alloc", "alloc", "auto_alloc", "kind"]

kind = "psum"


def mod_alloc(*, base_bank: int, base_addr: int = 0, base_partition: int = 0, num_bank_tiles: Any = (),
              num_par_tiles: Any = (), num_free_tiles: Any = ()) -> Placement:
    """Modulo allocation of the logical blocks of a PSUM tensor over ``num_bank_tiles`` banks."""
    return Placement("psum", {"base_bank": base_bank, "base_addr": base_addr, "base_partition": base_partition,
                              "num_bank_tiles": tuple(num_bank_tiles), "num_par_tiles": tuple(num_par_tiles),
                              "num_free_tiles": tuple(num_free_tiles)})


def alloc(func: Callable) -> Placement:
    """Allocation by a callable ``func(idx, pdim_size, fdim_size) -> (bank, start_partition, byte_addr)``."""
    if not callable(func):
        raise TypeError(f"ncc.psum.alloc takes a callable, got {func!r}")
    return Placement("psum", {"func": func})


def auto_alloc() -> Placement:
    """Automatic PSUM allocation (the default)."""
    return Placement("psum", {})
