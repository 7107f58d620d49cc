"""The roofline on hand-computed cases: a matmul, an elementwise op, an all-reduce.

Each expected value is computed here, by hand, from the platform table's published numbers and the
fitted constants; the estimator must reproduce it exactly (to float rounding).
"""
import math

import pytest
import torch
import torch.distributed as dist

import torch_neuronx
from torch_neuronx.estimate import shape_only
from torch_neuronx.estimate.calibration import default_constants
from torch_neuronx.estimate.roofline import matmul_cycles
from torch_neuronx.runtime.platforms import PLATFORMS

TRN2 = PLATFORMS["trn2"]
C = default_constants()
LNC = 2
HBM_PER_CORE = TRN2.chip.hbm_bytes_per_s * LNC / TRN2.chip.physical_cores       # 725 GB/s at LNC=2
LAUNCH = TRN2.runtime.sync_launch_overhead_s


def test_tile_cycles_by_hand():
    # [256, 512] @ [512, 1024]: 4 contraction passes x 8 stationary tiles (128 columns) x max(64, 256)
    assert matmul_cycles(256, 512, 1024) == 4 * 8 * 256
    # a decode-shaped matmul [1, 4096] @ [4096, 1024]: 32 passes x 8 tiles x max(min(64, 128), 1) = 64 cycles
    assert matmul_cycles(1, 4096, 1024) == 32 * 8 * 64
    # 600 moving rows = one 512-row tile + one 88-row tile; 100 stationary columns: min(64, 100) = 64
    assert matmul_cycles(600, 128, 100) == 1 * (max(64, 512) + max(64, 88))
    assert matmul_cycles(0, 128, 128) == 0


def test_matmul_bf16_trn2():
    m, k, n = 256, 512, 1024
    with shape_only():
        a = torch.empty(m, k, dtype=torch.bfloat16, device="neuron")
        b = torch.empty(k, n, dtype=torch.bfloat16, device="neuron")
        with torch_neuronx.estimate(platform="trn2", lnc=LNC) as est:
            torch.mm(a, b)
    r = est.report
    # tensor: cycles at the 2.4 GHz Tensor Engine clock, LNC engines, at the fitted efficiency
    tensor_s = 4 * 8 * 256 / (TRN2.core.tensor.clock_hz * LNC) / C.eta_tensor
    hbm_s = (m * k + k * n + m * n) * 2 / (HBM_PER_CORE * C.eta_hbm)
    device_s = max(tensor_s, hbm_s)
    assert r.flops == 2 * m * k * n
    assert r.eager_step_time_s == pytest.approx(C.eager_op_launch_s + device_s, rel=1e-9)
    assert r.compiled_step_time_s == pytest.approx(LAUNCH + device_s, rel=1e-9)
    assert r.device_time_by_engine_s["tensor"] == pytest.approx(tensor_s, rel=1e-9)
    assert r.hbm_bytes == (m * k + k * n + m * n) * 2
    assert r.mfu == pytest.approx(2 * m * k * n / (r.step_time_s * 79e12 * LNC), rel=1e-9)


def test_fp32_matmul_runs_at_a_quarter_of_the_bf16_rate():
    with shape_only():
        a = torch.empty(512, 512, device="neuron")
        with torch_neuronx.estimate(platform="trn1") as est:
            torch.mm(a, a)
    cycles = 4 * 4 * 512
    expected = cycles / PLATFORMS["trn1"].core.tensor.clock_hz * 4 / C.eta_tensor     # 23 / 92 TFLOPS
    assert est.report.device_time_by_engine_s["tensor"] == pytest.approx(expected, rel=1e-9)


def test_elementwise_add_is_hbm_bound_on_trn2():
    n = 1024 * 1024
    with shape_only():
        x = torch.empty(n, dtype=torch.bfloat16, device="neuron")
        y = torch.empty(n, dtype=torch.bfloat16, device="neuron")
        with torch_neuronx.estimate(platform="trn2", lnc=LNC) as est:
            torch.add(x, y)
    r = est.report
    vector_s = n / (512 * TRN2.core.vector.clock_hz * LNC)          # 512 bf16 elements per cycle on NeuronCore-v3
    hbm_s = 3 * n * 2 / (HBM_PER_CORE * C.eta_hbm)
    assert r.device_time_by_engine_s["vector"] == pytest.approx(vector_s, rel=1e-9)
    assert hbm_s > vector_s
    assert r.eager_step_time_s == pytest.approx(C.eager_op_launch_s + hbm_s, rel=1e-9)
    assert r.time_by_op_class_s["elementwise"] == pytest.approx(hbm_s, rel=1e-9)


def test_all_reduce_1mib_over_64_ranks_on_trn2_48xlarge():
    nbytes = 1 << 20
    with shape_only(world_size=64):
        t = torch.empty(nbytes // 4, device="neuron")
        with torch_neuronx.estimate(platform="trn2", lnc=LNC, instance="trn2.48xlarge") as est:
            dist.all_reduce(t)
    r = est.report
    # 64 ranks = every logical core of 16 chips (4 per chip): KangaRing, half of a ring's 2 (n - 1) steps;
    # bandwidth: 2 (n - 1) / n x S over the chip's NeuronLink bandwidth shared by its 4 ranks
    steps = math.ceil(2 * 63 / 2)
    per_rank = TRN2.interconnect.intra_instance_bytes_per_s / 4
    expected = steps * C.alpha_cc_s + 2 * 63 / 64 * nbytes / per_rank
    (c,) = r.collectives
    assert (c.kind, c.group_size, c.calls, c.bytes_per_call) == ("all_reduce", 64, 1, nbytes)
    assert c.seconds == pytest.approx(expected, rel=1e-9)
    assert c.algorithm == "kangaring"
    assert r.eager_step_time_s == pytest.approx(expected, rel=1e-9)


def test_all_reduce_across_instances_is_hierarchical_over_efa():
    nbytes = 1 << 26
    with shape_only(world_size=64):
        t = torch.empty(nbytes // 4, device="neuron")
        with torch_neuronx.estimate(platform="trn1", instance="trn1.32xlarge", instances=2) as est:
            dist.all_reduce(t)
    (c,) = est.report.collectives
    trn1 = PLATFORMS["trn1"]
    inner_bw = trn1.instance("trn1.32xlarge").neuronlink_bytes_per_s_per_chip / 2     # 2 ranks per chip
    efa = 800e9 / 8 / 32                                                              # per logical core
    intra = 2 * (math.ceil(31 / 2) * C.alpha_cc_s + 31 / 32 * nbytes / inner_bw)      # RS + AG, KangaRing
    inter = 2 * 1 * 15e-6 + 2 * 1 / 2 * nbytes / 32 / efa                            # 2 instances, RDH
    assert c.seconds == pytest.approx(intra + inter, rel=1e-9)
    assert c.algorithm.startswith("hierarchical (2 instances x 32 ranks")
