"""Op and dtype policy (csrc/aten/OpPolicy.cpp): one test per table.

Each test fails when an entry is dropped from its table: the op would then take PyTorch's
composite kernel on ``neuron`` (other rounding, more dispatched ops), a CPU index tensor would
be rejected, or a float64/complex op would stop counting as a host fallback.
"""
import warnings

import pytest
import torch

import torch_neuronx


def N(t):  # noqa: N802  (short: it wraps nearly every tensor in these tests)
    return t.to("neuron")


def _run_tracked(fn, *args):
    torch_neuronx.clear_op_tracking()
    out = fn(*args)
    return out, torch_neuronx.get_executed_ops()


# (name, function, CPU inputs, the one op it must run as on neuron)
_CPU_KERNEL_CASES = [
    ("layer_norm", lambda x, w, b: torch.nn.functional.layer_norm(x, (7,), w, b),
     lambda: (torch.randn(5, 7), torch.randn(7), torch.randn(7)), "aten::native_layer_norm"),
    ("layer_norm_bf16", lambda x, w, b: torch.nn.functional.layer_norm(x, (7,), w, b),
     lambda: (torch.randn(5, 7).bfloat16(), torch.randn(7).bfloat16(), torch.randn(7).bfloat16()),
     "aten::native_layer_norm"),
    ("group_norm_bf16", lambda x, w, b: torch.nn.functional.group_norm(x, 2, w, b),
     lambda: (torch.randn(2, 6, 5).bfloat16(), torch.randn(6).bfloat16(), torch.randn(6).bfloat16()),
     "aten::native_group_norm"),
    ("addr_bf16", lambda m, u, v: torch.addr(m, u, v, beta=0.5, alpha=2.0),
     lambda: (torch.randn(5, 10).bfloat16(), torch.randn(5).bfloat16(), torch.randn(10).bfloat16()),
     "aten::addr"),
    ("powsum", lambda x: torch.linalg._powsum(x, 3.0), lambda: (torch.randn(1000),), "aten::linalg__powsum"),
    ("all_dim", lambda x: torch.all(x, 1), lambda: (torch.randn(4, 6) > -1,), "aten::all.dim"),
    ("any_dims", lambda x: x.any(dim=(0, 1)), lambda: (torch.randn(4, 6) > 1,), "aten::any.dims"),
    ("_stack", lambda a, b: torch._stack([a, b], 1), lambda: (torch.randn(3, 4), torch.randn(3, 4)),
     "aten::_stack"),
    ("mse_loss_mean", torch.nn.functional.mse_loss, lambda: (torch.randn(4, 3), torch.randn(4, 3)),
     "aten::mse_loss"),
    ("mse_loss_sum", lambda a, b: torch.nn.functional.mse_loss(a, b, reduction="sum"),
     lambda: (torch.randn(4, 3), torch.randn(4, 3)), "aten::mse_loss"),
    ("smooth_l1_loss_mean", torch.nn.functional.smooth_l1_loss, lambda: (torch.randn(4, 3), torch.randn(4, 3)),
     "aten::smooth_l1_loss"),
    ("smooth_l1_loss_sum", lambda a, b: torch.nn.functional.smooth_l1_loss(a, b, reduction="sum", beta=0.5),
     lambda: (torch.randn(4, 3), torch.randn(4, 3)), "aten::smooth_l1_loss"),
]


@pytest.mark.parametrize("name,fn,make,op", _CPU_KERNEL_CASES, ids=[c[0] for c in _CPU_KERNEL_CASES])
def test_ops_needing_cpu_kernel_run_it_bit_for_bit(name, fn, make, op):
    torch.manual_seed(0)
    args = make()
    expected = fn(*args)
    out, ops = _run_tracked(fn, *[N(a) for a in args])
    assert out.device.type == "neuron"
    assert out.dtype == expected.dtype
    # The CPU kernel on the same bytes gives the CPU result exactly; the composite kernels differ
    # (rounding) or run as several ops.
    assert torch.equal(out.cpu(), expected)
    assert ops == {op: 1}


@pytest.mark.parametrize("loss", [torch.nn.functional.mse_loss, torch.nn.functional.smooth_l1_loss])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_loss_reductions_warn_nothing(loss, reduction):
    """Through PyTorch's composite (a 0-dim out tensor + the out= kernel) the CPU kernel resized
    `out` and PyTorch printed "An output with one or more elements was resized"; CPU prints nothing."""
    torch.manual_seed(0)
    a, b = torch.randn(4, 3, requires_grad=True), torch.randn(4, 3)
    na = N(a.detach()).requires_grad_()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = loss(na, N(b), reduction=reduction)
        out.sum().backward()
    expected = loss(a, b, reduction=reduction)
    expected.sum().backward()
    assert torch.equal(out.cpu(), expected.detach())
    assert torch.equal(na.grad.cpu(), a.grad)


def test_linalg_solve_with_a_cpu_operand_is_a_device_error():
    """Through the structured composite, A on the CPU beside a neuron B was an INTERNAL ASSERT."""
    torch.manual_seed(0)
    a, b = torch.randn(3, 3) + 3 * torch.eye(3), torch.randn(3, 2)
    for args in ((a, N(b)), (N(a), b)):
        with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device.*_linalg_solve_ex"):
            torch.linalg.solve(*args)
    torch.testing.assert_close(torch.linalg.solve(N(a), N(b)).cpu(), torch.linalg.solve(a, b))


def test_foreach_ops_run_as_one_op():
    tensors = [torch.randn(3), torch.randn(5), torch.randn(2)]
    out, ops = _run_tracked(torch._foreach_mul, [N(t) for t in tensors], 3.0)
    assert [o.device.type for o in out] == ["neuron"] * 3
    for o, t in zip(out, tensors, strict=True):
        assert torch.equal(o.cpu(), t * 3.0)
    assert ops == {"aten::_foreach_mul.Scalar": 1}


def test_index_ops_accept_cpu_indices():
    x = torch.arange(12.0).reshape(3, 4)
    idx = torch.tensor([2, 0])
    assert torch.equal(N(x)[idx].cpu(), x[idx])  # aten::index
    y, ref = N(x.clone()), x.clone()
    y[idx] = N(torch.full((2, 4), -1.0))  # aten::index_put_
    ref[idx] = torch.full((2, 4), -1.0)
    assert torch.equal(y.cpu(), ref)
    y.index_put_((idx,), N(torch.ones(2, 4)), accumulate=True)  # aten::_index_put_impl_
    ref.index_put_((idx,), torch.ones(2, 4), accumulate=True)
    assert torch.equal(y.cpu(), ref)
    # Other ops keep CUDA's rule: a CPU tensor beside neuron tensors is an error.
    with pytest.raises(RuntimeError, match="same device"):
        torch.index_select(N(x), 0, idx)


@pytest.mark.parametrize("dtype,host_fallback", [
    (torch.float64, True), (torch.complex64, True), (torch.complex128, True),
    (torch.float32, False), (torch.bfloat16, False), (torch.int64, False),
])
def test_host_fallback_dtypes(dtype, host_fallback):
    x = N(torch.ones(4, dtype=dtype))
    torch_neuronx.clear_op_tracking()
    y = x * 3
    assert torch.equal(y.cpu(), torch.full((4,), 3, dtype=dtype))
    counted = torch_neuronx.get_fallback_ops().get("aten::mul.Tensor", 0)
    assert counted == (1 if host_fallback else 0)


def test_index_put_on_a_cpu_tensor_with_neuron_indices_writes_on_the_cpu():
    """As on CUDA (index_put moves the indices to the indexed tensor's device): the CPU tensor is
    written in place and stays on the CPU; reading with neuron indices, or a non-scalar neuron value,
    is a device error."""
    x = torch.zeros(5)
    idx = torch.tensor([1, 3], device="neuron")
    before = torch.neuron.memory_allocated()
    x[idx] = 2.0
    assert x.device.type == "cpu" and x.tolist() == [0.0, 2.0, 0.0, 2.0, 0.0]
    x[idx] = torch.tensor(3.0, device="neuron")
    x.index_put_((idx,), torch.tensor(1.0), accumulate=True)
    assert x.tolist() == [0.0, 4.0, 0.0, 4.0, 0.0]
    assert torch.neuron.memory_allocated() == before      # nothing of the CPU result is accounted on neuron
    with pytest.raises(RuntimeError, match="same device as the indexed tensor"):
        x[idx]
    with pytest.raises(RuntimeError, match="device"):
        x[idx] = torch.tensor([4.0, 5.0], device="neuron")
    assert x.tolist() == [0.0, 4.0, 0.0, 4.0, 0.0]


def test_conj_physical_in_place_runs_the_cpu_kernel():
    # Its composite kernel calls a DispatchStub that has no neuron kernel (an INTERNAL ASSERT
    # before the table entry); found by PyTorch's TestMathBits.test_conj_view.
    x = torch.randn(3, 4, dtype=torch.complex64)
    n = N(x)
    torch_neuronx.clear_op_tracking()
    out = n.conj_physical_()
    assert torch_neuronx.get_executed_ops() == {"aten::conj_physical_": 1}
    assert out is n and torch.equal(n.cpu(), x.conj_physical())
    # on a conjugate view, as TestMathBits runs it: the bit stays set and the values match the CPU
    expected = x.clone().conj().conj_physical_()
    got = N(x).conj().conj_physical_()
    assert got.is_conj() == expected.is_conj()
    assert torch.equal(got.resolve_conj().cpu(), expected.resolve_conj())
