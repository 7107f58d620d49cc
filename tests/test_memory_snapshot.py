"""Memory snapshots of the software NeuronCore in PyTorch's format (``torch.neuron.memory._snapshot``,
``torch_neuronx.memory_snapshot_start`` / ``_stop``), read back by PyTorch's own visualizer code."""
import pickle

import pytest
import torch
from torch.cuda import _memory_viz

import torch_neuronx


@pytest.fixture(autouse=True)
def _history_off():
    yield
    torch.neuron.memory._record_memory_history(None, clear_history=True)


def _allocate_two():
    small = torch.empty(1000, device="neuron")  # 4000 bytes, reserved 4032
    large = torch.empty(300_000, device="neuron")  # 1_200_000 bytes: the large pool
    return small, large


def test_snapshot_has_live_segments_and_the_recorded_events_with_stacks():
    torch_neuronx.memory_snapshot_start()
    small, large = _allocate_two()
    small_addr = small.data_ptr()
    del small
    snap = torch_neuronx.memory_snapshot_stop()

    segments = {s["address"]: s for s in snap["segments"]}
    seg = segments[large.data_ptr()]
    assert seg["device"] == 0 and seg["segment_type"] == "large"
    assert seg["total_size"] == seg["requested_size"] == 1_200_000
    (block,) = seg["blocks"]
    assert block["state"] == "active_allocated" and block["size"] == 1_200_000
    assert any(f["name"] == "_allocate_two" and f["filename"] == __file__ for f in block["frames"])
    assert small_addr not in segments or segments[small_addr]["requested_size"] != 4000

    events = [e for e in snap["device_traces"][0] if e["addr"] == small_addr]
    assert [e["action"] for e in events] == [
        "segment_alloc", "alloc", "free_requested", "free_completed", "segment_free"]
    assert all(e["size"] == 4032 and e["requested_size"] == 4000 for e in events)
    assert any(f["name"] == "_allocate_two" for f in events[0]["frames"])
    assert any(f["name"] == "test_snapshot_has_live_segments_and_the_recorded_events_with_stacks"
               for f in events[-1]["frames"])
    assert events[0]["time_us"] <= events[-1]["time_us"]
    assert snap["device_traces"][1] == []  # nothing happened on neuron:1

    # PyTorch's memory visualizer code reads it (segsum checks that every segment's blocks add up).
    assert f"segments: {len(snap['segments'])}\n" in _memory_viz.segsum(snap)
    assert "<html" in _memory_viz.trace_plot(snap).lower()
    assert "<html" in _memory_viz.segment_plot(snap).lower()


def test_recording_stops_and_no_stale_stack_is_reported():
    torch.neuron.memory._record_memory_history(max_entries=100)
    a = torch.empty(16, device="neuron")
    addr = a.data_ptr()
    torch.neuron.memory._record_memory_history(enabled=None)
    recorded = len(torch.neuron.memory._snapshot()["device_traces"][0])
    del a  # freed after the recording stopped: its stack is forgotten, no event
    b = torch.empty(16, device="neuron")  # a freed small block is reused: likely the same address
    snap = torch.neuron.memory._snapshot()
    assert len(snap["device_traces"][0]) == recorded
    seg = {s["address"]: s for s in snap["segments"]}[b.data_ptr()]
    assert seg["frames"] == [] and seg["blocks"][0]["frames"] == []
    assert b.data_ptr() == addr or addr not in {s["address"] for s in snap["segments"]}


def test_max_entries_state_mode_and_no_stacks():
    torch.neuron.memory._record_memory_history(max_entries=3, clear_history=True)
    keep = [torch.empty(8, device="neuron") for _ in range(4)]
    trace = torch.neuron.memory._snapshot()["device_traces"][0]
    assert len(trace) == 3 and trace[-1]["addr"] == keep[-1].data_ptr()
    torch.neuron.memory._record_memory_history("state", clear_history=True)
    t = torch.empty(8, device="neuron")
    snap = torch.neuron.memory._snapshot(device=0)
    assert snap["device_traces"][0] == []
    seg = {s["address"]: s for s in snap["segments"]}[t.data_ptr()]
    assert any(f["filename"] == __file__ for f in seg["frames"])
    torch.neuron.memory._record_memory_history(context=None, clear_history=True)
    u = torch.empty(8, device="neuron")
    trace = torch.neuron.memory._snapshot()["device_traces"][0]
    assert [e["action"] for e in trace] == ["segment_alloc", "alloc"] and trace[0]["frames"] == []
    assert trace[0]["addr"] == u.data_ptr()


def test_dump_snapshot_and_memory_snapshot_segments(tmp_path):
    x = torch.empty(64, device="neuron:1")
    path = tmp_path / "snap.pickle"
    torch.neuron.memory._dump_snapshot(str(path))
    with open(path, "rb") as f:
        loaded = pickle.load(f)
    assert x.data_ptr() in {s["address"] for s in loaded["segments"] if s["device"] == 1}
    only1 = torch.neuron.memory_snapshot(device=1)
    assert {s["device"] for s in only1} == {1}
    live = sum(s["requested_size"] for s in torch.neuron.memory_snapshot() if s["device"] == 1)
    assert live == torch.neuron.memory_allocated(1)
    assert sum(s["total_size"] for s in only1) == torch.neuron.memory_reserved(1)
    snap = torch_neuronx.memory_snapshot()
    assert set(snap) >= {"segments", "device_traces"}
