"""DLPack with ``neuron`` tensors: the capsule names the tensor's core (``kDLExtDev``, index),
``__dlpack_device__`` says the same, ``torch.from_dlpack`` gives the same memory back on the same
core (or a copy where one is asked for), and a consumer that reads host memory refuses it."""
from __future__ import annotations

import ctypes

import numpy as np
import pytest
import torch
from torch.utils.dlpack import DLDeviceType, to_dlpack


def _capsule_device(capsule: object) -> tuple[int, int]:
    """(device_type, device_id) of an unversioned DLPack capsule: the DLTensor's ``device`` field,
    after its ``void* data`` (dlpack.h: ``DLManagedTensor`` begins with its ``DLTensor``)."""
    get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
    get_pointer.restype = ctypes.c_void_p
    get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
    address = get_pointer(capsule, b"dltensor")
    device = (ctypes.c_int32 * 2).from_address(address + ctypes.sizeof(ctypes.c_void_p))
    return device[0], device[1]


@pytest.mark.parametrize("index", [0, 1])
def test_dlpack_device_is_the_capsules_device(index):
    x = torch.arange(6.0, device=f"neuron:{index}")
    assert x.__dlpack_device__() == (DLDeviceType.kDLExtDev, index)
    assert _capsule_device(to_dlpack(x)) == (int(DLDeviceType.kDLExtDev), index)
    assert torch.ones(2).__dlpack_device__() == (DLDeviceType.kDLCPU, 0)  # other devices: PyTorch's answer


def test_from_dlpack_of_a_neuron_tensor_shares_its_memory_on_its_core():
    base = torch.arange(12.0).view(3, 4)
    x = base.to("neuron:1")[:, 1::2]  # a non-contiguous view with an offset
    y = torch.from_dlpack(x)
    assert y.device == torch.device("neuron:1")
    assert y.data_ptr() == x.data_ptr() and y.stride() == x.stride()
    assert torch.equal(y.cpu(), base[:, 1::2])
    y.add_(100.0)
    assert torch.equal(x.cpu(), base[:, 1::2] + 100.0)


def test_from_dlpack_copies_where_asked():
    base = torch.arange(6, dtype=torch.int32).view(2, 3)
    x = base.to("neuron:1")
    on_cpu = torch.from_dlpack(x, device="cpu")
    assert on_cpu.device == torch.device("cpu") and torch.equal(on_cpu, base)
    copied = torch.from_dlpack(x, copy=True)
    assert copied.device == x.device and copied.data_ptr() != x.data_ptr()
    assert torch.equal(copied.cpu(), base)
    other_core = torch.from_dlpack(x, device="neuron:0")
    assert other_core.device == torch.device("neuron:0") and torch.equal(other_core.cpu(), base)


def test_a_host_memory_consumer_refuses_a_neuron_capsule():
    # NumPy reads host memory only: it must refuse device memory, not read it as a CPU array.
    with pytest.raises(RuntimeError, match="Unsupported device"):
        np.from_dlpack(torch.ones(3, device="neuron"))
