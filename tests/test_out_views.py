"""`out=` tensors that are strided views, and `resize_` to a tensor's own size.

PyTorch's rule (CPU and CUDA): an `out=` tensor that already has the result's shape keeps its
strides, so the op writes exactly the view's elements; `resize_` to the current sizes is a no-op.
Each case runs on the CPU and on `neuron` from the same inputs, and the whole base buffer must be
equal afterwards (elements outside the view untouched, the view's elements written).
"""
import warnings

import pytest
import torch


def _strided_buffers(device):
    base = torch.full((6, 6), -7.0, device=device)
    return base, base[::2, 1::3]  # 3x2 view, strides (12, 3)


FACTORIES = {
    "zeros": lambda v: torch.zeros(3, 2, out=v),
    "ones": lambda v: torch.ones(3, 2, out=v),
    "full": lambda v: torch.full((3, 2), 5.0, out=v),
    "arange": lambda v: torch.arange(2.0, out=v[0]),
    "eye": lambda v: torch.eye(3, 2, out=v),
    "linspace": lambda v: torch.linspace(0, 1, 2, out=v[1]),
}


@pytest.mark.parametrize("name", sorted(FACTORIES))
def test_factory_out_view_writes_the_view_only(name):
    results = []
    for device in ("cpu", "neuron"):
        base, view = _strided_buffers(device)
        FACTORIES[name](view)
        assert view.stride() == (12, 3)
        results.append(base.cpu())
    torch.testing.assert_close(results[1], results[0], rtol=0, atol=0)


def test_random_factory_out_view_leaves_the_rest_untouched():
    base, view = _strided_buffers("neuron")
    torch.randn(3, 2, out=view)
    assert view.stride() == (12, 3)
    mask = torch.zeros(6, 6, dtype=torch.bool)
    mask[::2, 1::3] = True
    host = base.cpu()
    assert (host[~mask] == -7.0).all()
    assert (host[mask] != -7.0).all()


def test_resize_to_own_size_keeps_strides_and_values():
    for device in ("cpu", "neuron"):
        x = torch.arange(16.0, device=device).reshape(4, 4).t()
        before = x.cpu().clone()
        x.resize_(4, 4)
        assert x.stride() == (1, 4)
        torch.testing.assert_close(x.cpu(), before, rtol=0, atol=0)
        y = torch.arange(16.0, device=device).reshape(4, 4).t()
        y.resize_as_(torch.empty(4, 4))
        assert y.stride() == (1, 4)
    # a new shape is still laid out contiguously, as on the CPU
    z = torch.zeros(4, 4, device="neuron").t()
    z.resize_(2, 8)
    assert z.stride() == (8, 1)


OPS = {
    "softmax": lambda x, out: torch.softmax(x, 0, out=out),
    "log_softmax": lambda x, out: torch.log_softmax(x, 0, out=out),
    "histc": lambda x, out: torch.histc(x, bins=4, min=0, max=4, out=out),
    "exp": lambda x, out: torch.exp(x, out=out),
    "cumsum": lambda x, out: torch.cumsum(x, 0, out=out),
}


@pytest.mark.parametrize("name", sorted(OPS))
def test_computed_op_out_view(name):
    x = torch.tensor([1.0, 2.0, 3.0, 3.5])
    results = []
    for device in ("cpu", "neuron"):
        buf = torch.full((8,), -7.0, device=device)
        OPS[name](x.to(device), buf[::2])
        results.append(buf.cpu())
    torch.testing.assert_close(results[1], results[0], rtol=1.3e-6, atol=1e-5)


def test_lu_out_views():
    a = torch.tensor([[4.0, 3.0, 1.0], [6.0, 3.0, 2.0], [1.0, 5.0, 9.0]])
    results = []
    for device in ("cpu", "neuron"):
        p = torch.full((3, 6), -7.0, device=device)
        lower = torch.full((3, 6), -7.0, device=device)
        upper = torch.full((3, 6), -7.0, device=device)
        torch.linalg.lu(a.to(device), out=(p[:, ::2], lower[:, ::2], upper[:, ::2]))
        results.append(torch.stack([p.cpu(), lower.cpu(), upper.cpu()]))
    torch.testing.assert_close(results[1], results[0], rtol=1.3e-6, atol=1e-5)


def test_mode_out():
    x = torch.tensor([[1.0, 2.0, 2.0, 3.0], [4.0, 4.0, 5.0, 4.0]])
    values = torch.empty(2, device="neuron")
    indices = torch.empty(2, dtype=torch.long, device="neuron")
    ret = torch.mode(x.to("neuron"), -1, out=(values, indices))
    assert ret[0] is values and ret[1] is indices
    expected = torch.mode(x, -1)
    torch.testing.assert_close(values.cpu(), expected.values, rtol=0, atol=0)
    torch.testing.assert_close(indices.cpu(), expected.indices, rtol=0, atol=0)
    # out tensors of another shape are resized, as on the CPU
    v2 = torch.empty(0, device="neuron")
    i2 = torch.empty(0, dtype=torch.long, device="neuron")
    torch.mode(x.to("neuron"), 0, keepdim=True, out=(v2, i2))
    expected = torch.mode(x, 0, keepdim=True)
    torch.testing.assert_close(v2.cpu(), expected.values, rtol=0, atol=0)
    torch.testing.assert_close(i2.cpu(), expected.indices, rtol=0, atol=0)


def test_mode_out_checks_its_outputs():
    x = torch.ones(2, 3, device="neuron")
    with pytest.raises(RuntimeError, match="expected scalar type 'Long'"):
        torch.mode(x, -1, out=(torch.empty(2, device="neuron"), torch.empty(2, device="neuron")))
    with pytest.raises(RuntimeError, match="expected device 'neuron:0' but got 'cpu' for values output"):
        torch.mode(x, -1, out=(torch.empty(2), torch.empty(2, dtype=torch.long, device="neuron")))


def test_histc_out_of_another_dtype_raises_as_on_the_cpu():
    # PyTorch's TestCommon.test_out: a float histogram into a long out= is an unsafe cast; the CPU
    # kernel refuses it (CUDA's out= kernel casts silently, an expected failure of that test).
    x = torch.tensor([1.0, 2.0, 3.0, 3.5])
    for device in ("cpu", "neuron"):
        out = torch.empty(4, dtype=torch.long, device=device)
        with pytest.raises(RuntimeError, match="should have the same dtype"):
            torch.histc(x.to(device), bins=4, min=0, max=4, out=out)


def test_histc_out_resizing_a_non_empty_tensor_warns_as_on_the_cpu():
    x = torch.tensor([1.0, 2.0, 3.0, 3.5])
    for device in ("cpu", "neuron"):
        out = torch.zeros(3, device=device)
        with pytest.warns(UserWarning, match="An output with one or more elements was resized"):
            torch.histc(x.to(device), bins=4, min=0, max=4, out=out)
        assert out.cpu().tolist() == [0.0, 1.0, 1.0, 2.0]


_POOL3D_X = torch.arange(2 * 3 * 4 * 6 * 6, dtype=torch.float32).reshape(2, 3, 4, 6, 6).sin()
_POOL3D_GRAD = torch.arange(2 * 3 * 2 * 3 * 3, dtype=torch.float32).reshape(2, 3, 2, 3, 3).cos()
# The CPU out= kernels of these ops write as if `out` were contiguous (an expected failure of
# PyTorch's TestCommon.test_out on the CPU); CUDA respects the strides, and so must neuron.
POOL3D = {
    "avg_pool3d": (
        lambda x: torch._C._nn.avg_pool3d(x, (2, 2, 2)),
        lambda x, out: torch._C._nn.avg_pool3d(x, (2, 2, 2), out=out),
    ),
    "adaptive_avg_pool3d": (
        lambda x: torch._C._nn.adaptive_avg_pool3d(x, (2, 3, 3)),
        lambda x, out: torch._C._nn.adaptive_avg_pool3d(x, (2, 3, 3), out=out),
    ),
    "avg_pool3d_backward": (
        lambda x: torch.ops.aten.avg_pool3d_backward(
            _POOL3D_GRAD.to(x.device), x, [2, 2, 2], [2, 2, 2], [0, 0, 0], False, True, None),
        lambda x, out: torch.ops.aten.avg_pool3d_backward.grad_input(
            _POOL3D_GRAD.to(x.device), x, [2, 2, 2], [2, 2, 2], [0, 0, 0], False, True, None,
            grad_input=out),
    ),
}


@pytest.mark.parametrize("name", sorted(POOL3D))
def test_pool3d_out_view_gets_the_functional_values(name):
    functional, with_out = POOL3D[name]
    expected = functional(_POOL3D_X)
    x = _POOL3D_X.to("neuron")
    shape = expected.shape
    base = torch.full((*shape[:-1], 2 * shape[-1]), -7.0, device="neuron")
    view = base[..., ::2]  # every other element of the last dimension
    result = with_out(x, view)
    assert result.data_ptr() == view.data_ptr() and view.stride() == base[..., ::2].stride()
    torch.testing.assert_close(view.cpu(), expected, rtol=1.3e-6, atol=1e-5)
    assert (base[..., 1::2].cpu() == -7.0).all()
    # a wrongly shaped non-contiguous out= is resized, then written, warning as the CPU kernel does
    warned = []
    for device, inputs in (("cpu", _POOL3D_X), ("neuron", x)):
        wrong = torch.full((*shape[:-1], 2 * shape[-1] + 2), -7.0, device=device)[..., ::2]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with_out(inputs, wrong)
        warned.append(any("An output with one or more elements was resized" in str(w.message) for w in caught))
    assert warned[1] == warned[0]
    torch.testing.assert_close(wrong.cpu(), expected, rtol=1.3e-6, atol=1e-5)


_X4 = torch.arange(2 * 4 * 5 * 6, dtype=torch.float32).reshape(2, 4, 5, 6).mul(0.37).sin()
_X5 = torch.arange(2 * 3 * 4 * 5 * 6, dtype=torch.float32).reshape(2, 3, 4, 5, 6).mul(0.11).cos()
# More CPU out= kernels that mishandle a non-contiguous `out` (found by running PyTorch's nn tests'
# ops with every-other-element out= views): oneDNN's gelu, _softmax and _log_softmax leave it
# unwritten; adaptive_max_pool3d and im2col write as if it were contiguous. CUDA respects
# the strides; neuron gives every non-contiguous out= a contiguous buffer, whatever the op.
STRIDED_OUT_KERNELS = {
    "gelu": (
        lambda x: torch._C._nn.gelu(x),
        lambda x, out: torch._C._nn.gelu(x, out=out[0]),
        _X4,
    ),
    "_softmax": (
        lambda x: torch.ops.aten._softmax(x, 1, False),
        lambda x, out: torch.ops.aten._softmax.out(x, 1, False, out=out[0]),
        _X4,
    ),
    "_log_softmax": (
        lambda x: torch.ops.aten._log_softmax(x, 3, False),
        lambda x, out: torch.ops.aten._log_softmax.out(x, 3, False, out=out[0]),
        _X4,
    ),
    "adaptive_max_pool3d": (
        lambda x: torch._C._nn.adaptive_max_pool3d(x, (2, 2, 3)),
        lambda x, out: torch._C._nn.adaptive_max_pool3d(x, (2, 2, 3), out=out),
        _X5,
    ),
    "im2col": (
        lambda x: torch._C._nn.im2col(x, (2, 3), (1, 1), (1, 0), (2, 1)),
        lambda x, out: torch._C._nn.im2col(x, (2, 3), (1, 1), (1, 0), (2, 1), out=out[0]),
        _X4,
    ),
}


@pytest.mark.parametrize("name", sorted(STRIDED_OUT_KERNELS))
def test_out_view_of_a_kernel_that_mishandles_strides_gets_the_functional_values(name):
    functional, with_out, x_cpu = STRIDED_OUT_KERNELS[name]
    expected = functional(x_cpu)  # the CPU's functional result
    expected = expected if isinstance(expected, tuple) else (expected,)
    bases = [torch.full((*e.shape[:-1], 2 * e.shape[-1]), -7, dtype=e.dtype, device="neuron") for e in expected]
    views = tuple(b[..., ::2] for b in bases)  # every other element of the last dimension
    with_out(x_cpu.to("neuron"), views)
    for view, base, e in zip(views, bases, expected, strict=True):
        assert view.stride() == base[..., ::2].stride()
        torch.testing.assert_close(view.cpu(), e, rtol=1.3e-6, atol=1e-5)
        assert (base[..., 1::2].cpu() == -7).all()


def test_an_out_overlapping_an_input_is_written_in_place_as_on_the_cpu():
    # the buffer is only for an out= that shares no memory with an input: an out= overlapping its
    # input (here every other element of the same storage) is written by the kernel itself, element
    # by element, so later elements read values already overwritten exactly as they do on the CPU
    results = []
    for device in ("cpu", "neuron"):
        base = torch.arange(12.0, device=device)
        torch.neg(base[:6], out=base[1:12:2])
        results.append(base.cpu())
    assert results[1].tolist() == results[0].tolist()
    assert results[0].tolist() == [0.0, -0.0, 2.0, 0.0, 4.0, -2.0, 6.0, -0.0, 8.0, -4.0, 10.0, 2.0]
