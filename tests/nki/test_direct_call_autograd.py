"""An NKI kernel called directly on ``neuron`` tensors (not through an ``nki_op``) has no autograd formula:
with grad mode on and an input that requires grad, its outputs stay in the graph and backward raises an
error naming the kernel and the fix, instead of the gradient being silently cut at the kernel (a Hugging
Face ``kernels`` layer without ``has_backward`` reaches this in ``kernelize(mode=Mode.TRAINING)``).
Expected values are the same arithmetic on CPU tensors."""
import pytest
import torch

from torch_neuronx import nki
import torch_neuronx.nki.language as nl
import torch_neuronx.nki.typing as nt
from torch_neuronx.nki.torch_op import nki_op


@nki.jit
def double_kernel(a):
    """out = 2 * a for a [P <= 128, F] tile."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.load(a) * 2.0)
    return out


@nki.jit
def accumulate_kernel(a, b: nt.mutable_tensor):
    """b += a in place; returns b (the caller's own tensor) and a fresh 2 * a."""
    twice = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(b, value=nl.load(a) + nl.load(b))
    nl.store(twice, value=nl.load(a) * 2.0)
    return b, twice


@nki_op("test_direct_call_autograd::double", mutates_args=())
def double(a: torch.Tensor) -> torch.Tensor:
    return double_kernel(a)


double.register_autograd(lambda ctx, g: 2 * g)

MESSAGE = r"backward through NKI kernel 'double_kernel'.*register_autograd.*has_backward = False"


def _input():
    return torch.randn(64, 32, generator=torch.Generator().manual_seed(0))


def test_forward_value_and_backward_error():
    x_cpu = _input()
    x = x_cpu.to("neuron").requires_grad_()
    y = double_kernel(x)
    assert y.device.type == "neuron" and y.requires_grad
    torch.testing.assert_close(y.detach().cpu(), 2 * x_cpu, rtol=0, atol=0)
    with pytest.raises(RuntimeError, match=MESSAGE):
        y.sum().backward()


def test_a_residual_around_the_kernel_is_not_silently_cut():
    # Before: backward ran and x.grad was all ones (the residual's share alone), the kernel's 2 missing.
    x = _input().to("neuron").requires_grad_()
    z = x + double_kernel(x)
    with pytest.raises(RuntimeError, match=MESSAGE):
        z.sum().backward()
    assert x.grad is None


def test_no_grad_and_inputs_without_grad_give_plain_tensors():
    x = _input().to("neuron").requires_grad_()
    with torch.no_grad():
        y = double_kernel(x)
    assert not y.requires_grad and y.grad_fn is None
    y2 = double_kernel(x.detach())
    assert not y2.requires_grad and y2.grad_fn is None
    torch.testing.assert_close(y.cpu(), y2.cpu(), rtol=0, atol=0)


def test_returned_mutable_input_is_the_callers_tensor():
    a_cpu, b_cpu = _input(), torch.ones(64, 32)
    a = a_cpu.to("neuron").requires_grad_()
    b = b_cpu.to("neuron")
    b_out, twice = accumulate_kernel(a, b)
    assert b_out is b and not b.requires_grad                    # the caller's tensor, untouched by autograd
    torch.testing.assert_close(b.cpu(), a_cpu + b_cpu, rtol=0, atol=0)
    assert twice.requires_grad
    with pytest.raises(RuntimeError, match=r"NKI kernel 'accumulate_kernel'"):
        twice.sum().backward()


def test_inside_an_nki_op_its_autograd_formula_applies():
    x_cpu = _input().requires_grad_()
    x = x_cpu.detach().to("neuron").requires_grad_()
    ((double(x) ** 2).sum()).backward()
    ((2 * x_cpu) ** 2).sum().backward()
    torch.testing.assert_close(x.grad.cpu(), x_cpu.grad, rtol=1e-6, atol=1e-6)
