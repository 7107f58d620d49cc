"""``nki.isa.constants`` of the current front end: the same enumerations as the legacy one
(:mod:`torch_neuronx.nki.isa.constants`)."""
from ...instructions.constants import (dge_mode, dma_engine, engine, matmul_perf_mode, nc_version, oob_mode,
                                       reduce_cmd)

__all__ = ["dge_mode", "dma_engine", "engine", "matmul_perf_mode", "nc_version", "oob_mode", "reduce_cmd"]
