"""A compiled graph returns each output on the NeuronCore eager execution gives it (a move to another
core, tensors of two cores combined, a tensor created on the current core), forward and backward."""
from __future__ import annotations

import torch


def _devices(out):
    return [t.device for t in (out if isinstance(out, tuple) else (out,))]


def test_outputs_keep_eager_devices():
    torch._dynamo.reset()
    a0 = torch.arange(3.0, device="neuron:0")
    a1 = torch.arange(3.0, device="neuron:1") + 1

    def moved(a):
        return a.to("neuron:1") * 3

    def mixed(a, b):
        return a + b.to(a.device)

    def created(x):
        return x * 2, torch.zeros(2, device="neuron")     # the current core, not the input's

    for fn, args in [(moved, (a0,)), (mixed, (a1, a0)), (created, (a1,))]:
        eager = fn(*args)
        compiled = torch.compile(fn, backend="neuron")(*args)
        assert _devices(compiled) == _devices(eager), fn.__name__
        for got, want in zip(compiled if isinstance(compiled, tuple) else (compiled,),
                             eager if isinstance(eager, tuple) else (eager,), strict=True):
            torch.testing.assert_close(got.cpu(), want.cpu())
    # the result is usable with its eager neighbours (no device mismatch)
    torch.testing.assert_close((torch.compile(mixed, backend="neuron")(a1, a0) + a1).cpu(),
                               torch.tensor([2.0, 5.0, 8.0]))


def test_backward_of_a_cross_core_graph():
    torch._dynamo.reset()
    w = torch.tensor([1.0, 2.0, 3.0], device="neuron:1", requires_grad=True)

    def loss(x):
        return (x.to("neuron:1") * w).sum()

    x = torch.tensor([4.0, 5.0, 6.0], device="neuron:0")
    out = torch.compile(loss, backend="neuron")(x)
    out.backward()
    assert out.device == torch.device("neuron:1") and w.grad.device == torch.device("neuron:1")
    assert out.item() == 32.0
    torch.testing.assert_close(w.grad.cpu(), torch.tensor([4.0, 5.0, 6.0]))
