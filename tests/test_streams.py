"""Streams and events as FSDP2 and accelerate use them."""
import pytest
import torch


def test_streams():
    s = torch.neuron.Stream(priority=-1)
    assert isinstance(s, torch.Stream) and s.device == torch.device("neuron:0")
    # one priority level: a requested priority is clamped into the range, as on CUDA
    assert torch.neuron.Stream.priority_range() == (0, 0) and s.priority == 0
    cur = torch.neuron.current_stream()
    assert cur == torch.neuron.default_stream() and cur != s
    s.wait_stream(cur)
    with torch.neuron.stream(s):
        assert torch.neuron.current_stream() == s
        assert torch.accelerator.current_stream() == s
        x = torch.ones(3, device="neuron") * 2
    assert torch.neuron.current_stream() == cur
    assert s.query() and x.sum().item() == 6
    s.synchronize()
    torch.neuron.synchronize()
    torch.accelerator.synchronize()


def test_events_record_wait_time():
    start = torch.neuron.Event(enable_timing=True)
    end = torch.neuron.Event(enable_timing=True)
    assert isinstance(start, torch.neuron.Event) and isinstance(start, torch.Event)
    start.record()
    y = torch.randn(300, 300, device="neuron")
    for _ in range(5):
        y = y @ y / 300
    end.record()
    end.synchronize()
    assert end.query()
    ms = start.elapsed_time(end)
    assert 0 < ms < 60_000
    s = torch.neuron.Stream()
    ev = s.record_event()
    torch.neuron.current_stream().wait_event(ev)
    ev.wait()


def test_elapsed_time_between_events_of_two_cores_is_refused():
    # each core keeps its own time (as each CUDA device does): only same-core intervals are timed
    first, second, again = (torch.Event("neuron", enable_timing=True) for _ in range(3))
    first.record(torch.neuron.current_stream(0))
    second.record(torch.neuron.current_stream(1))
    again.record(torch.neuron.current_stream(0))
    with pytest.raises(ValueError, match=r"different NeuronCores \(neuron:0 and neuron:1\)"):
        first.elapsed_time(second)
    assert 0 <= first.elapsed_time(again) < 60_000


def test_stream_context_restores_the_current_device_and_both_streams():
    torch.accelerator.set_device_index(0)
    here, there = torch.neuron.current_stream(0), torch.neuron.current_stream(1)
    s = torch.neuron.Stream(device="neuron:1")
    with torch.neuron.stream(s) as entered:
        assert entered == s and isinstance(torch.neuron.stream(None), torch.neuron.StreamContext)
        assert torch.neuron.current_device() == 1 and torch.neuron.current_stream() == s
        assert torch.neuron.current_stream(0) == here
        y = torch.ones(2, device="neuron") * 3  # the current device inside the block
    assert y.device == torch.device("neuron:1")
    assert torch.neuron.current_device() == 0  # as torch.cuda.stream restores it
    assert torch.neuron.current_stream(0) == here and torch.neuron.current_stream(1) == there
    with torch.neuron.stream(None) as nothing:
        assert nothing is None and torch.neuron.current_device() == 0


def test_peer_access_between_different_cores():
    assert torch.neuron.can_device_access_peer(0, 1) and torch.neuron.can_device_access_peer("neuron:1", 0)
    assert not torch.neuron.can_device_access_peer(0, 0)
    with pytest.raises(RuntimeError):
        torch.neuron.can_device_access_peer(0, torch.neuron.device_count())
