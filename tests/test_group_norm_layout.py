"""Group norm's gradient on ``neuron`` is what PyTorch defines for a non-CPU device.

PyTorch's derivative of ``native_group_norm`` keeps a channels_last input's layout only when the
tensor is on the CPU; on every other device (CUDA, ``neuron``) the backward kernel runs on contiguous
copies of the gradient and the input. The CPU library sums in a different order for the two layouts,
so a channels_last group norm's gradients on ``neuron`` differ from the CPU's in the last bits, and
equal bit for bit the CPU kernel run on contiguous operands. Contiguous inputs give the CPU's bits.
"""
from __future__ import annotations

import torch

N, C, H, W, G = 2, 32, 8, 8, 8


def _inputs(channels_last: bool):
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(N, C, H, W, generator=gen)
    g = torch.randn(N, C, H, W, generator=gen)
    weight, bias = torch.randn(C, generator=gen), torch.randn(C, generator=gen)
    if channels_last:
        x, g = x.to(memory_format=torch.channels_last), g.to(memory_format=torch.channels_last)
    return x, g, weight, bias


def _grads(x, g, weight, bias, device):
    xs = x.detach().to(device).requires_grad_()
    w = weight.detach().clone().to(device).requires_grad_()
    b = bias.detach().clone().to(device).requires_grad_()
    y = torch.nn.functional.group_norm(xs, G, w, b, eps=1e-5)
    y.backward(g.to(device))
    return y.detach().cpu(), xs.grad.cpu(), w.grad.cpu(), b.grad.cpu()


def test_contiguous_group_norm_gradients_equal_the_cpus_bit_for_bit():
    x, g, weight, bias = _inputs(channels_last=False)
    for a, b in zip(_grads(x, g, weight, bias, "cpu"), _grads(x, g, weight, bias, "neuron"), strict=True):
        assert torch.equal(a, b)


def test_channels_last_group_norm_backward_runs_on_contiguous_operands_as_on_every_non_cpu_device():
    x, g, weight, bias = _inputs(channels_last=True)
    out, dx, dw, db = _grads(x, g, weight, bias, "neuron")
    ref_out, ref_dx, ref_dw, ref_db = _grads(x, g, weight, bias, "cpu")
    assert torch.equal(out, ref_out)  # the forward keeps the layout on every device
    # PyTorch's device-generic derivative: the statistics saved by the (channels_last) forward, and the
    # CPU backward kernel on contiguous copies of the gradient and the input
    _, mean, rstd = torch.ops.aten.native_group_norm(x, weight, bias, N, C, H * W, G, 1e-5)
    gx, gw, gb = torch.ops.aten.native_group_norm_backward(
        g.contiguous(), x.contiguous(), mean, rstd, weight, N, C, H * W, G, [True, True, True])
    assert torch.equal(dx, gx) and torch.equal(dw, gw) and torch.equal(db, gb)
    # and within float32 rounding of the CPU's channels_last kernel
    for a, b in ((dx, ref_dx), (dw, ref_dw), (db, ref_db)):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)
