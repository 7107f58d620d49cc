"""``torch.neuron.get_device_properties``: what one logical NeuronCore is.

Every hardware number comes from the platform table :data:`torch_neuronx.runtime.platforms.PLATFORMS`
(the row of the topology's platform), the same table the NKI simulator and its cost model read.
"""
from __future__ import annotations

from dataclasses import dataclass

from .. import _state
from .._device_index import DeviceLike, device_index
from ..runtime.platforms import SOURCES


@dataclass(frozen=True)
class NeuronDeviceProperties:
    """Properties of one visible logical NeuronCore (CUDA-shaped).

    Attributes:
        name: e.g. ``"Trainium2 NeuronCore-v3 (LNC=2)"``.
        platform: ``"trn1"`` | ``"trn2"`` | ``"trn3"`` | ``"inf2"``.
        core_version: NeuronCore generation.
        lnc: physical NeuronCores in this logical core.
        physical_cores: same as ``lnc``.
        global_core_id: the core's id on the instance (before visibility renumbering).
        chip: index of the chip holding it.
        total_memory: HBM capacity in bytes (``TORCH_NEURONX_HBM_PER_CORE`` or
            the chip's HBM divided among its logical cores).
        hbm_bandwidth: the chip's HBM bandwidth shared by its logical cores, bytes/s.
        sbuf_bytes: on-chip SBUF of the logical core (LNC physical cores), bytes.
        psum_bytes: PSUM of the logical core, bytes.
        bf16_tflops: dense BF16 TFLOPS of the logical core: the Tensor Engine peak of one physical
            core (AWS NeuronCore pages, e.g. 79 on NeuronCore-v3) times LNC. AWS's chip pages give a
            higher chip figure (667 per Trainium2 chip, not 8 x 79); the platform table explains why
            the per-core figure is the one used, by this and by the NKI cost model.
        fp32_tflops: FP32 TFLOPS of the logical core, counted the same way.
        logical_cores_per_chip, chips, visible_cores: topology counts.
        source: the AWS pages the chip and NeuronCore numbers come from.
    """

    name: str
    platform: str
    core_version: str
    lnc: int
    physical_cores: int
    global_core_id: int
    chip: int
    total_memory: int
    hbm_bandwidth: float
    sbuf_bytes: int
    psum_bytes: int
    bf16_tflops: float
    fp32_tflops: float
    logical_cores_per_chip: int
    chips: int
    visible_cores: int
    source: str
    is_software_model: bool = True

    def __repr__(self) -> str:
        return (
            f"NeuronDeviceProperties(name='{self.name}', platform='{self.platform}', "
            f"lnc={self.lnc}, global_core_id={self.global_core_id}, chip={self.chip}, "
            f"total_memory={self.total_memory // (1 << 20)}MB, visible_cores={self.visible_cores})"
        )


def get_device_properties(device: DeviceLike = None) -> NeuronDeviceProperties:
    """Properties of ``device`` (``int``, ``"neuron:1"``, ``torch.device``; default current).

    Raises:
        RuntimeError: for an index that is not a visible device.
        TopologyError: when the environment describing the topology is invalid.
    """
    topo = _state.require_topology()
    index = device_index(device)
    p = topo.platform
    per_chip = topo.logical_cores_per_chip
    core = topo.visible_cores[index]
    share = topo.lnc / p.chip.physical_cores
    tensor = p.core.tensor
    return NeuronDeviceProperties(
        name=f"{p.chip.name} {p.core.version} (LNC={topo.lnc})",
        platform=p.name,
        core_version=p.core.version,
        lnc=topo.lnc,
        physical_cores=topo.lnc,
        global_core_id=core,
        chip=core // per_chip,
        total_memory=topo.hbm_bytes_per_core,
        hbm_bandwidth=p.chip.hbm_bytes_per_s * share,
        sbuf_bytes=p.core.sbuf_bytes * topo.lnc,
        psum_bytes=p.core.psum_bytes * topo.lnc,
        bf16_tflops=tensor.peak_flops("bfloat16") * topo.lnc / 1e12,
        fp32_tflops=tensor.peak_flops("float32") * topo.lnc / 1e12,
        logical_cores_per_chip=per_chip,
        chips=topo.chips,
        visible_cores=topo.device_count,
        source="; ".join(SOURCES[k] for k in dict.fromkeys(p.chip.sources[:1] + p.core.sources[:1])),
    )


def get_device_name(device: DeviceLike = None) -> str:
    """Name of ``device``, e.g. ``"Trainium2 NeuronCore-v3 (LNC=2)"``."""
    return get_device_properties(device).name


def get_device_capability(device: DeviceLike = None) -> tuple[int, int]:
    """(major, minor) of the NeuronCore generation: (3, 0) for NeuronCore-v3."""
    props = get_device_properties(device)
    return (int(props.core_version.rsplit("v", 1)[-1]), 0)
