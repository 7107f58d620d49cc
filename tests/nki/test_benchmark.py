"""nki.benchmark: estimated latency ordered like the AWS matmul tutorial's optimisation steps, and a
report that labels every number as an estimate."""
import ml_dtypes
import numpy as np
import pytest

from torch_neuronx import nki
from . import matmul_kernels as mk


@pytest.fixture(scope="module")
def operands():
    rng = np.random.default_rng(0)
    M, K, N = 512, 1024, 2048
    return (rng.standard_normal((K, M), dtype=np.float32).astype(ml_dtypes.bfloat16),
            rng.standard_normal((K, N), dtype=np.float32).astype(ml_dtypes.bfloat16))


def _estimate(kernel, args, platform):
    b = nki.benchmark(warmup=2, iters=3, platform=platform)(kernel)
    out = b(*args)
    return b.benchmark_result, out


@pytest.mark.parametrize("platform", ["trn1", "trn2"])
def test_tutorial_steps_are_ordered(operands, platform):
    lat = [_estimate(k, operands, platform)[0].latency_us
           for k in (mk.matmul_tiled, mk.matmul_hoisted, mk.matmul_blocked_free)]
    assert lat[0] > lat[1] > lat[2]
    assert lat[0] / lat[2] > 1.5          # blocking halves the rhs traffic of this DMA-bound problem


def test_result_fields_and_units(operands):
    r, out = _estimate(mk.matmul_tiled, operands, "trn1")
    M, K, N = 512, 1024, 2048
    assert out.shape == (M, N)                                        # outputs still returned
    assert r.latency_us == pytest.approx(r.latency_s * 1e6)
    assert r.nc_latency.get_latency_percentile(50) == r.nc_latency.get_latency_percentile(99) == r.latency_us
    assert r.flops == 2 * M * K * N
    # trn1: the per-core Tensor Engine bf16 peak, 92 TFLOPS (not the chip figure 190 / 2)
    assert r.flops_utilization == pytest.approx(100 * r.flops / (r.latency_s * 92e12))
    assert r.achieved_tflops == pytest.approx(r.flops / r.latency_s / 1e12)
    tensor_ns = (M // 128) * (N // 512) * (K // 128) * 512 / 2.8    # one 512-cycle matmul per tile
    assert r.engines["tensor"]["busy_us"] == pytest.approx(tensor_ns * 1e-3)
    assert r.engines["tensor"]["busy_pct"] == pytest.approx(100 * tensor_ns * 1e-3 / r.latency_us)
    assert r.engines["dma"]["busy_pct"] > 80                          # the tiled kernel is DMA-bound
    assert r.dma_bytes == (M // 128) * (N // 512) * (K // 128) * (128 * 128 + 128 * 512) * 2 + M * N * 2


def test_report_says_estimate_wherever_it_prints_a_number(operands):
    r, _ = _estimate(mk.matmul_hoisted, operands, "trn2")
    text = str(r)
    for line in text.splitlines():
        if any(ch.isdigit() for ch in line):
            assert "estimat" in line.lower(), line
    assert "estimate" in repr(r)


def test_trn2_dma_is_faster_than_trn1(operands):
    t1 = _estimate(mk.matmul_tiled, operands, "trn1")[0].latency_us
    t2 = _estimate(mk.matmul_tiled, operands, "trn2")[0].latency_us
    assert t2 < t1
