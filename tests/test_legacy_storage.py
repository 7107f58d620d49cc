"""torch.neuron's legacy typed storage classes: what the CPU gives as torch.<Type>Storage, a neuron
tensor gives as torch.neuron.<Type>Storage (as CUDA gives torch.cuda.<Type>Storage)."""
import pickle
import warnings

import pytest
import torch

DTYPES = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16, torch.bfloat16,
          torch.float32, torch.float64, torch.complex64, torch.complex128, torch.bool]


@pytest.fixture(autouse=True)
def _quiet_typed_storage_deprecation():
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="TypedStorage is deprecated")
        yield


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_storage_type_is_the_cpu_class_of_torch_neuron(dtype):
    # PyTorch's TestTorchDeviceType.test_tensor_storage_type: storage_type() was None on neuron.
    cpu = torch.zeros(3, dtype=dtype)
    neuron = cpu.to("neuron")
    cls = neuron.storage_type()
    assert cls is not None and cls.__module__ == "torch.neuron"
    assert cls.__name__ == cpu.storage_type().__name__
    assert cls is getattr(torch.neuron, cpu.storage_type().__name__)
    assert neuron.storage().type() == "torch.neuron." + cpu.storage_type().__name__
    assert isinstance(neuron.storage(), cls) and not isinstance(cpu.storage(), cls)
    assert not isinstance(neuron.storage(), cpu.storage_type())


def test_constructing_a_neuron_storage_class_allocates_on_the_device():
    values = [3, -1, 7]
    s = torch.neuron.LongStorage(values)
    assert s.device == torch.device("neuron:0") and s.dtype == torch.int64
    assert s.tolist() == torch.LongStorage(values).tolist()
    with torch.neuron.device(1):
        empty = torch.neuron.HalfStorage(4)
    assert empty.device == torch.device("neuron:1") and len(empty) == 4 and empty.dtype == torch.float16
    with pytest.raises(RuntimeError, match="Device of 'wrap_storage' must be neuron"):
        torch.neuron.FloatStorage(wrap_storage=torch.UntypedStorage(8))


def test_neuron_storage_classes_pickle_by_name_and_refuse_host_buffers():
    assert pickle.loads(pickle.dumps(torch.neuron.BFloat16Storage)) is torch.neuron.BFloat16Storage
    with pytest.raises(RuntimeError, match="from_buffer: not available for neuron storage"):
        torch.neuron.FloatStorage.from_buffer(b"\0" * 8, "native")
    assert not hasattr(torch.neuron, "QInt8Storage")  # no quantized tensors on neuron
