"""NKI kernels under the estimator are costed by the NKI simulator's cost model, on the estimate's platform."""
import numpy as np
import pytest
import torch

import torch_neuronx
import torch_neuronx.nki.language as nl
from torch_neuronx import nki, nki_op, wrap_nki
from torch_neuronx.estimate import shape_only


@nki.jit
def scale_kernel(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    i = nl.program_id(0) * 128 + nl.arange(128)[:, None]
    j = nl.arange(a.shape[1])[None, :]
    nl.store(out[i, j], value=nl.multiply(nl.load(a[i, j]), 3.0))
    return out


@nki_op("estimate_test::scale", mutates_args=())
def scale(x: torch.Tensor) -> torch.Tensor:
    return wrap_nki(scale_kernel)[x.shape[0] // 128](x)


def benchmark_latency(platform: str) -> float:
    bench = nki.benchmark(scale_kernel, platform=platform)
    bench[2](np.zeros((256, 512), np.float32))
    return bench.benchmark_result.latency_s


@pytest.mark.parametrize("platform", ["trn1", "trn2"])
def test_eager_kernel_is_costed_by_the_nki_cost_model(platform):
    x = torch.ones(256, 512, device="neuron")
    with torch_neuronx.estimate(platform=platform) as est:
        y = scale(x)
    assert float(y[0, 0]) == 3.0
    kernels = [ev for seg in est.segments for ev in seg.events if ev.kernel is not None]
    assert len(kernels) == 1 and kernels[0].kernel.platform == platform
    assert kernels[0].kernel.latency_s == pytest.approx(benchmark_latency(platform), rel=1e-9)
    r = est.report
    assert r.time_by_op_class_s["nki_kernel"] == pytest.approx(kernels[0].kernel.latency_s, rel=1e-9)
    assert not r.uncosted_ops                        # the custom op itself is the kernel's container, not uncosted


def test_kernel_on_fake_tensors_is_costed_the_same():
    with shape_only():
        x = torch.empty(256, 512, device="neuron")
        with torch_neuronx.estimate(platform="trn1", compiled=True) as est:
            scale(x)
    (ev,) = [ev for seg in est.segments for ev in seg.events if ev.kernel is not None]
    assert ev.kernel.latency_s == pytest.approx(benchmark_latency("trn1"), rel=1e-9)
    assert est.report.compiled_step_time_s == pytest.approx(
        ev.kernel.latency_s + torch_neuronx.runtime.platforms.PLATFORMS["trn1"].runtime.sync_launch_overhead_s)
