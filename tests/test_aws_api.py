"""AWS's documented public API of TorchNeuron on the software NeuronCore: ``torch_neuronx``'s
top-level device and ``memory_*`` functions (AWS's ``memory_stats`` layout), ``torch.neuron``'s
compilation-metrics and stream functions, and the small / large pool statistics."""
import pytest
import torch

import torch_neuronx


def test_top_level_device_functions_are_torch_neurons():
    assert torch_neuronx.device_count() == torch.neuron.device_count() == 4
    assert torch_neuronx.current_device() == 0
    torch_neuronx.set_device(1)
    try:
        assert torch.neuron.current_device() == 1
        assert torch_neuronx.get_device_properties(1).total_memory == 24 << 30
    finally:
        torch_neuronx.set_device(0)
    assert torch_neuronx.is_neuron_runtime_initialized() is True
    s = torch_neuronx.Stream()
    with torch_neuronx.StreamContext(s):
        assert torch_neuronx.current_stream() == s
    assert torch_neuronx.current_stream() == torch_neuronx.default_stream()
    e = torch_neuronx.Event(enable_timing=True)
    e.record()
    assert e.query()
    from torch_neuronx.profiling import NeuronProfiler

    assert torch_neuronx.NeuronProfiler is NeuronProfiler


def test_memory_stats_in_aws_layout_counts_each_allocation_and_free():
    torch_neuronx.reset_accumulated_memory_stats()
    torch_neuronx.reset_peak_memory_stats()
    before = torch_neuronx.memory_stats(0)
    assert before["allocation_requests"] == 0 and before["num_tensor_frees"] == 0
    assert before["num_alloc_retries"] == 0 and before["num_ooms"] == 0
    for name in ("allocated_bytes", "reserved_bytes", "active_bytes"):
        assert before[name]["peak"] == before[name]["current"]
        assert before[name]["allocated"] == before[name]["freed"] == 0
    t = torch.empty(1000, device="neuron")  # 4000 bytes, reserved as 4032 (64-byte granules)
    during = torch_neuronx.memory_stats(device=torch.device("neuron:0"))
    assert during["allocated_bytes"]["current"] - before["allocated_bytes"]["current"] == 4000
    assert during["active_bytes"]["current"] == during["allocated_bytes"]["current"]
    assert during["reserved_bytes"]["current"] - before["reserved_bytes"]["current"] == 4032
    assert during["allocated_bytes"]["allocated"] == 4000 and during["allocation_requests"] == 1
    assert torch_neuronx.memory_allocated() == during["allocated_bytes"]["current"]
    assert torch_neuronx.memory_reserved() == during["reserved_bytes"]["current"]
    del t
    after = torch_neuronx.memory_stats()
    assert after["num_tensor_frees"] == 1 and after["allocated_bytes"]["freed"] == 4000
    assert after["allocated_bytes"]["current"] == before["allocated_bytes"]["current"]
    assert after["allocated_bytes"]["peak"] == before["allocated_bytes"]["current"] + 4000
    assert torch_neuronx.max_memory_allocated() == after["allocated_bytes"]["peak"]
    # The flat CUDA-shaped keys are there too, equal to torch.neuron's.
    assert after["allocated_bytes.all.current"] == torch.neuron.memory_stats()["allocated_bytes.all.current"]
    summary = torch_neuronx.memory_summary(abbreviated=True)
    assert "neuron:0" in summary and len(summary) < len(torch_neuronx.memory_summary())


def test_pool_statistics_split_at_one_mebibyte():
    torch.neuron.reset_accumulated_memory_stats()
    small = torch.empty(1000, dtype=torch.uint8, device="neuron")  # < 1 MiB: small pool
    large = torch.empty(1 << 20, dtype=torch.uint8, device="neuron")  # 1 MiB: large pool
    stats = torch.neuron.memory_stats()
    assert stats["allocated_bytes.small_pool.allocated"] == 1000
    assert stats["allocated_bytes.large_pool.allocated"] == 1 << 20
    assert stats["reserved_bytes.small_pool.allocated"] == 1024
    assert stats["segment.large_pool.allocated"] == 1 and stats["segment.small_pool.allocated"] == 1
    for key in ("allocated_bytes", "reserved_bytes", "segment", "allocation"):
        assert stats[f"{key}.all.current"] == stats[f"{key}.small_pool.current"] + stats[f"{key}.large_pool.current"]
    del small, large
    stats = torch.neuron.memory_stats()
    assert stats["allocated_bytes.small_pool.freed"] == 1000
    assert stats["allocated_bytes.large_pool.freed"] == 1 << 20


def test_compilation_metrics_functions_on_torch_neuron():
    torch.neuron.reset_dynamo_metrics()
    assert torch.neuron.get_dynamo_metrics() == torch_neuronx.get_dynamo_metrics()
    assert torch.neuron.get_dynamo_metrics is torch_neuronx.get_dynamo_metrics
    assert torch.neuron.reset_dynamo_metrics is torch_neuronx.reset_dynamo_metrics


def test_current_stream_functions_on_torch_neuron():
    x = torch.ones(4, device="neuron") * 2
    e = torch.neuron.record_event()
    assert isinstance(e, torch.neuron.Event) and e.query()
    other = torch.neuron.Stream()
    torch.neuron.wait_stream(other)
    torch.neuron.wait_event(e)
    assert torch.neuron.query() is True
    assert x.sum().item() == 8.0


def test_snapshot_arguments_are_checked():
    with pytest.raises(ValueError, match="enabled"):
        torch.neuron.memory._record_memory_history(enabled="everything")
    with pytest.raises(ValueError, match="max_entries"):
        torch_neuronx.memory_snapshot_start(max_entries=-1)
