"""neuron tensors shared between processes for real: pickled through shared memory files
(spawn, queues, DataLoader spawn workers) and shared with fork children (Hogwild after
``model.share_memory()``), with values, devices and per-core accounting intact."""
from __future__ import annotations

import os
from multiprocessing.reduction import ForkingPickler

import pytest
import torch
import torch.multiprocessing as mp
from torch.utils.data import DataLoader, Dataset

TIMEOUT = 240


def test_pickled_tensor_shares_memory_and_is_accounted():
    base = torch.arange(12.0, device="neuron").view(3, 4)
    view = base[:, 1::2]  # non-contiguous view with an offset
    before = torch.neuron.memory_allocated()
    ptr = base.data_ptr()
    got = ForkingPickler.loads(ForkingPickler.dumps(view))
    # The sender's storage moved into a memory file of its own: same values, same accounting.
    assert base.data_ptr() != ptr and base.cpu().tolist() == torch.arange(12.0).view(3, 4).tolist()
    assert got.device == view.device and got.stride() == view.stride() and torch.equal(got.cpu(), view.cpu())
    # The receiver maps the same memory, accounted to its core like an allocation.
    assert torch.neuron.memory_allocated() - before == base.untyped_storage().nbytes()
    got.add_(100)
    assert base.cpu().tolist() == [[0, 101, 2, 103], [4, 105, 6, 107], [8, 109, 10, 111]]
    moved = base.data_ptr()
    again = ForkingPickler.loads(ForkingPickler.dumps(base))  # already in a file: no second move
    assert base.data_ptr() == moved and torch.equal(again.cpu(), base.cpu())
    del got, again
    assert torch.neuron.memory_allocated() == before


def test_tensors_of_one_storage_arrive_as_one_storage():
    # Tensors that share a storage (a tensor and its views, tied weights) travel as one memory file
    # and arrive sharing one storage, accounted once: PyTorch's rule for CPU (file descriptors) and
    # CUDA (IPC handles), which key the received storage by its handle.
    base = torch.arange(12.0, device="neuron:1").view(3, 4)
    view = base[1:, ::2]
    other = torch.ones(5, device="neuron:1")
    before = torch.neuron.memory_allocated(1)
    both = base.untyped_storage().nbytes() + other.untyped_storage().nbytes()
    got_base, got_view, got_other, got_again = ForkingPickler.loads(ForkingPickler.dumps((base, view, other, base)))
    assert got_view.untyped_storage().data_ptr() == got_base.untyped_storage().data_ptr()
    assert got_again.untyped_storage().data_ptr() == got_base.untyped_storage().data_ptr()
    assert got_other.untyped_storage().data_ptr() != got_base.untyped_storage().data_ptr()
    assert (got_view.storage_offset(), got_view.stride()) == (4, (4, 2))
    assert torch.neuron.memory_allocated(1) - before == both
    got_view.fill_(-1.0)
    expected = [[0.0, 1.0, 2.0, 3.0], [-1.0, 5.0, -1.0, 7.0], [-1.0, 9.0, -1.0, 11.0]]
    assert got_base.cpu().tolist() == expected and base.cpu().tolist() == expected
    # The same storage sent again once the received one is gone is mapped afresh.
    del got_base, got_view, got_again
    assert torch.neuron.memory_allocated(1) - before == other.untyped_storage().nbytes()
    fresh = ForkingPickler.loads(ForkingPickler.dumps(base))
    assert fresh.cpu().tolist() == expected
    assert torch.neuron.memory_allocated(1) - before == both
    del fresh, got_other
    assert torch.neuron.memory_allocated(1) == before


def test_pickled_parameter_and_empty_tensor():
    p = torch.nn.Parameter(torch.ones(3, device="neuron:1"))
    q = ForkingPickler.loads(ForkingPickler.dumps(p))
    assert isinstance(q, torch.nn.Parameter) and q.requires_grad and q.device == torch.device("neuron:1")
    e = ForkingPickler.loads(ForkingPickler.dumps(torch.empty(0, 5, device="neuron")))
    assert e.shape == (0, 5) and e.device == torch.device("neuron:0")
    with pytest.raises(RuntimeError, match="Cowardly refusing to serialize non-leaf tensor"):
        ForkingPickler.dumps(torch.ones(2, device="neuron", requires_grad=True) * 2)


def _spawn_child(a, b, c, d, q, received):
    q.put([(str(t.device), t.cpu().tolist()) for t in (a, b, c, d)])
    a.add_(1)  # shared with the parent, as with CUDA tensors
    q.put(torch.full((2,), 5.0, device="neuron:1"))  # child -> parent
    received.wait(TIMEOUT)  # a sender stays alive until its tensor is received (as for CUDA)


def test_spawn_process_arguments_share_memory_with_the_parent():
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    a = torch.arange(4.0, device="neuron")
    b = torch.arange(6.0, device="neuron:1").view(2, 3).t()
    c = torch.tensor([1, 2], device="neuron", dtype=torch.int64)
    d = torch.nn.Parameter(torch.ones(2, device="neuron"))
    received = ctx.Event()
    proc = ctx.Process(target=_spawn_child, args=(a, b, c, d, q, received))
    proc.start()
    seen = q.get(timeout=TIMEOUT)
    back = q.get(timeout=TIMEOUT)
    received.set()
    proc.join(TIMEOUT)
    assert proc.exitcode == 0
    assert seen == [("neuron:0", [0.0, 1.0, 2.0, 3.0]), ("neuron:1", [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]]),
                    ("neuron:0", [1, 2]), ("neuron:0", [1.0, 1.0])]
    assert a.cpu().tolist() == [1.0, 2.0, 3.0, 4.0]
    assert back.device == torch.device("neuron:1") and back.cpu().tolist() == [5.0, 5.0]


class _NeuronRows(Dataset):
    def __init__(self):
        self.data = torch.arange(16.0, device="neuron").view(8, 2)

    def __len__(self):
        return 8

    def __getitem__(self, i):
        return self.data[i]


def test_dataloader_spawn_workers_yield_the_same_batches():
    want = [b.cpu().tolist() for b in DataLoader(_NeuronRows(), batch_size=2)]
    loader = DataLoader(_NeuronRows(), batch_size=2, num_workers=2, multiprocessing_context="spawn",
                        timeout=TIMEOUT)
    got = list(loader)
    assert all(b.device == torch.device("neuron:0") for b in got)
    assert [b.cpu().tolist() for b in got] == want


def _hogwild_child(model, ready, go, scratch_ok):
    with torch.no_grad():
        for p in model.parameters():
            p.add_(1.0)
    # New memory of the child never comes from the parent's (shared) free memory.
    mine = torch.full((4096,), 7.0, device="neuron")
    ready.set()
    go.wait(TIMEOUT)
    scratch_ok.value = int(bool((mine == 7.0).all().item()))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork start method")
def test_fork_children_share_the_parents_memory():
    ctx = mp.get_context("fork")
    model = torch.nn.Linear(3, 2).to("neuron")
    model.share_memory()
    assert model.weight.is_shared()
    before = [p.detach().cpu().clone() for p in model.parameters()]
    freed = torch.zeros(4096, device="neuron")
    del freed  # free memory in the parent's arena, which the child must not allocate from
    ready, go, scratch_ok = ctx.Event(), ctx.Event(), ctx.Value("i", 0)
    proc = ctx.Process(target=_hogwild_child, args=(model, ready, go, scratch_ok))
    proc.start()
    assert ready.wait(TIMEOUT)
    theirs = torch.full((4096,), 3.0, device="neuron")  # reuses the freed memory here
    go.set()
    proc.join(TIMEOUT)
    assert proc.exitcode == 0 and scratch_ok.value == 1
    assert (theirs == 3.0).all().item()
    for p, b in zip(model.parameters(), before, strict=True):
        assert torch.equal(p.detach().cpu(), b + 1)


def test_empty_cache_keeps_live_tensors_and_accounting():
    keep = torch.arange(1000.0, device="neuron")
    big = torch.ones(9 << 20, device="neuron")  # 36 MiB: a mapping of its own
    small = [torch.full((100,), float(i), device="neuron") for i in range(50)]
    before = torch.neuron.memory_allocated()
    del big, small
    freed = torch.neuron.memory_allocated()
    torch.neuron.empty_cache()  # unmaps the host memory kept for reuse, never live memory
    assert torch.neuron.memory_allocated() == freed < before
    assert keep.cpu().tolist() == torch.arange(1000.0).tolist()
    again = torch.full((9 << 20,), 2.0, device="neuron")
    assert again.sum().item() == 2.0 * (9 << 20)
