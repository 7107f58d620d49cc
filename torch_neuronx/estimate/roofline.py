"""Engine and memory times of one logical NeuronCore, from the platform table.

Every rate comes from ``torch_neuronx/runtime/platforms.py`` (its ``SOURCES`` cite the AWS pages):

* **Tensor Engine** (a 128 x 128 systolic array per physical core). A matmul ``[M, K] @ [K, N]`` is issued
  as ``nc_matmul`` instructions: a stationary tile (K <= 128 rows x <= 128 columns) and a moving tile
  (K <= 128 rows x <= 512 columns); each costs ``max(min(64, N_stationary), N_moving)`` cycles
  (``nki.isa.nc_matmul``: the cycle rule the NKI cost model uses, ``torch_neuronx.nki.cost_model``). The
  estimator takes the cheaper of the two orientations (weights or tokens stationary), so small per-rank
  matmuls pay the tile quantisation a Trainium compiler pays. Cycles run at ``TensorEngineSpec.clock_hz``;
  other dtypes scale by their published dense rate relative to BF16 (FP32: 1/4, FP8 on NeuronCore-v3: 2);
  a logical core has LNC Tensor Engines. Op costs hold this peak-rate time; the timeline divides it by the
  fitted sustained fraction ``eta_tensor`` (so a recording can be re-estimated with other constants).
* **Vector / Scalar / GpSimd**: elements at ``EngineSpec.elements_per_second(dtype)`` (wider data paths
  for BF16/FP16 where AWS states them), times LNC.
* **HBM**: the chip's bandwidth shared by its physical cores, times LNC, times the fitted ``eta_hbm``.
* **DMA**: the fixed cost of one transfer (``DmaSpec.fixed_latency_s``, about 1.3 us) for data-movement ops.

All results are seconds on one logical NeuronCore; they are ESTIMATES.
"""
from __future__ import annotations

import math

import torch

from ..runtime.platforms import EngineSpec, Platform
from .calibration import ModelConstants

__all__ = ["Roofline", "matmul_cycles", "dtype_name"]

_MOVING_MAX = 512          # moving tile free size ("nki-arch-v2/v3/v4"; N-PERF guide)
_STATIONARY_MAX = 128      # stationary tile free size = the array's columns
_CONTRACTION = 128         # partitions = the array's rows


def dtype_name(dtype: torch.dtype) -> str:
    """``torch.bfloat16`` -> ``"bfloat16"`` (the platform table's dtype keys)."""
    return str(dtype).replace("torch.", "")


def _tiles(size: int, tile: int) -> list[tuple[int, int]]:
    """[(tile size, count)] covering ``size`` with tiles of at most ``tile``."""
    full, rest = divmod(size, tile)
    out = [(tile, full)] if full else []
    if rest:
        out.append((rest, 1))
    return out


def matmul_cycles(m: int, k: int, n: int) -> int:
    """Tensor Engine cycles of ``[m, k] @ [k, n]`` with ``n`` stationary and ``m`` moving (BF16 rate).

    ``ceil(k / 128)`` contraction passes, each ``sum over (stationary tile j, moving tile i) of
    max(min(64, n_j), m_i)`` cycles (``nki.isa.nc_matmul`` cost). 0 when any size is 0.
    """
    if m <= 0 or k <= 0 or n <= 0:
        return 0
    per_pass = 0
    for n_j, n_count in _tiles(n, _STATIONARY_MAX):
        for m_i, m_count in _tiles(m, _MOVING_MAX):
            per_pass += n_count * m_count * max(min(64, n_j), m_i)
    return math.ceil(k / _CONTRACTION) * per_pass


class Roofline:
    """Times of engines and HBM on one logical NeuronCore of ``platform`` at ``lnc``.

    Args:
        platform: a row of the platform table.
        lnc: physical NeuronCores per logical core (one of ``platform.chip.lnc_choices``).
        constants: the fitted efficiencies (``eta_tensor``, ``eta_hbm``).

    Raises:
        ValueError: ``lnc`` not allowed on the platform (naming the allowed values).
    """

    def __init__(self, platform: Platform, lnc: int, constants: ModelConstants):
        if lnc not in platform.chip.lnc_choices:
            raise ValueError(f"LNC={lnc} is not available on {platform.name}: use one of "
                             f"{', '.join(map(str, platform.chip.lnc_choices))}")
        self.platform = platform
        self.lnc = lnc
        self.constants = constants
        core = platform.core
        self._bf16_peak = core.tensor.peak_flops("bfloat16")
        self._speed: dict[str, float] = {}
        #: peak HBM bandwidth of one logical core, bytes/s (chip bandwidth / physical cores x LNC)
        self.hbm_peak_bytes_per_s = platform.chip.hbm_bytes_per_s * lnc / platform.chip.physical_cores
        #: sustained HBM bandwidth charged, bytes/s
        self.hbm_bytes_per_s = self.hbm_peak_bytes_per_s * constants.eta_hbm
        #: capacity of one logical core, bytes
        self.hbm_capacity_bytes = platform.chip.hbm_bytes * lnc // platform.chip.physical_cores

    # --- Tensor Engine -------------------------------------------------------------------------------
    def tensor_speed(self, dtype: str) -> float:
        """Rate of ``dtype`` relative to BF16 (published dense FLOP/s ratio); integers at the BF16 rate."""
        if dtype not in self._speed:
            try:
                self._speed[dtype] = self.platform.core.tensor.peak_flops(dtype) / self._bf16_peak
            except ValueError:
                self._speed[dtype] = 1.0
        return self._speed[dtype]

    def peak_flops(self, dtype: str = "bfloat16") -> float:
        """Dense FLOP/s of one logical core's Tensor Engines for ``dtype`` (per-core figure x LNC)."""
        return self._bf16_peak * self.tensor_speed(dtype) * self.lnc

    def matmul_seconds(self, m: int, k: int, n: int, dtype: str, batch: int = 1) -> float:
        """Tensor Engine seconds of ``batch`` matmuls ``[m, k] @ [k, n]`` in ``dtype`` (cheaper orientation) at
        the engines' peak rate on one logical core (LNC engines); :meth:`tensor_sustained` applies ``eta_tensor``."""
        cycles = min(matmul_cycles(m, k, n), matmul_cycles(n, k, m)) * batch
        return cycles / (self.platform.core.tensor.clock_hz * self.tensor_speed(dtype) * self.lnc)

    def tensor_sustained(self, peak_seconds: float) -> float:
        """Tensor Engine seconds at the sustained rate: peak-rate seconds / ``eta_tensor``."""
        return peak_seconds / self.constants.eta_tensor

    # --- Vector / Scalar / GpSimd ------------------------------------------------------------------------
    def engine_seconds(self, engine: str, elements: float, dtype: str) -> float:
        """Seconds for ``engine`` ("vector", "scalar", "gpsimd") to process ``elements`` of ``dtype``."""
        spec = self.platform.core.engine(engine)
        if not isinstance(spec, EngineSpec):
            raise ValueError(f"engine_seconds is for the Vector, Scalar and GpSimd engines, not {engine!r}: "
                             "matmuls are timed by matmul_seconds")
        return elements / (spec.elements_per_second(dtype) * self.lnc)

    # --- memory ------------------------------------------------------------------------------------------
    def hbm_seconds(self, nbytes: float) -> float:
        """Seconds to move ``nbytes`` through HBM at the sustained rate."""
        return nbytes / self.hbm_bytes_per_s

    @property
    def dma_fixed_s(self) -> float:
        """Fixed cost of one DMA transfer, seconds (``DmaSpec.fixed_latency_s``)."""
        return self.platform.core.dma.fixed_latency_s
