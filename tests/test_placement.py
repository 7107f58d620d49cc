"""Wrong placement is CUDA's device-mismatch error, eager and compiled; CPU index tensors, 0-dim CPU
scalars and the pointwise foreach ops' CPU `scalars` tensor stay accepted where CUDA accepts them
(with the right values)."""
from __future__ import annotations

import pytest
import torch
import torch.nn as nn

MISMATCH = r"Expected all tensors to be on the same device, but found at least two devices, neuron:0 and cpu!"

_CONVS = {
    "conv1d": (lambda: nn.Conv1d(3, 4, 3), (1, 3, 8)),
    "conv2d": (lambda: nn.Conv2d(3, 4, 3), (1, 3, 8, 8)),
    "conv3d": (lambda: nn.Conv3d(3, 4, 3), (1, 3, 5, 5, 5)),
    "conv_transpose1d": (lambda: nn.ConvTranspose1d(3, 4, 3), (1, 3, 8)),
    "conv_transpose2d": (lambda: nn.ConvTranspose2d(3, 4, 3), (1, 3, 8, 8)),
    "conv_transpose3d": (lambda: nn.ConvTranspose3d(3, 4, 3), (1, 3, 5, 5, 5)),
}


def _conv_with_cpu(name: str, which: str) -> tuple[nn.Module, torch.Tensor]:
    make, shape = _CONVS[name]
    torch.manual_seed(0)
    conv = make().to("neuron")
    getattr(conv, which).data = getattr(conv, which).data.cpu()
    return conv, torch.randn(shape, device="neuron")


@pytest.mark.parametrize("which", ["weight", "bias"])
@pytest.mark.parametrize("name", list(_CONVS))
def test_conv_with_a_cpu_parameter_raises(name, which):
    conv, x = _conv_with_cpu(name, which)
    with pytest.raises(RuntimeError, match=MISMATCH + rf".*argument '{which}' in aten::convolution_overrideable"):
        conv(x)


def test_conv_with_a_cpu_input_raises():
    conv = nn.Conv2d(3, 4, 3).to("neuron")
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        conv(torch.randn(1, 3, 8, 8))


def test_conv_backward_with_a_cpu_grad_output_raises():
    x = torch.randn(1, 3, 8, 8, device="neuron")
    w = torch.randn(4, 3, 3, 3, device="neuron")
    with pytest.raises(RuntimeError, match=MISMATCH + r".*'grad_output' in aten::convolution_backward_overrideable"):
        torch.ops.aten.convolution_backward_overrideable(
            torch.randn(1, 4, 6, 6), x, w, [1, 1], [0, 0], [1, 1], False, [0, 0], 1, [True, True, False])


def test_conv_on_neuron_still_matches_cpu():
    torch.manual_seed(0)
    conv = nn.Conv2d(3, 4, 3)
    x = torch.randn(2, 3, 8, 8, requires_grad=True)
    conv(x).sum().backward()
    nconv = nn.Conv2d(3, 4, 3).to("neuron")
    nconv.load_state_dict(conv.state_dict())
    nx = x.detach().to("neuron").requires_grad_()
    out = nconv(nx)
    torch.testing.assert_close(out.cpu(), conv(x).detach())
    out.sum().backward()
    torch.testing.assert_close(nx.grad.cpu(), x.grad)
    torch.testing.assert_close(nconv.weight.grad.cpu(), conv.weight.grad)


@pytest.mark.parametrize("which", ["weight", "bias"])
def test_compiled_conv_with_a_cpu_parameter_raises_the_same_error(which):
    conv, x = _conv_with_cpu("conv2d", which)
    with pytest.raises(RuntimeError, match=MISMATCH + r".*conv2d"):
        torch.compile(conv, backend="neuron")(x)


def test_compiled_graph_device_check_allows_cpu_indices():
    def f(a, idx):
        b = a * 2
        b[idx] = 0.0
        return b[idx.flip(0)] + a.new_ones(2)

    a, idx = torch.arange(6.0).reshape(3, 2), torch.tensor([2, 0])
    got = torch.compile(f, backend="neuron")(a.to("neuron"), idx)
    assert got.device.type == "neuron" and torch.equal(got.cpu(), f(a, idx))


# -- indexing: CPU indices yes, CPU self / values no ----------------------------------------------------

def test_index_put_with_cpu_self_and_neuron_indices_raises():
    message = r"indices should be either on cpu or on the same device as the indexed tensor \(cpu\)"
    with pytest.raises(RuntimeError, match=message):
        torch.index_put(torch.zeros(3, 2), (torch.tensor([0], device="neuron"),), torch.ones(1, 2, device="neuron"))


def test_indices_on_another_core_raise_pytorchs_indexing_error():
    # PyTorch's TestDevicePrecision.test_advancedindex_mixed_devices_error: indices on a third
    # device (CUDA: cuda:1 indices into a cuda:0 tensor) raise the indexing error naming the
    # indexed tensor's device, for reads and writes, beside CPU indices or alone.
    message = r"indices should be either on cpu or on the same device as the indexed tensor \(neuron:0\)"
    x = torch.randn(3, 4, 4, 4, 3, device="neuron:0")
    on_cpu, on_core_1 = torch.tensor([0, 2, 1]), torch.tensor([0, 2, 1], device="neuron:1")
    with pytest.raises(RuntimeError, match=message):
        x[:, on_cpu, None, on_core_1, 0]
    with pytest.raises(RuntimeError, match=message):
        x[on_core_1]
    with pytest.raises(RuntimeError, match=message):
        x[on_core_1] = 1.0
    # Same core or CPU: the CPU's values.
    a = torch.arange(6.0).reshape(3, 2)
    assert torch.equal(a.to("neuron:1")[on_core_1[:2]].cpu(), a[torch.tensor([0, 2])])


def test_an_operand_on_another_core_is_named():
    message = r"neuron:0 and neuron:1! \(when checking argument 'other' in aten::atan2"
    with pytest.raises(RuntimeError, match=message):
        torch.atan2(torch.ones(2, device="neuron:0"), torch.ones(2, device="neuron:1"))


def test_index_put_with_cpu_self_and_cpu_indices_beside_neuron_values_raises():
    with pytest.raises(RuntimeError, match=MISMATCH + r".*argument 'self'"):
        torch.index_put(torch.zeros(3, 2), (torch.tensor([0]),), torch.ones(1, 2, device="neuron"))


@pytest.mark.parametrize("inplace", [False, True])
def test_index_put_with_cpu_values_raises(inplace):
    x = torch.zeros(3, 2, device="neuron")
    fn = x.index_put_ if inplace else x.index_put
    with pytest.raises(RuntimeError, match=MISMATCH + r".*argument 'values'"):
        fn((torch.tensor([0]),), torch.ones(1, 2))


def test_cpu_indices_and_0_dim_cpu_values_are_accepted():
    a = torch.arange(6.0).reshape(3, 2)
    n = a.to("neuron")
    idx = torch.tensor([2, 0])
    assert torch.equal(n[idx].cpu(), a[idx])
    n[torch.tensor([1])] = torch.ones(1, 2, device="neuron")
    n[torch.tensor([0])] = torch.tensor(5.0)  # a 0-dim CPU value is a scalar
    n.index_put_((torch.tensor([2, 2]),), torch.ones(2, device="neuron"), accumulate=True)
    expected = a.clone()
    expected[1] = 1.0
    expected[0] = 5.0
    expected[2] += 2.0
    assert torch.equal(n.cpu(), expected)


def test_binary_ops_with_a_0_dim_cpu_tensor_are_accepted():
    x = torch.randn(3)
    got = x.to("neuron") * torch.tensor(2.0)
    assert got.device.type == "neuron" and torch.equal(got.cpu(), x * 2)


@pytest.mark.parametrize(
    "name, fn",
    [
        ("unary out=", lambda x, out: torch.sin(x, out=out)),
        ("binary out=", lambda x, out: torch.add(x, x, out=out)),
        ("reduction out=", lambda x, out: torch.sum(x, 0, out=out)),
        ("in-place self", lambda x, out: out.add_(x.sum())),
    ],
)
@pytest.mark.parametrize("shape", [(), (3,)])
def test_a_0_dim_cpu_tensor_written_beside_neuron_operands_raises(name, fn, shape):
    # A 0-dim CPU tensor is a scalar only as an input (TensorIterator exempts CPU scalars that
    # are not outputs): CUDA refuses one as out= or in-place self beside device operands.
    # Found by PyTorch's TestCommon.test_out (its wrong-device case with 0-dim samples).
    x = torch.ones(shape, device="neuron")
    out = torch.zeros(())
    with pytest.raises(RuntimeError, match=MISMATCH):
        fn(x, out)
    assert out.item() == 0.0  # nothing written into the refused tensor
    x.add_(torch.tensor(2.0))  # read-only, the same 0-dim CPU tensor stays a scalar operand
    assert torch.equal(x.cpu(), torch.full(shape, 3.0))


@pytest.mark.parametrize("name", ["addcdiv", "addcmul"])
@pytest.mark.parametrize("inplace", [False, True])
def test_foreach_pointwise_ops_take_their_scalars_tensor_on_the_cpu(name, inplace):
    # `scalars`, a 1-d tensor of per-tensor scalars, is read on the host: CUDA requires it on the
    # CPU, so beside neuron tensor lists it is accepted (values as the CPU's), not a mixed-device error.
    torch.manual_seed(0)
    shapes = [(3, 4), (5,), (2, 2, 2)]
    selfs, t1s, t2s = ([torch.randn(s) for s in shapes] for _ in range(3))
    t2s = [t.abs() + 0.5 for t in t2s]
    scalars = torch.tensor([0.5, -2.0, 3.0])
    op = getattr(torch, f"_foreach_{name}_" if inplace else f"_foreach_{name}")
    expected = [getattr(torch, name)(a, b, c, value=v)
                for a, b, c, v in zip(selfs, t1s, t2s, scalars.tolist(), strict=True)]
    on = [[t.to("neuron") for t in ts] for ts in (selfs, t1s, t2s)]
    result = op(*on, scalars)
    got = on[0] if inplace else result
    assert all(g.device.type == "neuron" for g in got)
    for g, e in zip(got, expected, strict=True):
        torch.testing.assert_close(g.cpu(), e)


def test_foreach_pointwise_ops_still_refuse_a_cpu_tensor_list():
    tensors = [torch.randn(3, device="neuron") for _ in range(2)]
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        torch._foreach_addcmul(tensors, [torch.randn(3) for _ in range(2)], tensors, torch.tensor([1.0, 2.0]))


def test_foreach_pointwise_ops_give_pytorchs_error_for_a_short_scalars_tensor():
    tensors = [torch.randn(3, device="neuron") for _ in range(3)]
    with pytest.raises(RuntimeError, match=r"Expected length of scalars to match input of length 3 but got 2 instead"):
        torch._foreach_addcdiv(tensors, tensors, tensors, torch.tensor([1.0, 2.0]))
