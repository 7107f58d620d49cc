"""``nl.tile_size``: the hardware tile limits kernels read, for both front ends.

Constants come from AWS's ``nki.language.tile_size`` pages (legacy and current); the capacity figures
(``total_available_sbuf_size``, ``sbuf_fmax``, ``psum_num_banks``...) are the platform row's
(:mod:`torch_neuronx.runtime.platforms`), of the running kernel's platform, or of the default platform
outside a kernel.
"""
from __future__ import annotations

from typing import Any

from . import dtypes
from .context import active
from .platforms import get_platform

__all__ = ["TileSize", "tile_size", "sizeinbytes"]


def _platform() -> Any:
    sim = active()
    return sim.platform if sim is not None else get_platform()


class TileSize:
    """Hardware tile limits (``nl.tile_size``)."""

    pmax = 128                   #: max partitions of an SBUF/PSUM tile
    psum_fmax = 512              #: fp32 elements of one PSUM bank per partition (deprecated name)
    psum_bank_fmax = 512         #: fp32 elements of one PSUM bank per partition
    psum_bank_fmax_bytes = 2048  #: bytes of one PSUM bank per partition
    gemm_stationary_fmax = 128   #: max free size of the matmul stationary (left) tile
    gemm_moving_fmax = 512       #: max free size of the matmul moving (right) tile (NeuronCore-v2/v3)
    bn_stats_fmax = 512          #: max free size of a bn_stats input
    bn_stats_dim = 6             #: elements per partition of a bn_stats result
    bn_aggr_dim = 2              #: elements per partition of a bn_aggr result (mean, var)

    @property
    def psum_num_banks(self) -> int:
        """PSUM banks per partition (8)."""
        return int(_platform().core.psum_banks)

    @property
    def sbuf_size_bytes(self) -> int:
        """SBUF bytes, all partitions."""
        c = _platform().core
        return int(c.sbuf_bytes_per_partition * c.partitions)

    @property
    def total_available_sbuf_size(self) -> int:
        """SBUF bytes per partition (AWS's deprecated name)."""
        return int(_platform().core.sbuf_bytes_per_partition)

    @property
    def sbuf_fmax_bytes(self) -> int:
        """SBUF bytes per partition."""
        return int(_platform().core.sbuf_bytes_per_partition)

    @property
    def sbuf_fmax(self) -> int:
        """fp32 elements per SBUF partition."""
        return int(_platform().core.sbuf_bytes_per_partition) // 4

    @property
    def psum_min_align(self) -> int:
        """Not provided: AWS's pages give no value for the PSUM address alignment.

        Raises:
            NotImplementedError: always.
        """
        raise NotImplementedError("nl.tile_size.psum_min_align: AWS publishes no value; the simulator does "
                                  "not model addresses")

    @property
    def sbuf_min_align(self) -> int:
        """Not provided: AWS's pages give no value for the SBUF address alignment.

        Raises:
            NotImplementedError: always.
        """
        raise NotImplementedError("nl.tile_size.sbuf_min_align: AWS publishes no value; the simulator does "
                                  "not model addresses")

    def __repr__(self) -> str:
        return "nl.tile_size"


tile_size = TileSize()


def sizeinbytes(dtype: Any) -> int:
    """``nki.language.constants.sizeinbytes(dtype)``: bytes per element of ``dtype``."""
    return dtypes.itemsize(dtype)
