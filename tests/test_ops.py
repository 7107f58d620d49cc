"""Eager op semantics: views, in-place, strides, copies, dtypes, device checks, fallbacks."""

import pytest
import torch

import torch_neuronx


def N(t):  # noqa: N802  (short: it wraps nearly every tensor in these tests)
    return t.to("neuron")


def test_views_share_memory():
    c = torch.arange(24.0).reshape(4, 6)
    x = N(c)
    v = x[1:, ::2].t()
    assert v.device.type == "neuron" and not v.is_contiguous()
    assert torch.equal(v.cpu(), c[1:, ::2].t())
    v.mul_(10)
    c[1:, ::2].t().mul_(10)
    assert torch.equal(x.cpu(), c)
    assert x.view(-1).data_ptr() == x.data_ptr()
    d = x.diagonal()
    assert d.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
    assert torch.equal(x.unfold(1, 2, 2).cpu(), c.unfold(1, 2, 2))
    assert torch.equal(x.expand(2, 4, 6).cpu(), c.expand(2, 4, 6))


def test_inplace_and_noncontiguous_ops():
    c = torch.randn(8, 8)
    x = N(c)
    xt, ct = x.t(), c.t()
    torch.testing.assert_close((xt @ xt).cpu(), ct @ ct)
    x[:, 3] = 1.5
    c[:, 3] = 1.5
    x.index_add_(0, N(torch.tensor([0, 2])), N(torch.ones(2, 8)))
    c.index_add_(0, torch.tensor([0, 2]), torch.ones(2, 8))
    assert torch.equal(x.cpu(), c)
    x.clamp_(max=0.5)
    assert torch.equal(x.cpu(), c.clamp(max=0.5))


def test_to_copy_with_dtype_change_across_devices():
    c = torch.randn(5, 7)
    assert torch.equal(c.to("neuron", torch.bfloat16).cpu(), c.to(torch.bfloat16))
    assert torch.equal(N(c).to("cpu", torch.float16), c.half())
    assert torch.equal(N(c).to(torch.int32).cpu(), c.to(torch.int32))
    assert N(c).to("neuron:1").device == torch.device("neuron:1")
    assert torch.equal(N(c.t()).contiguous().cpu(), c.t().contiguous())


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float8_e4m3fn, torch.float8_e5m2, torch.int8,
                                   torch.uint8, torch.int32, torch.bool])
def test_dtypes_round_trip(dtype):
    c = (torch.randn(16) * 4).to(dtype)
    assert torch.equal(N(c).cpu(), c)
    if dtype.is_floating_point and dtype.itemsize == 2:
        assert torch.equal((N(c) * 2).cpu(), c * 2)


def test_factories():
    assert torch.equal(torch.arange(5, device="neuron").cpu(), torch.arange(5))
    assert torch.equal(torch.full((2, 3), 7.0, device="neuron").cpu(), torch.full((2, 3), 7.0))
    assert torch.equal(torch.eye(3, device="neuron").cpu(), torch.eye(3))
    assert torch.equal(torch.linspace(0, 1, 5, device="neuron").cpu(), torch.linspace(0, 1, 5))
    assert torch.zeros_like(N(torch.ones(2))).device.type == "neuron"
    t = torch.tensor([1, 2, 3], device="neuron")
    assert t.device.type == "neuron" and t.tolist() == [1, 2, 3]
    assert torch.randn(3, 4, device="neuron").shape == (3, 4)
    assert N(torch.ones(2)).new_zeros(3).device.type == "neuron"


def test_mixing_with_cpu_is_an_error_like_cuda():
    x = N(torch.ones(3))
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device.*neuron:0 and cpu"):
        x + torch.ones(3)
    with pytest.raises(RuntimeError, match="same device"):
        torch.mm(N(torch.ones(2, 2)), torch.ones(2, 2))
    # 0-dim CPU tensors are scalars, as on CUDA; CPU index tensors are allowed for indexing
    assert torch.equal((x * torch.tensor(2.0)).cpu(), torch.full((3,), 2.0))
    assert torch.equal(N(torch.arange(5.0))[torch.tensor([0, 4])].cpu(), torch.tensor([0.0, 4.0]))


def test_overlapping_copy_raises():
    x = N(torch.arange(6.0))
    with pytest.raises(RuntimeError, match="overlap|written-to"):
        torch.add(x[:-1], 1, out=x[1:])


def test_fp64_is_a_counted_host_fallback_warned_once(py):
    r = py("""
        import warnings, torch, torch_neuronx
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter('always')
            x = torch.ones(3, dtype=torch.float64, device='neuron')
            y = (x * 2 + 1).sum()
            z = x.exp()
        print(y.item(), len([m for m in w if 'fp64' in str(m.message)]))
        f = torch_neuronx.get_fallback_ops()
        print(f.get('aten::mul.Tensor', 0) >= 1, f.get('aten::exp', 0) >= 1, 'aten::empty.memory_format' in f)
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("\n")[:2] == ["9.0 1", "True True False"]


def test_op_tracking():
    torch_neuronx.clear_op_tracking()
    x = torch.randn(4, 4, device="neuron")
    (x @ x).relu()
    ops = torch_neuronx.get_executed_ops()
    assert ops.get("aten::mm.out", 0) + ops.get("aten::mm", 0) >= 1
    assert any(k.startswith("aten::relu") for k in ops)
    assert all(isinstance(v, int) and v > 0 for v in ops.values())
    assert torch_neuronx.get_fallback_ops() == {}
    torch_neuronx.clear_op_tracking()
    assert torch_neuronx.get_executed_ops() == {}


def test_scalars_and_item():
    x = N(torch.tensor([1.5, 2.5]))
    assert x.sum().item() == 4.0
    assert float(x[0]) == 1.5
    assert bool((x > 2).any())


def test_conv_and_complex():
    conv = torch.nn.Conv2d(3, 4, 3, padding=1)
    x = torch.randn(2, 3, 8, 8)
    ref = conv(x)
    out = conv.to("neuron")(N(x))
    torch.testing.assert_close(out.cpu(), ref, rtol=1e-5, atol=1e-5)
    out.sum().backward()
    z = torch.randn(4, dtype=torch.complex64)
    torch.testing.assert_close((N(z) * N(z).conj()).cpu(), z * z.conj())
    torch.testing.assert_close(torch.fft.fft(N(torch.arange(8.0))).cpu(), torch.fft.fft(torch.arange(8.0)))


def test_complex_results_count_as_fallback():
    torch_neuronx.clear_op_tracking()
    torch.fft.fft(N(torch.randn(8)))
    assert torch_neuronx.get_fallback_ops().get("aten::_fft_r2c") == 1


def test_quantized_results_get_a_clear_error():
    x = torch.rand(4, device="neuron")
    with pytest.raises(NotImplementedError, match="quantized tensor"):
        torch.quantize_per_tensor(x, 0.1, 0, torch.qint8)
    with pytest.raises(NotImplementedError, match="quantized"):
        torch.quantize_per_tensor(x.cpu(), 0.1, 0, torch.qint8).to("neuron")


def test_sparse_layouts_get_a_clear_error():
    with pytest.raises(NotImplementedError, match="only dense"):
        torch.sparse_coo_tensor([[0, 1], [1, 0]], [1.0, 2.0], (2, 2)).to("neuron")
    with pytest.raises(RuntimeError, match="only dense"):
        N(torch.eye(3)).to_sparse()
