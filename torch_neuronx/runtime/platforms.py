"""Hardware numbers of each Trainium generation the software NeuronCore models.

One row per platform; every number cites the AWS Neuron documentation page it
comes from (awsdocs-neuron.readthedocs-hosted.com, "About Neuron →
Architecture → Neuron hardware"). Bytes are binary (GiB = 2**30 bytes), as AWS
states device memory in GiB.
"""
from __future__ import annotations

from dataclasses import dataclass

GiB = 1 << 30


@dataclass(frozen=True)
class Platform:
    """One Trainium generation.

    Attributes:
        name: platform id used by ``TORCH_NEURONX_PLATFORM`` (``"trn1"``...).
        chip: marketing name of the chip.
        core_version: NeuronCore generation (``"NeuronCore-v3"``...).
        physical_cores_per_chip: physical NeuronCores on one chip.
        lnc_choices: allowed ``NEURON_LOGICAL_NC_CONFIG`` values.
        default_lnc: LNC used when the variable is unset.
        hbm_bytes_per_chip: device memory of one chip, bytes.
        hbm_bandwidth_bytes_per_s: device memory bandwidth of one chip, bytes/s.
        bf16_tflops_per_chip: dense BF16/FP16 TFLOPS of one chip.
        fp8_tflops_per_chip: dense FP8 TFLOPS of one chip.
        fp32_tflops_per_chip: FP32 TFLOPS of one chip.
        sbuf_bytes_per_core: on-chip SBUF of one physical NeuronCore, bytes.
        psum_bytes_per_core: PSUM of one physical NeuronCore, bytes.
        source: the AWS page the numbers come from.
    """

    name: str
    chip: str
    core_version: str
    physical_cores_per_chip: int
    lnc_choices: tuple[int, ...]
    default_lnc: int
    hbm_bytes_per_chip: int
    hbm_bandwidth_bytes_per_s: float
    bf16_tflops_per_chip: float
    fp8_tflops_per_chip: float
    fp32_tflops_per_chip: float
    sbuf_bytes_per_core: int
    psum_bytes_per_core: int
    source: str


PLATFORMS: dict[str, Platform] = {
    "trn1": Platform(
        name="trn1",
        chip="Trainium",
        core_version="NeuronCore-v2",
        physical_cores_per_chip=2,
        lnc_choices=(1,),  # LNC exists from Trainium2 on (logical-neuroncore-config page)
        default_lnc=1,
        hbm_bytes_per_chip=32 * GiB,
        hbm_bandwidth_bytes_per_s=820 * GiB,
        bf16_tflops_per_chip=190.0,
        fp8_tflops_per_chip=191.0,
        fp32_tflops_per_chip=47.5,
        sbuf_bytes_per_core=24 * (1 << 20),
        psum_bytes_per_core=2 * (1 << 20),
        source="AWS Neuron docs, Trainium Architecture (arch/neuron-hardware/trainium)",
    ),
    "trn2": Platform(
        name="trn2",
        chip="Trainium2",
        core_version="NeuronCore-v3",
        physical_cores_per_chip=8,
        lnc_choices=(1, 2),
        default_lnc=2,
        hbm_bytes_per_chip=96 * GiB,
        hbm_bandwidth_bytes_per_s=2.9e12,
        bf16_tflops_per_chip=667.0,
        fp8_tflops_per_chip=1299.0,
        fp32_tflops_per_chip=181.0,
        sbuf_bytes_per_core=28 * (1 << 20),
        psum_bytes_per_core=2 * (1 << 20),
        source="AWS Neuron docs, Trainium2 Architecture (arch/neuron-hardware/trainium2)",
    ),
    "trn3": Platform(
        name="trn3",
        chip="Trainium3",
        core_version="NeuronCore-v4",
        physical_cores_per_chip=8,
        lnc_choices=(1, 2),
        default_lnc=2,
        hbm_bytes_per_chip=144 * GiB,
        hbm_bandwidth_bytes_per_s=4.9e12,
        bf16_tflops_per_chip=671.0,
        fp8_tflops_per_chip=2517.0,  # MXFP8/MXFP4
        fp32_tflops_per_chip=183.0,
        sbuf_bytes_per_core=32 * (1 << 20),
        psum_bytes_per_core=2 * (1 << 20),
        source="AWS Neuron docs, Trainium3 Architecture (arch/neuron-hardware/trainium3, 12/2025)",
    ),
}
