"""Streams and events as FSDP2 and accelerate use them."""
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
