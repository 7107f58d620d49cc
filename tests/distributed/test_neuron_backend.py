"""The C++ c10d backend of a ``"neuron"`` group (``csrc/distributed/NeuronBackend.h``): the group leaves
``allreduce`` to the C++ ``ProcessGroup``, whose ``c10d::allreduce_`` kernel hands the call to that backend.
Two ``NeuronProcessGroup`` s (ranks 0 and 1) in this process, built on one store in two threads, so the
sums are real. Checked: the common call (one contiguous tensor, SUM) runs no Python function of
torch_neuronx; the rest reaches the Python general path and its handle answers through the C++ work
(``is_completed``, ``result``, the future); CPU tensors are reduced but ``cpu`` is reported only for
``"cpu:gloo,neuron:neuron"``; coalescing and ``torch_neuronx.estimate`` recording take the general path;
a refusal raises its own Python exception; a freed group is collected (no reference cycle through C++).
``tests/distributed/test_collectives.py`` checks ``dist.all_reduce`` on three processes."""
from __future__ import annotations

import gc
import sys
import weakref
from datetime import timedelta

import pytest
import torch
import torch.distributed as dist

from torch_neuronx.distributed.process_group import NeuronProcessGroup
from torch_neuronx.estimate import active as estimate_active

from .in_process import connect_two

NEURON = torch.device("neuron")


def two_groups() -> list[NeuronProcessGroup]:
    """Group ranks 0 and 1 on one store, built concurrently (each waits for the other)."""
    return connect_two(lambda store, r: NeuronProcessGroup(dist.PrefixStore("g", store), r, 2, timedelta(seconds=60)),
                       "groups")


@pytest.fixture(scope="module")
def pgs():
    groups = two_groups()
    yield groups
    for g in groups:
        g.shutdown()


def opts(op: dist.ReduceOp = dist.ReduceOp.SUM) -> dist.AllreduceOptions:
    o = dist.AllreduceOptions()
    o.reduceOp = op
    return o


def python_functions_of_ours(fn) -> list[str]:
    """Names of the torch_neuronx Python functions that ran during ``fn()`` (in this thread)."""
    ran: list[str] = []

    def profile(frame, event, arg):
        if event == "call" and "torch_neuronx" in frame.f_code.co_filename:
            ran.append(f"{frame.f_code.co_filename}:{frame.f_code.co_name}")

    sys.setprofile(profile)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return ran


def common_call_runs_no_python_of_ours(pgs, numel: int) -> list[torch.Tensor]:
    """``allreduce([t], SUM options)`` (``dist.all_reduce``'s call) on both ranks of ``t = full((numel,),
    rank + 1)``: asserts that no torch_neuronx Python function ran and that both sums are 3; returns the
    two tensors."""
    ts = [torch.full((numel,), float(r + 1), device=NEURON) for r in range(2)]
    works: list = []
    ran = python_functions_of_ours(lambda: works.extend(pgs[r].allreduce([ts[r]], opts()) for r in range(2)))
    assert ran == [], ran
    for w in works:
        w.wait()
    for t in ts:
        torch.testing.assert_close(t.cpu(), torch.full((numel,), 3.0))
    return ts


def test_the_common_call_runs_no_python_of_ours(pgs):
    ts = common_call_runs_no_python_of_ours(pgs, 64)
    works: list = []
    # the single-tensor Python form goes through the c10d::allreduce_ op, whose neuron kernel (ours, for
    # "gloo" groups given neuron tensors) hands a "neuron" group's call to PyTorch's kernel and the C++ backend
    ran = python_functions_of_ours(lambda: works.extend(pgs[r].allreduce(ts[r]) for r in range(2)))
    assert {name.rsplit(":", 1)[0].rsplit("/", 1)[-1] for name in ran} == {"c10d_ops.py"}, ran
    for w in works:
        w.wait()
    torch.testing.assert_close(ts[0].cpu(), torch.full((64,), 6.0))


def test_the_common_call_stays_cpp_once_dynamo_hides_the_group(pgs):
    """Dynamo's loading wraps the group's Python methods (``dynamo_opaque``); the C++ ``allreduce``
    method must stay as it is (a Python wrapper would be a frame, and an override for C++ callers)."""
    from torch_neuronx.distributed import dynamo_opaque

    dynamo_opaque.hide_from_dynamo()
    assert not dynamo_opaque.is_hidden(NeuronProcessGroup.__dict__["allreduce"])
    common_call_runs_no_python_of_ours(pgs, 8)


def test_other_calls_take_the_general_path_and_its_handle_answers(pgs):
    ts = [torch.tensor([1.0, 5.0, 2.0], device=NEURON) * (r + 1) for r in range(2)]
    ran: list[str] = []
    works: list = []
    ran = python_functions_of_ours(lambda: works.extend(pgs[r].allreduce([ts[r]], opts(dist.ReduceOp.MAX))
                                                        for r in range(2)))
    assert any(name.endswith(":_allreduce_general") for name in ran), ran
    for w, t in zip(works, ts, strict=True):
        (value,) = w.get_future().wait()
        assert value.data_ptr() == t.data_ptr()
        w.wait()
        assert w.is_completed() and w.is_success() and w.exception() is None
        (res,) = w.result()
        assert res.device.type == "neuron" and res.data_ptr() == t.data_ptr()
        torch.testing.assert_close(t.cpu(), torch.tensor([2.0, 10.0, 4.0]))


def test_a_non_contiguous_tensor_is_summed_in_place(pgs):
    bases = [torch.arange(12.0, device=NEURON).reshape(3, 4) * (r + 1) for r in range(2)]
    views = [b.t() for b in bases]
    works = [pgs[r].allreduce([views[r]], opts()) for r in range(2)]
    for w in works:
        w.wait()
    for b in bases:
        torch.testing.assert_close(b.cpu(), torch.arange(12.0).reshape(3, 4) * 3)


def test_cpu_tensors_are_reduced_and_cpu_is_reported_only_when_asked(pgs):
    ts = [torch.full((5,), float(r + 1)) for r in range(2)]
    works = [pgs[r].allreduce([ts[r]], opts()) for r in range(2)]
    for w in works:
        w.wait()
    for t in ts:
        torch.testing.assert_close(t, torch.full((5,), 3.0))
    assert [d.type for d in pgs[0]._device_types] == ["neuron"]


def test_a_refusal_raises_its_python_exception(pgs):
    t = torch.ones(3, dtype=torch.int16, device=NEURON)
    with pytest.raises(TypeError, match="int16"):
        pgs[0].allreduce([t], opts())
    with pytest.raises(RuntimeError, match="PREMUL_SUM"):
        pgs[0].allreduce([torch.ones(3, device=NEURON)], opts(dist._make_nccl_premul_sum(2.0)))


def test_coalesced_calls_are_recorded_for_one_handle(pgs):
    ts = [[torch.full((4,), float(r + 1 + j), device=NEURON) for j in range(3)] for r in range(2)]
    for g in pgs:
        g._start_coalescing(NEURON)
    for j in range(3):
        for r in range(2):
            pgs[r].allreduce([ts[r][j]], opts())
    handles = [g._end_coalescing(NEURON) for g in pgs]
    for r, h in enumerate(handles):
        assert len(h.transfers) == 3  # every call recorded: none went around the coalescing
        h.wait()
        for j in range(3):
            torch.testing.assert_close(ts[r][j].cpu(), torch.full((4,), float(3 + 2 * j)))
    # after coalescing, the common call is C++ again
    t = [torch.ones(2, device=NEURON) for _ in range(2)]
    ran = python_functions_of_ours(lambda: [w.wait() for w in [pgs[r].allreduce([t[r]], opts()) for r in range(2)]])
    assert ran == [], ran


class Recorder:
    """Stands in for an estimate session: records the collectives the group reports."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def record_collective(self, op, outputs, inputs, ranks, group, peer=None) -> None:
        self.calls.append((op, [t.shape for t in outputs], tuple(ranks)))


def test_an_estimate_in_progress_sees_the_common_call(pgs):
    recorder = Recorder()
    estimate_active.current = recorder
    try:
        ts = [torch.ones(7, device=NEURON) for _ in range(2)]
        works = [pgs[r].allreduce([ts[r]], opts()) for r in range(2)]
        for w in works:
            w.wait()
    finally:
        estimate_active.current = None
    assert recorder.calls == [("all_reduce", [torch.Size([7])], (0, 1))] * 2, recorder.calls
    torch.testing.assert_close(ts[0].cpu(), torch.full((7,), 2.0))


def test_a_freed_group_is_collected():
    groups = two_groups()
    refs = [weakref.ref(g) for g in groups]
    for g in groups:
        g.shutdown()
    del groups, g
    gc.collect()
    assert [r() for r in refs] == [None, None]
