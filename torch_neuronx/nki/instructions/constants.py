"""The enumerations of ``nki.isa`` (both front ends): engines, reduce commands, DGE and OOB modes,
matmul performance mode, NeuronCore versions, DMA engines.

Values are AWS's (current ``nki.isa`` page: ``engine.tensor = 1``, ``vector = 5``, ``scalar = 2``,
``gpsimd = 3``, ``dma = 4``, ``sync = 6``, ``unknown = 0``...). ``nki.isa.constants`` of both front ends
serves these classes too (AWS's kernels import ``oob_mode`` / ``dge_mode`` / ``matmul_perf_mode``
from there).
"""
from __future__ import annotations

import enum
from typing import Any

from ..errors import err_invalid_instruction_argument

__all__ = ["engine", "reduce_cmd", "dge_mode", "oob_mode", "matmul_perf_mode", "nc_version", "dma_engine",
           "engine_name", "tensor_engine", "vector_engine", "scalar_engine", "gpsimd_engine",
           "unknown_engine"]


class engine(enum.Enum):
    """Compute and data-movement engines of a NeuronCore (``nisa.engine``)."""
    tensor = 1
    vector = 5
    scalar = 2
    gpsimd = 3
    dma = 4
    sync = 6
    unknown = 0


class reduce_cmd(enum.Enum):
    """Engine accumulator-register commands (``nisa.reduce_cmd``)."""
    idle = 0
    reset = 1
    reduce = 2
    reset_reduce = 3
    load_reduce = 4


class dge_mode(enum.Enum):
    """Descriptor Generation Engine mode of a DMA (``nisa.dge_mode``)."""
    unknown = 0
    swdge = 1
    hwdge = 2
    none = 3


class oob_mode(enum.Enum):
    """Out-of-bounds handling of indirect DMA (``nisa.oob_mode``): raise, or skip the element."""
    error = 0
    skip = 1


class matmul_perf_mode(enum.Enum):
    """Tensor Engine performance mode (``nisa.matmul_perf_mode``): ``double_row`` is FP8 double rate."""
    none = "none"
    double_row = "double_row"
    double_row_gen3 = "double_row_gen3"
    double_row_sw_interleave = "double_row_sw_interleave"


class nc_version(enum.IntEnum):
    """NeuronCore generations, ordered (AWS's kernels test ``get_nc_version() >= nc_version.gen3``):
    gen2 = NeuronCore-v2 (trn1, inf2), gen3 = v3 (trn2), gen4 = v4 (trn3);
    the value is ``CoreSpec.generation`` of the platform table."""
    gen2 = 2
    gen3 = 3
    gen4 = 4


class dma_engine(enum.Enum):
    """DMA engine of ``nisa.sendrecv``: the shared DMA queues, or GpSimd's internal DMA."""
    dma = 1
    gpsimd_dma = 2


# deprecated module constants (current nki.isa page: "use engine.vector")
tensor_engine = engine.tensor
vector_engine = engine.vector
scalar_engine = engine.scalar
gpsimd_engine = engine.gpsimd
unknown_engine = engine.unknown

_ALIASES = {"act": "scalar", "activation": "scalar", "pool": "gpsimd", "pe": "tensor", "dve": "vector",
            "sp": "sync", "tensor": "tensor", "vector": "vector", "scalar": "scalar", "gpsimd": "gpsimd",
            "dma": "dma", "sync": "sync", "unknown": "unknown"}


def engine_name(e: Any, default: str) -> str:
    """Canonical engine name ("tensor", "vector", "scalar", "gpsimd", "dma", "sync") of an ``engine=``
    argument: an :class:`engine` (or another enum with those member names), a name or an AWS alias
    ("act", "pool", "pe", "dve"); ``default`` for None or ``engine.unknown``.

    Raises:
        err_invalid_instruction_argument: for an unknown engine.
    """
    if e is None:
        return default
    given = e.name if isinstance(e, enum.Enum) else str(e)
    name = _ALIASES.get(given.lower())
    if name is None:
        raise err_invalid_instruction_argument(f"unknown engine {e!r}; use nisa.engine.vector / scalar / "
                                               "gpsimd / tensor")
    return default if name == "unknown" else name
