"""``torch_neuronx.profiling`` (``NeuronConfig``, ``ProfileMode``, ``NeuronProfiler``) with
``torch.profiler.profile``, as AWS's Neuron Explorer guide uses them; and ``torch_neuronx.Stream`` /
``stream`` / ``synchronize``, which the same guide calls on the package."""
from __future__ import annotations

import json
import os
import socket

import pytest
import torch
from torch.profiler import ProfilerActivity, profile

import torch_neuronx
from torch_neuronx.profiling import NeuronConfig, NeuronProfiler, ProfileMode


def test_config_defaults_and_checks(monkeypatch):
    monkeypatch.delenv("NEURON_RT_INSPECT_OUTPUT_DIR", raising=False)
    config = NeuronConfig()
    assert isinstance(config, torch._C._profiler._ExperimentalConfig)   # what profile() accepts
    assert config.modes == [ProfileMode.DEVICE, ProfileMode.RUNTIME]
    assert (config.profile_output_dir, config.capture_cores, config.precache_node_info) == ("./output", None, True)
    config = NeuronConfig(modes=["cpu_util", ProfileMode.HOST_MEMORY], capture_enabled_for_nc="0, 2-4,3",
                          max_events_per_nc=100000, neff_cache_dir="neffs")
    assert config.modes == [ProfileMode.CPU_UTIL, ProfileMode.HOST_MEMORY]
    assert config.capture_cores == [0, 2, 3, 4] and config.neff_cache_dir == "neffs"
    with pytest.raises(TypeError, match="each mode is a ProfileMode"):
        NeuronConfig(modes=["gpu"])
    with pytest.raises(ValueError, match="at least one ProfileMode"):
        NeuronConfig(modes=[])
    with pytest.raises(ValueError, match="must be > 0"):
        NeuronConfig(max_events_per_nc=0)
    with pytest.raises(ValueError, match="write it as '0,1,2-5'"):
        NeuronConfig(capture_enabled_for_nc="0;1")
    with pytest.raises(ValueError, match="runs backwards; write it as '2-5'"):
        NeuronConfig(capture_enabled_for_nc="5-2")
    with pytest.raises(TypeError, match="pass the NeuronConfig"):
        NeuronProfiler({"modes": []})
    monkeypatch.setenv("NEURON_RT_INSPECT_OUTPUT_DIR", "/tmp/inspect")
    assert NeuronConfig().profile_output_dir == "/tmp/inspect"


def test_profile_exports_the_framework_trace_in_the_neuron_layout(tmp_path):
    config = NeuronConfig(modes=[ProfileMode.DEVICE, ProfileMode.RUNTIME], profile_output_dir=tmp_path)
    exporter = NeuronProfiler(config)
    a = torch.randn(64, 32, device="neuron")
    b = torch.randn(32, 16, device="neuron")
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1], experimental_config=config,
                 on_trace_ready=exporter.export_trace, record_shapes=True, profile_memory=True) as prof:
        c = torch.mm(a, b)
        torch_neuronx.synchronize()
    torch.testing.assert_close(c.cpu(), a.cpu() @ b.cpu())
    (path,) = exporter.exported
    assert path.name == "trace.json"
    assert path.parent.parent == tmp_path / f"{socket.gethostname()}_pid_{os.getpid()}"
    events = json.loads(path.read_text())["traceEvents"]
    mm = [e for e in events if e.get("name") == "aten::mm"]
    assert len(mm) == 1 and mm[0]["args"]["Input Dims"] == [[64, 32], [32, 16]]
    # profile_memory: the 64x16 fp32 result's allocation on neuron is in the trace
    allocs = [e for e in events if e.get("name") == "[memory]" and e["args"].get("Device Type") == 20
              and e["args"].get("Bytes") == 64 * 16 * 4]
    assert allocs, [e for e in events if e.get("name") == "[memory]"][:3]
    assert prof.key_averages()  # the profiler itself ran normally


def test_each_export_gets_its_own_folder(tmp_path):
    exporter = NeuronProfiler(NeuronConfig(profile_output_dir=tmp_path))
    for _ in range(2):
        with profile(activities=[ProfilerActivity.CPU], experimental_config=exporter.config,
                     on_trace_ready=exporter.export_trace):
            torch.ones(3, device="neuron").sum()
    first, second = exporter.exported
    assert first.parent != second.parent and first.parent.parent == second.parent.parent
    assert all(json.loads(p.read_text())["traceEvents"] for p in (first, second))


def test_package_stream_api_is_torch_neuron():
    assert torch_neuronx.Stream is torch.neuron.Stream
    assert torch_neuronx.stream is torch.neuron.stream
    assert torch_neuronx.synchronize is torch.neuron.synchronize
    s = torch_neuronx.Stream(torch.device("neuron"))
    assert s.device == torch.device("neuron", torch.neuron.current_device())
    with torch_neuronx.stream(s):
        assert torch.neuron.current_stream() == s
        y = torch.full((4,), 2.0, device="neuron") * 3
    torch_neuronx.synchronize()
    assert y.cpu().tolist() == [6.0] * 4


def test_autograd_profiler_records_device_time():
    # The device registers PyTorch's PrivateUse1 profiler stubs: without them every op under
    # profile(use_device="neuron") raised inside the profiler and the totals came out negative.
    from torch.autograd.profiler import profile as autograd_profile

    x = torch.randn(64, 64, device="neuron")
    with autograd_profile(use_device="neuron") as prof:
        y = x @ x
    averages = prof.key_averages()
    assert all(a.cpu_time_total >= 0 and a.device_time_total >= 0 for a in averages)
    mm = [a for a in averages if a.key == "aten::mm"]
    assert len(mm) == 1 and mm[0].device_time_total > 0
    torch.testing.assert_close(y.cpu(), x.cpu() @ x.cpu(), rtol=0, atol=0)
