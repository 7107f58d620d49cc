"""Hardware numbers of one NeuronCore per platform, as data.

Every number below cites its public source. Abbreviations used in the citations:

* [ARCH-V2]  AWS Neuron docs, "NeuronCore-v2 Architecture" and "Trainium Architecture"
  (awsdocs-neuron.readthedocs-hosted.com/en/latest/general/arch/neuron-hardware/trainium.html)
* [ARCH-V3]  AWS Neuron docs, "NeuronCore-v3 Architecture" / "Trainium2 Architecture"
  (awsdocs-neuron.readthedocs-hosted.com/en/latest/general/arch/neuron-hardware/trainium2.html)
* [NKI-ARCH] AWS Neuron docs, "Trainium/Inferentia2 Architecture Guide for NKI" and
  "Trainium2 Architecture Guide for NKI" (engine clocks, SBUF/PSUM sizes, DMA engines)
* [NKI-ISA]  AWS Neuron docs, ``nki.isa.*`` API pages, "Estimated instruction cost" sections
  (MIN_II ~ 64 cycles; nc_matmul, activation, tensor_tensor, tensor_reduce, iota, bn_aggr costs)
* [MM-TUT]   AWS Neuron docs, NKI tutorial "Matrix multiplication" (performance table measured on
  trn1.32xlarge: tiled 51.80 ms ... optimised 6.97 ms for [4096,8192]@[8192,8192] bf16)
* [TRN-PAGE] AWS EC2 Trn1 / Trn2 product pages (peak dense TFLOPS per chip)

The project's summaries of these numbers are in shared/docs/TRAINIUM.md and shared/docs/NKI.md.
"""
from __future__ import annotations

from dataclasses import dataclass, field
import os

__all__ = ["Platform", "PLATFORMS", "get_platform", "DEFAULT_PLATFORM"]

KiB = 1024
GiB = 1024 ** 3


@dataclass(frozen=True)
class Platform:
    """One NeuronCore's capacities, clocks and throughput.

    Units are in the field names: bytes, GHz (= cycles per ns), bytes per ns, ns, FLOP/s.
    """

    name: str                       # "trn1" | "trn2" | "trn3"
    nc_version: int                 # NeuronCore generation: 2 (v2), 3 (v3)
    num_partitions: int             # SBUF/PSUM partitions [ARCH-V2], [ARCH-V3]
    sbuf_bytes_per_partition: int   # 192 KiB v2 (24 MiB total), 224 KiB v3 (28 MiB) [NKI-ARCH]
    psum_bytes_per_partition: int   # 16 KiB = 8 banks x 2 KiB (512 fp32) [NKI-ARCH]
    psum_bank_bytes: int            # 2 KiB per bank per partition [NKI-ARCH]
    hbm_bytes: int                  # HBM per (logical) NeuronCore [ARCH-V2], [ARCH-V3]
    clock_ghz: dict = field(default_factory=dict)   # per engine, cycles/ns [NKI-ARCH]
    min_ii_cycles: int = 64         # minimum instruction initiation interval [NKI-ISA]
    dma_engines: int = 16           # DMA engines per core [NKI-ARCH]
    dma_bytes_per_ns_per_engine: float = 17.0   # see table below
    dma_fixed_ns: float = 1300.0    # fixed latency per DMA transfer (~1.3 us) [NKI perf guide]
    dma_efficiency: float = 0.38    # calibration factor, see PLATFORMS comment
    peak_flops: dict = field(default_factory=dict)  # dense FLOP/s per core by input dtype name

    @property
    def dma_bytes_per_ns(self) -> float:
        """Sustained DMA throughput of the core in bytes/ns (= GB/s), efficiency included."""
        return self.dma_engines * self.dma_bytes_per_ns_per_engine * self.dma_efficiency


# DMA efficiency: NKI.md gives DMA = bytes / (16 engines x 17 B/ns v2 | 23 B/ns v3) + ~1.3 us per
# transfer. AWS's matmul tutorial [MM-TUT] measured on trn1 implies ~100 GB/s sustained for its
# 128x512 bf16 tile loads (tiled 5.37 GB in 51.8 ms, hoisted 4.4 GB in 42.96 ms, blocked 2.2 GB in
# 22.07 ms): a least-squares fit of bytes/time over those three steps gives 102.5 GB/s = 0.377 of the
# 272 B/ns peak. We apply that fitted factor (0.38) on every platform; AWS publishes no trn2/trn3
# calibration point, so the trn2/trn3 DMA numbers are an assumption.
PLATFORMS = {
    "trn1": Platform(
        name="trn1", nc_version=2, num_partitions=128,
        sbuf_bytes_per_partition=192 * KiB, psum_bytes_per_partition=16 * KiB, psum_bank_bytes=2 * KiB,
        hbm_bytes=16 * GiB,   # 32 GiB per chip / 2 cores [ARCH-V2]
        # Tensor 2.8 GHz, Vector 1.12, Scalar 1.4, GpSimd 1.4 (v2) [NKI-ARCH]; NKI.md summary
        clock_ghz={"tensor": 2.8, "vector": 1.12, "scalar": 1.4, "gpsimd": 1.4},
        dma_bytes_per_ns_per_engine=17.0,
        # trn1 chip: 190 TFLOPS bf16/fp16/tf32, 191 fp8, 47.5 fp32, 2 cores per chip [TRN-PAGE]
        peak_flops={"bfloat16": 95e12, "float16": 95e12, "tfloat32": 95e12,
                    "float8_e4m3": 95.5e12, "float8_e5m2": 95.5e12, "float32": 23.75e12},
    ),
    "trn2": Platform(
        name="trn2", nc_version=3, num_partitions=128,
        sbuf_bytes_per_partition=224 * KiB, psum_bytes_per_partition=16 * KiB, psum_bank_bytes=2 * KiB,
        hbm_bytes=12 * GiB,   # 96 GiB per chip / 8 physical cores (LNC=1) [ARCH-V3]
        # Tensor 2.4 GHz, Vector 0.96, Scalar 1.2, GpSimd 1.2 (v3) [NKI-ARCH]
        clock_ghz={"tensor": 2.4, "vector": 0.96, "scalar": 1.2, "gpsimd": 1.2},
        dma_bytes_per_ns_per_engine=23.0,
        # per physical NeuronCore-v3: 79 BF16 / 158 FP8 / 20 FP32 dense TFLOPS [ARCH-V3]
        peak_flops={"bfloat16": 79e12, "float16": 79e12, "tfloat32": 79e12,
                    "float8_e4m3": 158e12, "float8_e5m2": 158e12, "float32": 20e12},
    ),
}
# trn3: AWS publishes no NeuronCore-level numbers for Trainium3 in the sources we use, so trn3 USES THE
# TRN2 NUMBERS (same capacities, clocks, DMA and peak); only the name differs.
PLATFORMS["trn3"] = Platform(**{**PLATFORMS["trn2"].__dict__, "name": "trn3"})

DEFAULT_PLATFORM = os.environ.get("TORCH_NEURONX_NKI_PLATFORM", "trn2")


def get_platform(name=None) -> Platform:
    """Return the :class:`Platform` for ``"trn1" | "trn2" | "trn3"`` (default: env
    ``TORCH_NEURONX_NKI_PLATFORM`` or ``"trn2"``). A Platform instance is returned unchanged."""
    if isinstance(name, Platform):
        return name
    key = (name or DEFAULT_PLATFORM).lower()
    key = {"gen2": "trn1", "inf2": "trn1", "gen3": "trn2"}.get(key, key)
    if key not in PLATFORMS:
        raise ValueError(f"unknown platform {name!r}; choose one of {sorted(PLATFORMS)}")
    return PLATFORMS[key]
