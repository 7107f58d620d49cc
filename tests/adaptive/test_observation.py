"""Every way of observing a queued op's result sees what the op-by-op device shows.

A result of a queued op has no memory until the queue runs, and the ``out=`` tensor of a queued
``out=`` op holds its old values until then. Each observer below (copies, pickling, serializers,
storage access, raw pointers, DLPack, NumPy, printing, comparisons) is run once with adaptive eager
off and once on a result that is still queued when the observer starts; both must give the same
value, or raise the same error.
"""
from __future__ import annotations

import copy
import ctypes
import io
import os
import pickle
import tempfile
import warnings
from collections.abc import Callable
from typing import Any

import pytest
import torch

import torch_neuronx
from torch_neuronx import adaptive

TOL = 1e-6
BASE = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
EXPECTED = [9.0, 15.0, 21.0, 27.0, 33.0, 39.0]  # (BASE * 2 + 1) * 3, what both producers give


def metrics() -> dict:
    return dict(torch_neuronx.get_adaptive_eager_metrics())


def result(x: torch.Tensor) -> torch.Tensor:
    """A pending result: three queued ops (exact in float32)."""
    return (x * 2 + 1) * 3


def out_variant(x: torch.Tensor) -> torch.Tensor:
    """The ``out=`` tensor of a queued ``mul.out`` after two queued ops, the same values as
    :func:`result` (its memory exists and holds zeros until the queue runs)."""
    out = torch.zeros(6, device="neuron")
    torch.mul(x * 2 + 1, 3, out=out)
    return out


def view_of_result(x: torch.Tensor) -> torch.Tensor:
    """A view (storage offset 1) of a pending result of five queued ops, the same values as
    :func:`result`."""
    padded = torch.cat([x[:1] - 1, x, x[-1:] + 1])  # 0, 1, ..., 7
    return ((padded * 2 + 1) * 3)[1:7]


PRODUCERS = [result, out_variant, view_of_result]
PRODUCER_IDS = ["result", "out=", "view"]


def _floats_at(address: int, n: int) -> list[float]:
    return list((ctypes.c_float * n).from_address(address))


def _storage_floats(t: torch.Tensor) -> list[float]:
    """Through the storage's own data pointer: the tensor's 6 floats at its offset."""
    return _floats_at(t.untyped_storage().data_ptr() + 4 * t.storage_offset(), 6)


def _torch_save(t: torch.Tensor) -> list[float]:
    buffer = io.BytesIO()
    torch.save(t, buffer)
    buffer.seek(0)
    return torch.load(buffer).cpu().tolist()


def _safetensors(t: torch.Tensor) -> list[float]:
    from safetensors.torch import load_file, save_file

    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "t.safetensors")
        save_file({"t": t}, path)
        return load_file(path)["t"].tolist()


def _forking_pickler(t: torch.Tensor) -> list[float]:
    # What torch.multiprocessing queues and DataLoader workers do with a neuron tensor (rebuilt here,
    # in the same process, from the same shared memory file).
    from multiprocessing.reduction import ForkingPickler

    return pickle.loads(ForkingPickler.dumps(t)).cpu().tolist()


def _storage_bytes(t: torch.Tensor) -> list[float]:
    floats = torch.tensor(t.untyped_storage().cpu().tolist(), dtype=torch.uint8).view(torch.float32)
    return floats[t.storage_offset():t.storage_offset() + 6].tolist()


def _storage_clone(t: torch.Tensor) -> list[float]:
    clone = t.untyped_storage().clone()
    return torch.empty(0, device=t.device).set_(clone, t.storage_offset(), t.shape, t.stride()).cpu().tolist()


def _typed_storage(t: torch.Tensor) -> list[float]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # TypedStorage's deprecation
        return t.storage().tolist()[t.storage_offset():t.storage_offset() + 6]


OBSERVERS: dict[str, Callable[[torch.Tensor], Any]] = {
    "deepcopy": lambda t: copy.deepcopy(t).cpu().tolist(),
    "pickle": lambda t: pickle.loads(pickle.dumps(t)).cpu().tolist(),
    "torch.save": _torch_save,
    "safetensors.save_file": _safetensors,
    "multiprocessing pickling": _forking_pickler,
    "untyped_storage().clone()": _storage_clone,
    "untyped_storage().cpu()": _storage_bytes,
    "storage()": _typed_storage,
    "untyped_storage().data_ptr()": _storage_floats,
    "data_ptr()": lambda t: _floats_at(t.data_ptr(), 6),
    "to_dlpack": lambda t: torch.from_dlpack(torch.utils.dlpack.to_dlpack(t)).cpu().tolist(),
    "__dlpack__": lambda t: torch.from_dlpack(t).cpu().tolist(),
    "__array__": lambda t: t.__array__().tolist(),
    "numpy()": lambda t: t.numpy().tolist(),
    "numpy(force=True)": lambda t: t.numpy(force=True).tolist(),
    "tolist()": lambda t: t.tolist(),
    "item() of a slice": lambda t: t[2].item(),
    "torch.equal": lambda t: torch.equal(t, torch.tensor(EXPECTED, device="neuron")),
    "assert_close vs CPU": lambda t: torch.testing.assert_close(t, torch.tensor(EXPECTED), check_device=False),
    "print": lambda t: str(t),
    "share_memory_()": lambda t: t.share_memory_().cpu().tolist(),
    "clone().cpu()": lambda t: t.clone().cpu().tolist(),
}


def _observe(observer: Callable[[torch.Tensor], Any], t: torch.Tensor) -> Any:
    """The observer's value, or the type and first line of the error it raised."""
    try:
        return observer(t)
    except (RuntimeError, TypeError, ValueError, AssertionError) as exc:  # compared between the modes
        return ("raises", type(exc).__name__, str(exc).splitlines()[0] if str(exc) else "")


@pytest.mark.parametrize("produce", PRODUCERS, ids=PRODUCER_IDS)
@pytest.mark.parametrize("name", list(OBSERVERS))
def test_an_observer_of_a_queued_result_sees_the_op_by_op_value(on, produce, name):
    observer = OBSERVERS[name]
    x = torch.tensor(BASE, device="neuron")
    adaptive.set_enabled(False)
    expected = _observe(observer, produce(x))
    if isinstance(expected, list):
        assert expected == EXPECTED
    adaptive.set_enabled(True)
    adaptive.set_compile_after(1000)  # op by op at each flush: the queue's state is what is tested
    for _ in range(2):  # the first pass records the trace (runs at once), the second queues it
        produce(x)
        torch.neuron.synchronize()
    before = metrics()
    t = produce(x)
    queued = metrics()
    assert queued["queued_ops"] > before["queued_ops"] and queued["flushes"] == before["flushes"]
    assert _observe(observer, t) == expected
    torch.neuron.synchronize()
    assert metrics()["kernel_failures"] == 0


@pytest.mark.parametrize("produce", PRODUCERS, ids=PRODUCER_IDS)
def test_deepcopy_and_storage_pointer_of_a_merged_kernels_result(on, produce):
    # The same observers when the queued ops run as a compiled kernel (its results fill the storages).
    x = torch.tensor(BASE, device="neuron")
    adaptive.set_enabled(False)
    expected = produce(x).cpu().tolist()
    adaptive.set_enabled(True)
    adaptive.set_compile_after(1)
    copies, pointed = [], []
    for _ in range(4):
        t = produce(x)
        copies.append(copy.deepcopy(t).cpu().tolist())
        t = produce(x)
        pointed.append(_storage_floats(t))
    assert copies == [expected] * 4 and pointed == [expected] * 4
    m = metrics()
    assert m["queued_ops"] > 0 and m["kernel_hits"] > 0 and m["kernel_failures"] == 0


def test_asking_for_the_storage_of_an_unrelated_tensor_does_not_cut_the_merge(on):
    x = torch.tensor(BASE, device="neuron")
    other = torch.ones(3, device="neuron")
    for step in range(3):  # the first pass records (runs at once), the next ones queue
        y = result(x)
        before = metrics()["flushes"]
        assert other.untyped_storage().nbytes() == 12 and x.untyped_storage().nbytes() == 24
        assert metrics()["flushes"] == before  # x is read by the queued ops, not written
        assert y.untyped_storage().nbytes() == 24
        assert metrics()["flushes"] == before + (1 if step else 0)  # y's storage: the queue ran
        assert y.cpu().tolist() == EXPECTED
    assert metrics()["queued_ops"] == 6


LAYOUTS: dict[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = {
    "transposed operand": lambda a, w: (a.t() * 2).exp(),
    "slice of a result": lambda a, w: (a * 2 + 1)[1:, 2:],
    "column of a result": lambda a, w: (a @ w).neg()[:, 1],
    "keepdim sum": lambda a, w: (a * 3).sum(0, keepdim=True),
    "cat": lambda a, w: torch.cat([a.neg(), a * 2], dim=1),
    "amax": lambda a, w: (a @ w).amax(-1),
    "layer_norm": lambda a, w: torch.nn.functional.layer_norm(a * 2, (8,)),
    "expand of a result": lambda a, w: (a.sum(-1, keepdim=True) * 2).expand(4, 8),
}


def _layout(t: torch.Tensor) -> tuple:
    return (tuple(t.shape), t.stride(), t.storage_offset(), t.dtype, t.is_contiguous())


@pytest.mark.parametrize("name", list(LAYOUTS))
def test_the_metadata_of_a_queued_result_is_the_op_by_op_one_before_and_after_the_flush(on, name):
    fn = LAYOUTS[name]
    gen = torch.Generator().manual_seed(0)
    a_cpu, w_cpu = torch.randn(4, 8, generator=gen), torch.randn(8, 8, generator=gen)
    a, w = a_cpu.to("neuron"), w_cpu.to("neuron")
    adaptive.set_enabled(False)
    ref = fn(a, w)
    expected = (_layout(ref), ref.untyped_storage().nbytes(), ref.cpu())
    adaptive.set_enabled(True)
    for _ in range(4):  # record, queue (op by op), compile and queue (kernel), queue (kernel)
        before = metrics()["flushes"]
        t = fn(a, w)
        assert metrics()["flushes"] == before  # still queued: the metadata is the recorded one
        assert _layout(t) == expected[0]
        assert t.untyped_storage().nbytes() == expected[1]  # runs the queue
        torch.testing.assert_close(t.cpu(), expected[2], atol=TOL, rtol=1e-5)
        assert _layout(t) == expected[0]
    assert metrics()["kernel_failures"] == 0


def test_a_hook_registered_on_a_queued_result_sees_the_op_by_op_gradient(on):
    def run() -> tuple[list, list, list]:
        x = torch.arange(1.0, 5.0, device="neuron").requires_grad_()
        seen = []
        y = (x * 2 + 1) * x
        y.register_hook(lambda g: seen.append(g.cpu().tolist()) or g * 3)
        (y * y).sum().backward()
        return seen, x.grad.cpu().tolist(), y.detach().cpu().tolist()

    adaptive.set_enabled(False)
    expected = run()
    adaptive.set_enabled(True)
    for _ in range(4):
        assert run() == expected
    m = metrics()
    assert m["queued_ops"] > 0 and m["kernel_failures"] == 0


MEMORY_READERS: dict[str, Callable[[], int]] = {
    "torch.accelerator.memory_stats": lambda: torch.accelerator.memory_stats()["allocated_bytes.all.current"],
    "torch.accelerator.memory_allocated": lambda: torch.accelerator.memory_allocated(),
    "torch.accelerator.get_memory_info": lambda: -torch.accelerator.get_memory_info()[0],
    "torch.neuron.memory_stats": lambda: torch.neuron.memory_stats()["allocated_bytes.all.current"],
    "torch.neuron.memory_allocated": lambda: torch.neuron.memory_allocated(),
    "torch.neuron.mem_get_info": lambda: -torch.neuron.mem_get_info()[0],
}


@pytest.mark.parametrize("name", list(MEMORY_READERS))
def test_memory_counters_read_while_ops_are_queued_are_the_op_by_op_counters(on, name):
    # Queued ops hold their inputs (a tensor the program already dropped) and their results have no
    # memory yet: every public reader of the allocator's counters runs the queue first, so it sees
    # what op-by-op execution shows (the dropped input freed, the live result allocated).
    read = MEMORY_READERS[name]
    adaptive.set_compile_after(1000)

    def step() -> torch.Tensor:
        x = torch.ones(8192, device="neuron")  # 32 KiB, dropped when step returns
        return (x[:4096] * 2 + 1) * 3  # 16 KiB kept

    for _ in range(2):  # the first pass records the trace (runs at once), the second queues it
        step()
        torch.neuron.synchronize()
    base = read()
    before = metrics()
    kept = step()
    assert metrics()["queued_ops"] > before["queued_ops"]
    assert read() - base == 4096 * 4  # op by op: only `kept` is allocated
    assert metrics()["flushes"] > before["flushes"]
    assert kept[0].item() == 9.0
