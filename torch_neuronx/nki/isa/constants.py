"""``nki.isa.constants`` (both front ends): the ``nki.isa`` enumerations, where AWS's kernels import
``oob_mode``, ``dge_mode`` and ``matmul_perf_mode`` from."""
from ..instructions.constants import (dge_mode, dma_engine, engine, matmul_perf_mode, nc_version, oob_mode,
                                      reduce_cmd)

__all__ = ["dge_mode", "dma_engine", "engine", "matmul_perf_mode", "nc_version", "oob_mode", "reduce_cmd"]
