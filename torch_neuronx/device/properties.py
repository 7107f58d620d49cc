"""``torch.neuron.get_device_properties``: what one logical NeuronCore is."""
from __future__ import annotations

from dataclasses import dataclass

from .. import _state
from .._device_index import DeviceLike, device_index


@dataclass(frozen=True)
class NeuronDeviceProperties:
    """Properties of one visible logical NeuronCore (CUDA-shaped).

    Attributes:
        name: e.g. ``"Trainium2 NeuronCore-v3 (LNC=2)"``.
        platform: ``"trn1"`` | ``"trn2"`` | ``"trn3"``.
        core_version: NeuronCore generation.
        lnc: physical NeuronCores in this logical core.
        physical_cores: same as ``lnc``.
        global_core_id: the core's id on the instance (before visibility renumbering).
        chip: index of the chip holding it.
        total_memory: HBM capacity in bytes (``TORCH_NEURONX_HBM_PER_CORE`` or
            the chip's HBM divided among its logical cores).
        hbm_bandwidth: HBM bandwidth share of this core in bytes/s.
        sbuf_bytes: on-chip SBUF of the logical core, bytes.
        psum_bytes: PSUM of the logical core, bytes.
        bf16_tflops: dense BF16 TFLOPS of the logical core.
        fp32_tflops: FP32 TFLOPS of the logical core.
        logical_cores_per_chip, chips, visible_cores: topology counts.
        source: AWS page the hardware numbers come from.
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
    share = topo.lnc / p.physical_cores_per_chip
    return NeuronDeviceProperties(
        name=f"{p.chip} {p.core_version} (LNC={topo.lnc})",
        platform=p.name,
        core_version=p.core_version,
        lnc=topo.lnc,
        physical_cores=topo.lnc,
        global_core_id=core,
        chip=core // per_chip,
        total_memory=topo.hbm_bytes_per_core,
        hbm_bandwidth=p.hbm_bandwidth_bytes_per_s * share,
        sbuf_bytes=p.sbuf_bytes_per_core * topo.lnc,
        psum_bytes=p.psum_bytes_per_core * topo.lnc,
        bf16_tflops=p.bf16_tflops_per_chip * share,
        fp32_tflops=p.fp32_tflops_per_chip * share,
        logical_cores_per_chip=per_chip,
        chips=topo.chips,
        visible_cores=topo.device_count,
        source=p.source,
    )


def get_device_name(device: DeviceLike = None) -> str:
    """Name of ``device``, e.g. ``"Trainium2 NeuronCore-v3 (LNC=2)"``."""
    return get_device_properties(device).name


def get_device_capability(device: DeviceLike = None) -> tuple[int, int]:
    """(major, minor) of the NeuronCore generation: (3, 0) for NeuronCore-v3."""
    props = get_device_properties(device)
    return (int(props.core_version.rsplit("v", 1)[-1]), 0)
