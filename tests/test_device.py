"""Current device per thread, device indices, device properties."""
import threading

import pytest
import torch


def test_set_device_and_context():
    assert torch.neuron.current_device() == 0
    torch.neuron.set_device(2)
    assert torch.empty(1, device="neuron").device == torch.device("neuron:2")
    with torch.neuron.device(3):
        assert torch.neuron.current_device() == 3
        assert torch.zeros(1, device="neuron").device.index == 3
    assert torch.neuron.current_device() == 2


def test_accelerator_set_device_index():
    torch.accelerator.set_device_index(1)
    assert torch.neuron.current_device() == 1
    assert torch.accelerator.current_device_index() == 1
    with torch.accelerator.device_index(3):
        assert torch.neuron.current_device() == 3
    assert torch.neuron.current_device() == 1


def test_explicit_index_and_op_results_stay_on_it():
    x = torch.randn(3, 3, device="neuron:2")
    assert (x @ x).device == torch.device("neuron:2")
    assert x.sum().device == torch.device("neuron:2")


def test_current_device_is_per_thread():
    torch.neuron.set_device(1)
    seen = []
    t = threading.Thread(target=lambda: (torch.neuron.set_device(3), seen.append(torch.neuron.current_device())))
    t.start()
    t.join()
    assert seen == [3]
    assert torch.neuron.current_device() == 1


@pytest.mark.parametrize("bad", ["neuron:4", "neuron:17"])
def test_bad_index_is_a_clear_error(bad):
    with pytest.raises(RuntimeError, match=r"Invalid device neuron:\d+: 4 logical NeuronCore"):
        torch.ones(1, device=bad)
    with pytest.raises(RuntimeError, match="Invalid device"):
        torch.neuron.set_device(int(bad.split(":")[1]))


def test_mixing_cores_is_an_error():
    a = torch.ones(2, device="neuron:0")
    b = torch.ones(2, device="neuron:1")
    with pytest.raises(RuntimeError, match="same device.*neuron:0 and neuron:1"):
        a + b
    assert torch.equal((a + b.to("neuron:0")).cpu(), torch.full((2,), 2.0))


def test_device_properties():
    p = torch.neuron.get_device_properties(0)
    assert p.name == torch.neuron.get_device_name(0) == "Trainium2 NeuronCore-v3 (LNC=2)"
    assert p.total_memory == 24 << 30 and p.lnc == 2 and p.platform == "trn2"
    assert p.visible_cores == 4 and p.chips == 1
    assert torch.neuron.get_device_properties("neuron:3").global_core_id == 3
    assert torch.neuron.is_bf16_supported()
    assert torch.bfloat16 in torch.neuron.get_amp_supported_dtype()
    assert torch.neuron.is_initialized()


def test_accelerator_device_capability_lists_the_device_dtypes():
    caps = torch.accelerator.get_device_capability("neuron:0")
    dtypes = caps["supported_dtypes"]
    for dtype in (torch.float32, torch.bfloat16, torch.float16, torch.float8_e4m3fn, torch.int64, torch.bool):
        assert dtype in dtypes
        torch.empty(2, dtype=dtype, device="neuron")  # each listed dtype can be allocated
    # quantized tensors are refused on the device, so their dtypes are not listed
    assert torch.qint8 not in dtypes and torch.quint8 not in dtypes
    with pytest.raises(NotImplementedError, match="quantized"):
        torch.empty(2, dtype=torch.qint8, device="neuron")
    assert torch.accelerator.get_device_capability() == caps
    # PyTorch's accelerator contract: a listed dtype round-trips through another listed one, an
    # unlisted one raises (the bit-container and sub-byte dtypes have no copy kernel, as on CPU)
    for name in dir(torch):
        dtype = getattr(torch, name)
        if not isinstance(dtype, torch.dtype):
            continue
        if dtype in dtypes:
            back = torch.zeros(4, dtype=dtype).to("neuron").to(torch.float32).to(dtype)
            assert back.dtype == dtype and back.device.type == "neuron"
            assert torch.equal(back.cpu().view(torch.uint8), torch.zeros(4, dtype=dtype).view(torch.uint8))
        else:
            # no copy kernel (bits*, sub-byte, float4) or no quantized tensors on the device
            with pytest.raises(NotImplementedError, match="not implemented for|quantized|dense"):
                torch.empty(16, dtype=dtype, device="neuron").to(torch.float32).to(dtype)
    for dtype in (torch.bits8, torch.uint4, torch.int4, torch.float4_e2m1fn_x2):
        assert dtype not in dtypes
    with pytest.raises(RuntimeError, match="neuron"):
        torch.accelerator.get_device_capability(torch.neuron.device_count())
