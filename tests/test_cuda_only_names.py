"""``torch.cuda`` names a CUDA program ported to ``neuron`` reaches for, which ``torch.neuron`` lacks:
the AttributeError names what to use instead, and that replacement works on ``neuron``."""
import pytest
import torch

from torch_neuronx.device.cuda_only import CUDA_ONLY_NAMES


@pytest.mark.parametrize("name, replacement", [
    ("amp", "torch.autocast('neuron')"),
    ("nvtx", "torch.profiler.record_function"),
    ("graphs", "torch.compile"),
    ("CUDAGraph", "torch.compile"),
    ("utilization", "torch.neuron.memory_allocated()"),
    ("caching_allocator_alloc", "torch.empty(..., device='neuron')"),
    ("set_sync_debug_mode", "NEURON_LAUNCH_BLOCKING=1"),
    ("nccl", "backend 'neuron'"),
    ("jiterator", "NKI"),
])
def test_a_cuda_only_name_names_its_neuron_replacement(name, replacement):
    with pytest.raises(AttributeError, match=f"no attribute '{name}'") as info:
        getattr(torch.neuron, name)
    assert replacement in str(info.value)
    assert not hasattr(torch.neuron, name)


def test_an_unknown_name_points_at_the_readme():
    with pytest.raises(AttributeError, match="listed in its README"):
        torch.neuron.no_such_function  # noqa: B018


def test_no_cuda_only_name_shadows_a_real_attribute():
    present = [name for name in CUDA_ONLY_NAMES if name in vars(torch.neuron)]
    assert present == []


def test_the_amp_replacement_runs_the_matmul_in_bf16():
    a = torch.randn(4, 8, device="neuron")
    b = torch.randn(8, 3, device="neuron")
    with torch.autocast("neuron"):
        out = a @ b
    assert out.dtype == torch.bfloat16
    expected = (a.cpu().bfloat16() @ b.cpu().bfloat16())
    assert torch.equal(out.cpu(), expected)


def test_the_nvtx_replacement_is_recorded_by_the_profiler():
    x = torch.randn(16, 16, device="neuron")
    with torch.profiler.profile() as prof:
        with torch.profiler.record_function("my_range"):
            (x @ x).sum()
    assert "my_range" in [e.name for e in prof.events()]
