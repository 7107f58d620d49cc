"""The hardware numbers of every Neuron platform the software NeuronCore models: one table.

One :class:`Platform` row per platform (``trn1``, ``trn2``, ``trn3``, ``inf2``), made of nested frozen
records: :class:`ChipSpec` (cores, LNC, HBM, chip peaks, DMA), :class:`CoreSpec` (one physical
NeuronCore: engines, SBUF/PSUM, DMA queues, cost-model constants), :class:`InterconnectSpec` and
:class:`InstanceSpec` (the EC2 instances built from the chip). Everything that needs a hardware number
reads it from here: the device (:mod:`.topology`, ``torch.neuron.get_device_properties``), the NKI
simulator and its cost model (``torch_neuronx.nki``), and estimators.

Units are in the field names and are SI: bytes (binary multiples only where AWS states GiB/KiB),
bytes per second, hertz, seconds, FLOP/s (dense), elements per cycle, US dollars per hour.

Sources. Every number cites a key of :data:`SOURCES`: a page of the AWS Neuron documentation, given
by its path in the ``aws-neuron/aws-neuron-sdk`` repository (read at commit ``81ce03ae``,
2026-08-21; the web page is ``awsdocs-neuron.readthedocs-hosted.com/en/latest/<path without .rst>.html``,
but pages move between releases, so the repository path is the stable citation). Where two AWS pages
disagree both values are given in the comment and the one used is named.

The selected platform is ``TORCH_NEURONX_PLATFORM`` (default ``trn2``), read when asked for by
:func:`platform_from_env`; the device reads it once when it loads its topology.
"""
from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = [
    "SOURCES", "EngineSpec", "TensorEngineSpec", "DmaSpec", "CoreSpec", "ChipSpec", "InterconnectSpec",
    "InstanceSpec", "RuntimeSpec", "Platform", "PLATFORMS", "DEFAULT_PLATFORM", "PLATFORM_VARIABLE", "get_platform",
    "platform_from_env", "NEURON_CORE_V2", "NEURON_CORE_V3", "NEURON_CORE_V4", "KiB", "MiB", "GiB",
]

KiB = 1 << 10
MiB = 1 << 20
GiB = 1 << 30

PLATFORM_VARIABLE = "TORCH_NEURONX_PLATFORM"
DEFAULT_PLATFORM = "trn2"

_DOCS = "aws-neuron/aws-neuron-sdk:"
SOURCES: dict[str, str] = {
    # chip pages ("About Neuron > Architecture > Neuron hardware")
    "trainium": _DOCS + "about-neuron/arch/neuron-hardware/trainium.rst",
    "trainium2": _DOCS + "about-neuron/arch/neuron-hardware/trainium2.rst",
    "trainium3": _DOCS + "about-neuron/arch/neuron-hardware/trainium3.rst",
    "inferentia2": _DOCS + "about-neuron/arch/neuron-hardware/inferentia2.rst",
    # NeuronCore pages
    "neuron-core-v2": _DOCS + "about-neuron/arch/neuron-hardware/neuron-core-v2.rst",
    "neuron-core-v3": _DOCS + "about-neuron/arch/neuron-hardware/neuron-core-v3.rst",
    "neuron-core-v4": _DOCS + "about-neuron/arch/neuron-hardware/neuron-core-v4.rst",
    # instance pages
    "trn1-arch": _DOCS + "about-neuron/arch/neuron-hardware/trn1-arch.rst",
    "trn2-arch": _DOCS + "about-neuron/arch/neuron-hardware/trn2-arch.rst",
    "trn3-arch": _DOCS + "about-neuron/arch/neuron-hardware/trn3-arch.rst",
    "inf2-arch": _DOCS + "about-neuron/arch/neuron-hardware/inf2-arch.rst",
    "lnc": _DOCS + "about-neuron/arch/neuron-features/logical-neuroncore-config.rst",
    # NKI architecture guides (engine clocks and data paths, SBUF/PSUM layout, DMA engines)
    "nki-arch-v2": _DOCS + "nki/guides/architecture/trainium_inferentia2_arch.rst",
    "nki-arch-v3": _DOCS + "nki/guides/architecture/trainium2_arch.rst",
    "nki-arch-v4": _DOCS + "nki/guides/architecture/trainium3_arch.rst",
    "nki-dma": _DOCS + "nki/deep-dives/nki-dma-bandwidth-guide.rst",
    "nki-isa-cost": _DOCS + "nki/api/nki.api.shared.rst",
    "nki-matmul-tutorial": _DOCS + "general/nki/tutorials/matrix_multiplication.rst (at commit 4eba310f, "
                           "2025-05-20; the performance table was removed later)",
    # collectives
    "collectives": _DOCS + "neuron-runtime/about/collectives.rst",
    "cc-intranode": _DOCS + "neuron-runtime/explore/intranode-collective-comm.rst",
    "cc-internode": _DOCS + "neuron-runtime/explore/internode-collective-comm.rst",
    # prices (AWS publishes reserved-instance-effective rates in the Neuron docs' benchmark pages)
    "prices-trn1": _DOCS + "about-neuron/benchmarks/trn1/trn1_instance_prices.csv",
    "prices-inf2": _DOCS + "about-neuron/benchmarks/inf2/inf2_instance_prices.csv",
    # the same files held AWS's on-demand rates until 2024-09 (column "On-Demand hourly rate")
    "on-demand-trn1": _DOCS + "general/benchmarks/trn1/trn1_instance_prices.csv (at commit 277baef4, "
                      "2023-09-28; the same on-demand rates since c6ec6484, 2023-02-27)",
    "on-demand-inf2": _DOCS + "general/benchmarks/inf2/inf2_instance_prices.csv (at commit 277baef4, "
                      "2023-09-28)",
    "on-demand-trn1n": "huggingface/optimum-neuron/docs/source/tutorials/fine_tune_bert.mdx (at commit "
                       "05e6822e, 2024-01-10; its price table links aws.amazon.com/ec2/instance-types/trn1)",
    # runtime: host-side cost of one synchronous model invocation
    "vllm-neuron-async": _DOCS + "vllm-neuron/docs/design/framework/async_execution.md (Neuron 2.32, "
                         "'Performance Characteristics')",
    "ec2-trn2": "AWS EC2 Trn2 instance page, https://aws.amazon.com/ec2/instance-types/trn2/",
}

# Dtype names used as keys of the FLOP/s tables (NKI's names; torch's float8_e4m3fn maps to float8_e4m3).
_DTYPE_ALIASES = {"float8_e4m3fn": "float8_e4m3", "bf16": "bfloat16", "fp16": "float16", "fp32": "float32",
                  "tf32": "tfloat32", "fp8": "float8_e4m3"}


def _lookup(table: Mapping[str, float], dtype: str, what: str) -> float:
    key = _DTYPE_ALIASES.get(dtype, dtype)
    if key not in table:
        raise ValueError(f"{what}: AWS publishes no dense rate for {dtype!r}; published: {sorted(table)}")
    return table[key]


@dataclass(frozen=True, eq=False)
class EngineSpec:
    """A Vector, Scalar or GpSimd engine of one NeuronCore.

    Attributes:
        clock_hz: engine clock, Hz.
        elements_per_cycle: elements processed per cycle over all lanes for 4-byte (and any other
            dtype not in ``fast_dtypes``).
        fast_elements_per_cycle: elements per cycle for ``fast_dtypes`` (the wider data path).
        fast_dtypes: dtypes that use the wider data path (empty when there is none).
        fp32_flops: published FP32 FLOP/s of the engine, or None.
        sources: keys of :data:`SOURCES`.
    """

    clock_hz: float
    elements_per_cycle: int
    fast_elements_per_cycle: int
    fast_dtypes: tuple[str, ...]
    fp32_flops: float | None
    sources: tuple[str, ...]

    def elements_per_second(self, dtype: str) -> float:
        """Peak element rate of the engine for ``dtype`` (a dtype name), elements/s."""
        lanes = self.fast_elements_per_cycle if _DTYPE_ALIASES.get(dtype, dtype) in self.fast_dtypes \
            else self.elements_per_cycle
        return lanes * self.clock_hz


@dataclass(frozen=True, eq=False)
class TensorEngineSpec:
    """The Tensor Engine (systolic array) of one NeuronCore.

    Attributes:
        rows, cols: processing elements of the array (contraction x stationary free size).
        clock_hz: engine clock, Hz.
        input_elements_per_cycle: moving-tensor input data path by dtype class, elements/cycle.
        output_elements_per_cycle: output data path, elements/cycle.
        dense_flops: published dense FLOP/s of this core's Tensor Engine by input dtype name.
        mm_init_cycles: minimum matmul initiation interval (MM_INIT_LATENCY), Tensor Engine cycles.
        sources: keys of :data:`SOURCES`.
    """

    rows: int
    cols: int
    clock_hz: float
    input_elements_per_cycle: Mapping[str, int]
    output_elements_per_cycle: int
    dense_flops: Mapping[str, float]
    mm_init_cycles: int
    sources: tuple[str, ...]

    def peak_flops(self, dtype: str) -> float:
        """Dense FLOP/s of this Tensor Engine for input ``dtype``.

        Raises:
            ValueError: naming the dtypes AWS publishes a rate for.
        """
        return _lookup(self.dense_flops, dtype, "Tensor Engine")

    @property
    def array_flops(self) -> float:
        """rows x cols x 2 FLOP x clock: the rate the array's size and clock imply for 2-byte inputs."""
        return self.rows * self.cols * 2 * self.clock_hz


@dataclass(frozen=True, eq=False)
class DmaSpec:
    """The DMA queues that serve one NeuronCore.

    Attributes:
        engines: DMA engines per NeuronCore.
        bytes_per_s_per_engine: peak bandwidth of one engine, bytes/s.
        fixed_latency_s: fixed cost of one transfer (descriptor setup, semaphores), seconds.
        efficiency: fitted fraction of the peak that a kernel's tile transfers sustain (see the note
            above ``_DMA_EFFICIENCY``).
        sources: keys of :data:`SOURCES`.
    """

    engines: int
    bytes_per_s_per_engine: float
    fixed_latency_s: float
    efficiency: float
    sources: tuple[str, ...]

    @property
    def peak_bytes_per_s(self) -> float:
        """engines x per-engine bandwidth, bytes/s."""
        return self.engines * self.bytes_per_s_per_engine

    @property
    def sustained_bytes_per_s(self) -> float:
        """peak x fitted efficiency: the rate the NKI cost model charges, bytes/s."""
        return self.peak_bytes_per_s * self.efficiency


@dataclass(frozen=True, eq=False)
class CoreSpec:
    """One physical NeuronCore.

    Attributes:
        version: ``"NeuronCore-v3"``...; generation: 2, 3, 4.
        tensor, vector, scalar, gpsimd: the four compute engines.
        partitions: SBUF/PSUM partitions (the tile partition limit).
        sbuf_bytes_per_partition, psum_bytes_per_partition: on-chip memory per partition, bytes.
        psum_banks: PSUM banks per partition (one bank holds 512 fp32 per partition).
        min_ii_cycles: minimum instruction initiation interval (MIN_II) of Vector/Scalar/GpSimd
            instructions, engine cycles.
        dma: the DMA queues of the core.
        sources: keys of :data:`SOURCES`.
    """

    version: str
    generation: int
    tensor: TensorEngineSpec
    vector: EngineSpec
    scalar: EngineSpec
    gpsimd: EngineSpec
    partitions: int
    sbuf_bytes_per_partition: int
    psum_bytes_per_partition: int
    psum_banks: int
    min_ii_cycles: int
    dma: DmaSpec
    sources: tuple[str, ...]

    @property
    def sbuf_bytes(self) -> int:
        """SBUF of the core, bytes."""
        return self.sbuf_bytes_per_partition * self.partitions

    @property
    def psum_bytes(self) -> int:
        """PSUM of the core, bytes."""
        return self.psum_bytes_per_partition * self.partitions

    @property
    def psum_bank_bytes(self) -> int:
        """Bytes of one PSUM bank per partition (2 KiB = 512 fp32)."""
        return self.psum_bytes_per_partition // self.psum_banks

    def engine(self, name: str) -> EngineSpec | TensorEngineSpec:
        """The engine called ``name`` ("tensor", "vector", "scalar", "gpsimd").

        Raises:
            ValueError: for another name.
        """
        if name not in ("tensor", "vector", "scalar", "gpsimd"):
            raise ValueError(f"no engine {name!r} on a NeuronCore: use tensor, vector, scalar or gpsimd")
        return getattr(self, name)

    def clock_hz(self, engine: str) -> float:
        """Clock of ``engine`` ("tensor", "vector", "scalar", "gpsimd"), Hz."""
        return self.engine(engine).clock_hz


@dataclass(frozen=True, eq=False)
class ChipSpec:
    """One Neuron chip (device).

    Attributes:
        name: AWS's name (``"Trainium2"``).
        physical_cores: physical NeuronCores on the chip.
        lnc_choices: allowed ``NEURON_LOGICAL_NC_CONFIG`` values; default_lnc: LNC when unset.
        hbm_bytes: device memory of the chip, bytes; hbm_bytes_per_s: its bandwidth, bytes/s.
        dense_flops: published dense FLOP/s of the whole chip by input dtype name (AWS's chip
            figure; see the note above ``PLATFORMS`` for how it relates to the per-core figure).
        dma_engines: DMA engines on the chip; dma_bytes_per_s: published chip DMA bandwidth, bytes/s.
        sources: keys of :data:`SOURCES`.
    """

    name: str
    physical_cores: int
    lnc_choices: tuple[int, ...]
    default_lnc: int
    hbm_bytes: int
    hbm_bytes_per_s: float
    dense_flops: Mapping[str, float]
    dma_engines: int
    dma_bytes_per_s: float
    sources: tuple[str, ...]

    def peak_flops(self, dtype: str) -> float:
        """AWS's published dense FLOP/s of the chip for input ``dtype``.

        Raises:
            ValueError: naming the dtypes AWS publishes a chip rate for.
        """
        return _lookup(self.dense_flops, dtype, f"{self.name} chip")


@dataclass(frozen=True, eq=False)
class InterconnectSpec:
    """How chips talk to each other.

    Attributes:
        link: link generation (``"NeuronLink-v3"``); links_per_chip: links on one chip.
        chip_bytes_per_s: chip-to-chip bandwidth per chip as the chip page states it, bytes/s.
        intra_instance_bytes_per_s: per-chip bandwidth inside one instance, bytes/s, or None.
        inter_instance_bytes_per_s: per-chip NeuronLink bandwidth between the instances of an
            UltraServer, bytes/s, or None.
        topology: how the chips of one instance (or server) are connected.
        collective_cores: CC-Cores per chip that run collectives.
        intra_node_hop_latency_s: (low, high) per-hop latency of ring collectives inside a node,
            seconds, or None where AWS publishes none.
        inter_node_hop_latency_s: per-hop latency of collectives between nodes over EFA, seconds,
            or None.
        efa_bytes_per_s_per_chip: EFA bandwidth per chip, bytes/s, or None.
        sources: keys of :data:`SOURCES`.
    """

    link: str
    links_per_chip: int
    chip_bytes_per_s: float
    intra_instance_bytes_per_s: float | None
    inter_instance_bytes_per_s: float | None
    topology: str
    collective_cores: int
    intra_node_hop_latency_s: tuple[float, float] | None
    inter_node_hop_latency_s: float | None
    efa_bytes_per_s_per_chip: float | None
    sources: tuple[str, ...]


@dataclass(frozen=True, eq=False)
class InstanceSpec:
    """An EC2 instance (or UltraServer) built from one platform's chips.

    Attributes:
        name: EC2 instance type (``"trn2.48xlarge"``) or AWS's name for a multi-instance system.
        chips: Neuron chips; vcpus and host_memory_bytes: host CPU threads and memory (None when
            not published).
        efa_bits_per_s: EFA network bandwidth of the instance, bits/s (None when not published).
        neuronlink_bytes_per_s_per_chip: NeuronLink bandwidth per chip inside the instance, bytes/s
            (None for single-chip instances or when not published).
        on_demand_usd_per_hour: on-demand price, USD/hour, where a source in :data:`SOURCES` states
            it (AWS's price files; Hugging Face's table for trn1n.32xlarge); None otherwise.
        ri_effective_usd_per_hour: reserved-instance-effective price AWS uses on its Neuron
            performance pages, USD/hour, or None.
        sources: keys of :data:`SOURCES`.
    """

    name: str
    chips: int
    vcpus: int | None
    host_memory_bytes: int | None
    efa_bits_per_s: float | None
    neuronlink_bytes_per_s_per_chip: float | None
    on_demand_usd_per_hour: float | None
    ri_effective_usd_per_hour: float | None
    sources: tuple[str, ...]


@dataclass(frozen=True, eq=False)
class RuntimeSpec:
    """What the Neuron runtime costs the host per model invocation.

    Attributes:
        sync_launch_overhead_s: idle time of the hardware between two synchronous invocations of a
            compiled model (dispatch, tensor allocation and Python overheads), seconds; AWS measured
            437 us on trn2 ("vllm-neuron-async"). AWS publishes no per-op figure for eager mode.
        measured_on: the platform the figure was measured on (other platforms reuse it: an assumption).
        sources: keys of :data:`SOURCES`.
    """

    sync_launch_overhead_s: float
    measured_on: str
    sources: tuple[str, ...]


# "in synchronous execution mode, we get an overhead of 437us. This includes dispatch overheads, tensor
# allocations, and Python overheads" (trn2, "vllm-neuron-async"). The only published figure: every platform
# uses it.
NEURON_RUNTIME = RuntimeSpec(sync_launch_overhead_s=437e-6, measured_on="trn2", sources=("vllm-neuron-async",))


@dataclass(frozen=True, eq=False)
class Platform:
    """One platform: chip, NeuronCore, interconnect, instances and the runtime's host overheads.

    Attributes:
        name: platform id of ``TORCH_NEURONX_PLATFORM`` (``"trn2"``).
        chip, core, interconnect, instances, runtime: see the classes of this module.
    """

    name: str
    chip: ChipSpec
    core: CoreSpec
    interconnect: InterconnectSpec
    instances: tuple[InstanceSpec, ...] = field(default=())
    runtime: RuntimeSpec = NEURON_RUNTIME

    @property
    def hbm_bytes_per_physical_core(self) -> int:
        """The chip's HBM divided among its physical NeuronCores, bytes."""
        return self.chip.hbm_bytes // self.chip.physical_cores

    def instance(self, name: str) -> InstanceSpec:
        """The instance called ``name``.

        Raises:
            ValueError: naming the instances of this platform.
        """
        for inst in self.instances:
            if inst.name == name:
                return inst
        raise ValueError(f"{self.name} has no instance {name!r}; known: {[i.name for i in self.instances]}")

    def __repr__(self) -> str:
        return f"Platform({self.name!r}, {self.chip.name}, {self.core.version})"


# ---------------------------------------------------------------------------------------------------
# Peak FLOP/s: the chip figure and the per-core figure disagree.
#
# The chip pages give the chip's dense BF16/FP16/TF32 rate: Trainium 190 TFLOPS ("trainium"),
# Trainium2 667 ("trainium2"), Trainium3 671 ("trainium3"); the instance tables multiply them
# (trn2.48xlarge: 10.7 PFLOPS = 16 x 667, "trn2-arch"). The NeuronCore pages give each core's Tensor
# Engine: NeuronCore-v2 92 TFLOPS ("nki-arch-v2"; "over 90" in "neuron-core-v2"), v3 and v4 79
# ("neuron-core-v3", "neuron-core-v4", "nki-arch-v3/v4"), so a Trainium2 chip has 8 x 79 = 632, not 667,
# and a Trainium 2 x 92 = 184, not 190. Only the per-core figure follows from the published Tensor
# Engine clock: 128 x 128 PEs x 2 FLOP x 2.4 GHz = 78.6 TFLOPS (x 2.8 GHz = 91.8 on v2). AWS's own
# measurement sides with it: the best kernel of the NKI matmul tutorial ran at 78.9 TFLOPS on one
# trn1 NeuronCore and AWS reports that as 85.24 % hardware FLOPs utilisation, i.e. a 92.5 TFLOPS peak,
# not 95 ("nki-matmul-tutorial").
#
# Who uses which: the NKI cost model (FLOPs utilisation of nki.benchmark) and the device properties
# (get_device_properties().bf16_tflops / fp32_tflops = per-core figure x LNC) use the per-core
# figure, ``CoreSpec.tensor.dense_flops``: the cost model times matmuls in Tensor Engine cycles at the
# published clock, so any higher peak would make a fully busy Tensor Engine read below 100 %, and the
# device should report the peak the simulator charges. A roofline estimator should use it as well.
# The chip figures stay in ``ChipSpec.dense_flops`` to compare with AWS's chip and instance tables.
# ---------------------------------------------------------------------------------------------------

# DMA efficiency. The per-engine peaks ("nki-dma": 17 / 23 / 33 bytes per ns for TRN1 / TRN2 / TRN3,
# 16 engines per NeuronCore) are what the engines can do; a kernel's 128-partition tile transfers
# sustain less. AWS's NKI matmul tutorial, measured on trn1.32xlarge ("nki-matmul-tutorial"), implies
# about 100 GB/s for its 128x512 bf16 tile loads (tiled version: 5.37 GB moved in 51.8 ms, hoisted:
# 4.4 GB in 42.96 ms, blocked: 2.2 GB in 22.07 ms); a least-squares fit of bytes over time on those
# three steps gives 102.5 GB/s = 0.377 of the 272 GB/s peak. The cost model applies that fitted factor
# (0.38) on every platform: AWS publishes no trn2/trn3 calibration point, so their sustained DMA rates
# are an assumption.
_DMA_EFFICIENCY = 0.38
_DMA_FIXED_LATENCY_S = 1.3e-6      # ~1300 ns semaphore-to-start per transfer ("nki-dma")
_MIN_II_CYCLES = 64                # "MIN_II is roughly 64 engine cycles" ("nki-isa-cost")
_MM_INIT_CYCLES = 64               # MM_INIT_LATENCY, 64 Tensor Engine cycles ("nki-arch-v2")
_PARTITIONS = 128                  # SBUF and PSUM partitions, all generations ("nki-arch-v2", v3, v4)
_PSUM_PER_PARTITION = 16 * KiB     # 2 MiB PSUM = 128 x 16 KiB, unchanged in v3 and v4 ("nki-arch-v2/v3/v4")
_PSUM_BANKS = 8                    # 8 banks of 2 KiB (512 fp32) per partition ("nki-arch-v2")

_BF16_CLASS = ("bfloat16", "float16", "tfloat32")
_FP8 = ("float8_e4m3", "float8_e5m2")

NEURON_CORE_V2 = CoreSpec(
    version="NeuronCore-v2", generation=2,
    tensor=TensorEngineSpec(
        rows=128, cols=128,
        clock_hz=2.8e9,                                   # "nki-arch-v2" data-path table
        input_elements_per_cycle={"bfloat16": 2 * 128, "float8_e4m3": 2 * 128, "float32": 2 * 128},
        output_elements_per_cycle=128,
        # "BF16, FP16, TF32, and cFP8 ... maximum throughput of 92 TFLOPS, as well as 23 TFLOPS for FP32"
        dense_flops={**dict.fromkeys(_BF16_CLASS + _FP8, 92e12), "float32": 23e12},
        mm_init_cycles=_MM_INIT_CYCLES,
        sources=("nki-arch-v2", "neuron-core-v2")),
    # Vector, Scalar and GpSimd: "128 input/output" elements/cycle at 1.12 / 1.4 / 1.4 GHz ("nki-arch-v2");
    # FP32 2.3 (Vector) and 2.9 (Scalar) TFLOPS ("neuron-core-v2").
    vector=EngineSpec(clock_hz=1.12e9, elements_per_cycle=128, fast_elements_per_cycle=128,
                      fast_dtypes=(), fp32_flops=2.3e12, sources=("nki-arch-v2", "neuron-core-v2")),
    scalar=EngineSpec(clock_hz=1.4e9, elements_per_cycle=128, fast_elements_per_cycle=128,
                      fast_dtypes=(), fp32_flops=2.9e12, sources=("nki-arch-v2", "neuron-core-v2")),
    gpsimd=EngineSpec(clock_hz=1.4e9, elements_per_cycle=128, fast_elements_per_cycle=128,
                      fast_dtypes=(), fp32_flops=None, sources=("nki-arch-v2",)),
    partitions=_PARTITIONS,
    sbuf_bytes_per_partition=192 * KiB,                   # 24 MiB = 128 x 192 KiB ("nki-arch-v2")
    psum_bytes_per_partition=_PSUM_PER_PARTITION, psum_banks=_PSUM_BANKS,
    min_ii_cycles=_MIN_II_CYCLES,
    # 17 bytes/ns per engine, 16 engines ("nki-dma"); the v2 NKI guide says 27 GiB/s per engine instead.
    dma=DmaSpec(engines=16, bytes_per_s_per_engine=17e9, fixed_latency_s=_DMA_FIXED_LATENCY_S,
                efficiency=_DMA_EFFICIENCY, sources=("nki-dma", "nki-arch-v2", "nki-matmul-tutorial")),
    sources=("nki-arch-v2", "neuron-core-v2", "nki-isa-cost"),
)

NEURON_CORE_V3 = CoreSpec(
    version="NeuronCore-v3", generation=3,
    tensor=TensorEngineSpec(
        rows=128, cols=128,
        clock_hz=2.4e9,                                   # "nki-arch-v3" data-path table
        # 2x128 dense BF16/FP16, 4x128 dense FP8 (double-FP8 mode, contraction 256), 1x128 out
        input_elements_per_cycle={"bfloat16": 2 * 128, "float8_e4m3": 4 * 128, "float32": 2 * 128},
        output_elements_per_cycle=128,
        # "158 FP8, 79 BF16/FP16/TF32 and 20 FP32 dense TFLOPS" ("nki-arch-v3", "neuron-core-v3")
        dense_flops={**dict.fromkeys(_BF16_CLASS, 79e12), **dict.fromkeys(_FP8, 158e12), "float32": 20e12},
        mm_init_cycles=_MM_INIT_CYCLES,
        sources=("nki-arch-v3", "neuron-core-v3")),
    # Vector 0.96 GHz, 512 BF16/FP16 or 256 other elements/cycle; Scalar 1.2 GHz, 128; GpSimd 1.2 GHz
    # ("nki-arch-v3"). The v3 table leaves the GpSimd width empty: 128, as on v2 and v4, is assumed.
    # FP32: Vector 1.0, Scalar 1.2 TFLOPS ("neuron-core-v3").
    vector=EngineSpec(clock_hz=0.96e9, elements_per_cycle=256, fast_elements_per_cycle=512,
                      fast_dtypes=("bfloat16", "float16"), fp32_flops=1.0e12,
                      sources=("nki-arch-v3", "neuron-core-v3")),
    scalar=EngineSpec(clock_hz=1.2e9, elements_per_cycle=128, fast_elements_per_cycle=128,
                      fast_dtypes=(), fp32_flops=1.2e12,
                      sources=("nki-arch-v3", "neuron-core-v3")),
    gpsimd=EngineSpec(clock_hz=1.2e9, elements_per_cycle=128, fast_elements_per_cycle=128,
                      fast_dtypes=(), fp32_flops=None, sources=("nki-arch-v3",)),
    partitions=_PARTITIONS,
    sbuf_bytes_per_partition=224 * KiB,                   # 28 MiB = 128 x 224 KiB ("nki-arch-v3")
    psum_bytes_per_partition=_PSUM_PER_PARTITION, psum_banks=_PSUM_BANKS,
    min_ii_cycles=_MIN_II_CYCLES,
    dma=DmaSpec(engines=16, bytes_per_s_per_engine=23e9, fixed_latency_s=_DMA_FIXED_LATENCY_S,
                efficiency=_DMA_EFFICIENCY, sources=("nki-dma", "nki-arch-v3", "nki-matmul-tutorial")),
    sources=("nki-arch-v3", "neuron-core-v3", "nki-isa-cost"),
)

NEURON_CORE_V4 = CoreSpec(
    version="NeuronCore-v4", generation=4,
    tensor=TensorEngineSpec(
        rows=128, cols=128,
        clock_hz=2.4e9,                                   # "nki-arch-v4" data-path table
        # 8x128 MXFP8 dense input, 2x128 non-MXFP8 dense input, 1x128 out ("nki-arch-v4")
        input_elements_per_cycle={"bfloat16": 2 * 128, "float8_e4m3": 2 * 128, "mxfp8": 8 * 128,
                                  "float32": 2 * 128},
        output_elements_per_cycle=128,
        # "315 MXFP8/MXFP4 TFLOPS ... 79 BF16/FP16/TF32 and 20 FP32" ("nki-arch-v4", "neuron-core-v4").
        # Plain FP8 (e4m3/e5m2) is not an MX type, so it takes the 2x128 non-MXFP8 path: 79 [derived].
        dense_flops={**dict.fromkeys(_BF16_CLASS + _FP8, 79e12), "mxfp8": 315e12, "mxfp4": 315e12,
                     "float32": 20e12},
        mm_init_cycles=_MM_INIT_CYCLES,
        sources=("nki-arch-v4", "neuron-core-v4")),
    # Vector 1.2 GHz, 512 BF16/FP16/FP8 or 256 other; Scalar 1.2 GHz, 256 BF16/FP16/FP8 or 128 other;
    # GpSimd 1.2 GHz, 128 ("nki-arch-v4"). FP32: Vector 1.2, Scalar 1.2 TFLOPS ("neuron-core-v4").
    vector=EngineSpec(clock_hz=1.2e9, elements_per_cycle=256, fast_elements_per_cycle=512,
                      fast_dtypes=("bfloat16", "float16") + _FP8, fp32_flops=1.2e12,
                      sources=("nki-arch-v4", "neuron-core-v4")),
    scalar=EngineSpec(clock_hz=1.2e9, elements_per_cycle=128, fast_elements_per_cycle=256,
                      fast_dtypes=("bfloat16", "float16") + _FP8, fp32_flops=1.2e12,
                      sources=("nki-arch-v4", "neuron-core-v4")),
    gpsimd=EngineSpec(clock_hz=1.2e9, elements_per_cycle=128, fast_elements_per_cycle=128,
                      fast_dtypes=(), fp32_flops=None, sources=("nki-arch-v4",)),
    partitions=_PARTITIONS,
    sbuf_bytes_per_partition=256 * KiB,                   # 32 MiB over 128 partitions ("nki-arch-v4") [derived]
    psum_bytes_per_partition=_PSUM_PER_PARTITION, psum_banks=_PSUM_BANKS,
    min_ii_cycles=_MIN_II_CYCLES,
    dma=DmaSpec(engines=16, bytes_per_s_per_engine=33e9, fixed_latency_s=_DMA_FIXED_LATENCY_S,
                efficiency=_DMA_EFFICIENCY, sources=("nki-dma", "nki-matmul-tutorial")),
    sources=("nki-arch-v4", "neuron-core-v4", "nki-isa-cost"),
)

_TRAINIUM = ChipSpec(
    name="Trainium", physical_cores=2,
    lnc_choices=(1,), default_lnc=1,            # LNC applies only to Trn2 and Trn3 ("lnc")
    hbm_bytes=32 * GiB,
    hbm_bytes_per_s=820 * GiB,                  # "820 GiB/sec" ("trainium"); "820 GB/s" in "nki-arch-v2"
    # "190 FP16/BF16/cFP8/TF32 TFLOPS, and 47.5 FP32" ("trainium"; 191 and 48 in the "trainium2" table)
    dense_flops={**dict.fromkeys(_BF16_CLASS + _FP8, 190e12), "float32": 47.5e12},
    dma_engines=32,                             # "nki-arch-v2"
    dma_bytes_per_s=1e12,                       # "1 TB/sec of DMA bandwidth" ("trainium")
    sources=("trainium", "nki-arch-v2", "lnc"),
)

_GBPS = 1e9 / 8                                  # one gigabit per second, in bytes/s

PLATFORMS: dict[str, Platform] = {
    "trn1": Platform(
        name="trn1",
        chip=_TRAINIUM,
        core=NEURON_CORE_V2,
        interconnect=InterconnectSpec(
            link="NeuronLink-v2", links_per_chip=4,             # "nki-arch-v2"
            chip_bytes_per_s=384e9,                              # "trainium2" comparison table, GB/s/chip
            intra_instance_bytes_per_s=384 * GiB,                # trn1.32xlarge, GiB/s per device ("trn1-arch")
            inter_instance_bytes_per_s=None,
            topology="2D torus of 16 chips (trn1.32xlarge, trn1n.32xlarge)",   # "trn1-arch"
            collective_cores=6,                                  # "trainium2" table, "nki-arch-v2"
            # The collective pages describe the 2D-torus (Ring/KangaRing "about 1-2 us" per hop) and EFA
            # ("~15us" per hop) algorithms of Trainium instances, Trn1 included ("Flat Ring on Trn1").
            intra_node_hop_latency_s=(1e-6, 2e-6), inter_node_hop_latency_s=15e-6,
            efa_bytes_per_s_per_chip=800 * _GBPS / 16,           # trn1.32xlarge: 800 Gbps, 16 chips [derived]
            sources=("trainium2", "trn1-arch", "nki-arch-v2", "cc-intranode", "cc-internode"),
        ),
        instances=(
            InstanceSpec("trn1.2xlarge", chips=1, vcpus=8, host_memory_bytes=32 * GiB,
                         efa_bits_per_s=25e9,                    # "up-to 25" Gbps
                         neuronlink_bytes_per_s_per_chip=None,
                         on_demand_usd_per_hour=1.34, ri_effective_usd_per_hour=0.512,
                         sources=("trn1-arch", "prices-trn1", "on-demand-trn1")),
            InstanceSpec("trn1.32xlarge", chips=16, vcpus=128, host_memory_bytes=512 * GiB,
                         efa_bits_per_s=800e9, neuronlink_bytes_per_s_per_chip=384 * GiB,
                         on_demand_usd_per_hour=21.50, ri_effective_usd_per_hour=8.197,
                         sources=("trn1-arch", "prices-trn1", "on-demand-trn1")),
            InstanceSpec("trn1n.32xlarge", chips=16, vcpus=128, host_memory_bytes=512 * GiB,
                         efa_bits_per_s=1600e9, neuronlink_bytes_per_s_per_chip=768 * GiB,
                         on_demand_usd_per_hour=24.78, ri_effective_usd_per_hour=None,
                         sources=("trn1-arch", "on-demand-trn1n")),
        ),
    ),
    "trn2": Platform(
        name="trn2",
        chip=ChipSpec(
            name="Trainium2", physical_cores=8,
            lnc_choices=(1, 2), default_lnc=2,                   # "LNC=2 (default)" ("lnc")
            hbm_bytes=96 * GiB,
            hbm_bytes_per_s=2.9e12,                              # "trainium2"; "3TB/s" in "nki-arch-v3"
            # "1,299 FP8 TFLOPS, 667 BF16/FP16/TF32 TFLOPS, 181 FP32 TFLOPS" ("trainium2")
            dense_flops={**dict.fromkeys(_BF16_CLASS, 667e12), **dict.fromkeys(_FP8, 1299e12),
                         "float32": 181e12},
            dma_engines=128,                                     # "nki-arch-v3"
            dma_bytes_per_s=3.5e12,                              # "trainium2"
            sources=("trainium2", "nki-arch-v3", "lnc"),
        ),
        core=NEURON_CORE_V3,
        interconnect=InterconnectSpec(
            link="NeuronLink-v3", links_per_chip=4,             # "nki-arch-v3"
            chip_bytes_per_s=1.28e12,                            # "1.28 TB/sec bandwidth per chip" ("trainium2")
            intra_instance_bytes_per_s=1024e9,                   # "trn2-arch" table, GB/s per chip
            inter_instance_bytes_per_s=256e9,                    # Trn2 UltraServer ("trn2-arch")
            topology="4x4 2D torus of 16 chips (trn2.48xlarge); 3D torus across a Trn2 UltraServer",
            collective_cores=16,                                 # "trainium2"; 20 in "nki-arch-v3"
            intra_node_hop_latency_s=(1e-6, 2e-6),               # Ring/KangaRing "about 1-2 us" ("cc-intranode")
            inter_node_hop_latency_s=15e-6,                      # "~15us" per hop over EFA ("cc-internode")
            efa_bytes_per_s_per_chip=200 * _GBPS,                # "200Gbps EFA" per chip ("collectives")
            sources=("trainium2", "trn2-arch", "nki-arch-v3", "collectives", "cc-intranode", "cc-internode"),
        ),
        instances=(
            InstanceSpec("trn2.3xlarge", chips=1, vcpus=None, host_memory_bytes=None, efa_bits_per_s=None,
                         neuronlink_bytes_per_s_per_chip=None,
                         on_demand_usd_per_hour=None, ri_effective_usd_per_hour=None,
                         sources=("ec2-trn2",)),
            InstanceSpec("trn2.48xlarge", chips=16, vcpus=192, host_memory_bytes=2048 * GiB,
                         efa_bits_per_s=3200e9, neuronlink_bytes_per_s_per_chip=1024e9,
                         on_demand_usd_per_hour=None, ri_effective_usd_per_hour=None,
                         sources=("trn2-arch",)),
            InstanceSpec("trn2u.48xlarge", chips=16, vcpus=192, host_memory_bytes=2048 * GiB,
                         efa_bits_per_s=3200e9, neuronlink_bytes_per_s_per_chip=1024e9,
                         on_demand_usd_per_hour=None, ri_effective_usd_per_hour=None,
                         sources=("trn2-arch",)),
            # four trn2u.48xlarge joined by NeuronLink-v3 ("trn2-arch")
            InstanceSpec("Trn2 UltraServer", chips=64, vcpus=768, host_memory_bytes=8192 * GiB,
                         efa_bits_per_s=3200e9, neuronlink_bytes_per_s_per_chip=1024e9,
                         on_demand_usd_per_hour=None, ri_effective_usd_per_hour=None,
                         sources=("trn2-arch",)),
        ),
    ),
    "trn3": Platform(
        name="trn3",
        chip=ChipSpec(
            name="Trainium3", physical_cores=8,
            # "LNC applies only to Trn2 and Trn3" ("lnc"); the default of 2 is stated for Trainium2 and
            # assumed for Trainium3.
            lnc_choices=(1, 2), default_lnc=2,
            hbm_bytes=144 * GiB,
            hbm_bytes_per_s=4.9e12,                              # "trainium3"; "4.7 TB/s" in "nki-arch-v4"
            # "2,517 MXFP8/MXFP4, 671 BF16/FP16/TF32, 183 FP32 TFLOPS" ("trainium3"); AWS states no
            # chip rate for plain (non-MX) FP8.
            dense_flops={**dict.fromkeys(_BF16_CLASS, 671e12), "mxfp8": 2517e12, "mxfp4": 2517e12,
                         "float32": 183e12},
            dma_engines=128,                                     # "nki-arch-v4"
            dma_bytes_per_s=4.9e12,                              # "trainium3"
            sources=("trainium3", "nki-arch-v4", "lnc"),
        ),
        core=NEURON_CORE_V4,
        interconnect=InterconnectSpec(
            link="NeuronLink-v4", links_per_chip=4,             # "nki-arch-v4"
            chip_bytes_per_s=2.56e12,                            # "trainium3"; 2,048 GiB/s per device in "trn3-arch"
            intra_instance_bytes_per_s=256e9,                    # intra-server PCIe switch, per chip ("trn3-arch")
            inter_instance_bytes_per_s=320e9,                    # inter-server (within a rack), per chip ("trn3-arch")
            topology="all-to-all through NeuronSwitch-v1 (PCIe Gen6 switch fabric); 128 GB/s per chip "
                     "between racks",                            # "trn3-arch"
            collective_cores=16,                                 # "trainium3"; 20 in "nki-arch-v4"
            intra_node_hop_latency_s=None, inter_node_hop_latency_s=None,
            efa_bytes_per_s_per_chip=12800 * _GBPS / 64,         # Gen1 UltraServer: 12,800 Gbps, 64 chips [derived]
            sources=("trainium3", "trn3-arch", "nki-arch-v4"),
        ),
        instances=(
            # AWS names Trn3 systems, not instance types: Gen1 = 4 servers x 16 chips, Gen2 = 36 x 4.
            InstanceSpec("Trn3 Gen1 UltraServer", chips=64, vcpus=768, host_memory_bytes=8192 * GiB,
                         efa_bits_per_s=12800e9, neuronlink_bytes_per_s_per_chip=2048 * GiB,
                         on_demand_usd_per_hour=None, ri_effective_usd_per_hour=None,
                         sources=("trn3-arch",)),
            InstanceSpec("Trn3 Gen2 UltraServer", chips=144, vcpus=2304, host_memory_bytes=27648 * GiB,
                         efa_bits_per_s=28800e9, neuronlink_bytes_per_s_per_chip=2048 * GiB,
                         on_demand_usd_per_hour=None, ri_effective_usd_per_hour=None,
                         sources=("trn3-arch",)),
        ),
    ),
    "inf2": Platform(
        name="inf2",
        chip=ChipSpec(
            name="Inferentia2", physical_cores=2,
            lnc_choices=(1,), default_lnc=1,                     # LNC applies only to Trn2 and Trn3 ("lnc")
            hbm_bytes=32 * GiB,
            hbm_bytes_per_s=820 * GiB,                           # "inferentia2"
            dense_flops={**dict.fromkeys(_BF16_CLASS + _FP8, 190e12), "float32": 47.5e12},   # "inferentia2"
            dma_engines=32,                                      # "nki-arch-v2" (Trainium and Inferentia2)
            dma_bytes_per_s=1e12,                                # "inferentia2"
            sources=("inferentia2", "nki-arch-v2", "lnc"),
        ),
        core=NEURON_CORE_V2,                                     # the same NeuronCore-v2 as Trainium
        interconnect=InterconnectSpec(
            link="NeuronLink-v2", links_per_chip=2,             # "nki-arch-v2"
            chip_bytes_per_s=192 * GiB,                          # GiB/s per chip ("inf2-arch")
            intra_instance_bytes_per_s=192 * GiB,
            inter_instance_bytes_per_s=None,
            topology="NeuronLink-v2 between the chips of inf2.24xlarge and inf2.48xlarge",   # "inf2-arch"
            collective_cores=6,                                  # "nki-arch-v2"
            intra_node_hop_latency_s=None, inter_node_hop_latency_s=None,
            efa_bytes_per_s_per_chip=None,
            sources=("inf2-arch", "nki-arch-v2"),
        ),
        instances=(
            InstanceSpec("inf2.xlarge", chips=1, vcpus=4, host_memory_bytes=16 * GiB, efa_bits_per_s=None,
                         neuronlink_bytes_per_s_per_chip=None, on_demand_usd_per_hour=0.758,
                         ri_effective_usd_per_hour=0.328, sources=("inf2-arch", "prices-inf2", "on-demand-inf2")),
            InstanceSpec("inf2.8xlarge", chips=1, vcpus=32, host_memory_bytes=128 * GiB, efa_bits_per_s=None,
                         neuronlink_bytes_per_s_per_chip=None, on_demand_usd_per_hour=1.97,
                         ri_effective_usd_per_hour=0.850, sources=("inf2-arch", "prices-inf2", "on-demand-inf2")),
            InstanceSpec("inf2.24xlarge", chips=6, vcpus=96, host_memory_bytes=384 * GiB, efa_bits_per_s=None,
                         neuronlink_bytes_per_s_per_chip=192 * GiB, on_demand_usd_per_hour=6.49,
                         ri_effective_usd_per_hour=2.804, sources=("inf2-arch", "prices-inf2", "on-demand-inf2")),
            InstanceSpec("inf2.48xlarge", chips=12, vcpus=192, host_memory_bytes=768 * GiB, efa_bits_per_s=None,
                         neuronlink_bytes_per_s_per_chip=192 * GiB, on_demand_usd_per_hour=12.981,
                         ri_effective_usd_per_hour=5.608, sources=("inf2-arch", "prices-inf2", "on-demand-inf2")),
        ),
    ),
}
"""Platform id -> :class:`Platform`. On-demand prices (``on_demand_usd_per_hour``, USD per instance-hour,
Linux; AWS's list prices, region not stated by the sources) are those AWS published in the Neuron
documentation's price files until they switched to reserved-instance-effective rates (trn1, inf2), and
trn1n.32xlarge's from Hugging Face's tutorial table; AWS publishes no Trn2 or Trn3 on-demand price in any
source cited here, so those are None (estimators take a price from the user). Prices change: the dates are
in :data:`SOURCES`. ``ri_effective_usd_per_hour`` is what AWS's Neuron performance pages use for cost per
inference."""


def get_platform(name: str) -> Platform:
    """The :class:`Platform` called ``name`` (case and surrounding spaces ignored).

    Raises:
        ValueError: naming the known platforms.
    """
    key = str(name).strip().lower()
    if key not in PLATFORMS:
        raise ValueError(f"unknown platform {name!r}: use one of {', '.join(PLATFORMS)}")
    return PLATFORMS[key]


def platform_from_env(env: Mapping[str, str] | None = None) -> Platform:
    """The platform ``TORCH_NEURONX_PLATFORM`` names in ``env`` (default ``os.environ``, read now),
    ``trn2`` when unset or empty.

    Raises:
        ValueError: naming the variable and the known platforms.
    """
    env = os.environ if env is None else env
    raw = (env.get(PLATFORM_VARIABLE) or "").strip() or DEFAULT_PLATFORM
    if raw.lower() not in PLATFORMS:
        raise ValueError(f"{PLATFORM_VARIABLE}={raw!r} is not a platform: use one of {', '.join(PLATFORMS)}")
    return PLATFORMS[raw.lower()]
