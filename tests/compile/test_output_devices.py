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


def _check_like_eager(fn, args, backend):
    eager = fn(*args)
    compiled = torch.compile(fn, backend=backend)(*args)
    assert _devices(compiled) == _devices(eager), (fn.__name__, backend)
    for got, want in zip(compiled if isinstance(compiled, tuple) else (compiled,),
                         eager if isinstance(eager, tuple) else (eager,), strict=True):
        torch.testing.assert_close(got.cpu(), want.cpu(), rtol=1e-5, atol=1e-5)


def test_extern_and_fallback_kernels_write_on_the_ops_core():
    # The buffers of a matmul (extern kernel) or a fallback op after a move to another core are
    # allocated on that core, under both backends: before, they were on the inputs' core and
    # the matmul failed with eager's device-mismatch error.
    torch.manual_seed(0)
    a0 = torch.randn(4, 8).to("neuron:0")
    w1 = torch.randn(8, 8).to("neuron:1")
    a1 = torch.randn(4, 8).to("neuron:1")

    def moved_matmul(a):
        return a.relu().to("neuron:1") @ w1

    def moved_fallback(a):
        return torch.sort(a.to("neuron:1") * 2, dim=1).values

    def on_core_1(a):                                # every input on neuron:1, current core neuron:0
        return (a.relu() @ w1) + 1

    for backend in ("neuron", "inductor"):
        for fn, args in [(moved_matmul, (a0,)), (moved_fallback, (a0,)), (on_core_1, (a1,))]:
            torch._dynamo.reset()
            assert torch.neuron.current_device() == 0
            _check_like_eager(fn, args, backend)


def test_backward_of_a_two_core_matmul_pipeline():
    torch.manual_seed(0)
    w0 = torch.randn(8, 8, device="neuron:0", requires_grad=True)
    w1 = torch.randn(8, 8, device="neuron:1", requires_grad=True)
    a = torch.randn(4, 8, device="neuron:0")

    def loss(a):
        return ((a @ w0).relu().to("neuron:1") @ w1).sum()

    expected = loss(a)
    expected.backward()
    want = [w0.grad.cpu(), w1.grad.cpu()]
    for backend in ("neuron", "inductor"):
        torch._dynamo.reset()
        w0.grad = w1.grad = None
        out = torch.compile(loss, backend=backend)(a)
        out.backward()
        assert out.device == expected.device == torch.device("neuron:1")
        assert (w0.grad.device, w1.grad.device) == (torch.device("neuron:0"), torch.device("neuron:1"))
        torch.testing.assert_close(out.cpu(), expected.detach().cpu(), rtol=1e-5, atol=1e-5)
        for got, w in zip((w0.grad.cpu(), w1.grad.cpu()), want, strict=True):
            torch.testing.assert_close(got, w, rtol=1e-5, atol=1e-5)


def test_bare_device_factory_keeps_the_first_compiles_core_as_cuda_does():
    # Dynamo guards on input devices, not on the current device: a bare device="neuron" factory
    # keeps the core of its first compile (CUDA's behaviour with device="cuda", as the README
    # says); passing the device as an argument follows the current core (one graph per core).
    torch._dynamo.reset()
    bare = torch.compile(lambda: torch.arange(4.0, device="neuron") * 2, backend="neuron")
    given = torch.compile(lambda device: torch.arange(4.0, device=device) * 2, backend="neuron")
    assert bare().device == torch.device("neuron:0")
    with torch.neuron.device(2):
        assert (lambda: torch.arange(4.0, device="neuron") * 2)().device == torch.device("neuron:2")
        out = bare()
        assert out.device == torch.device("neuron:0")
        followed = given(f"neuron:{torch.neuron.current_device()}")
        assert followed.device == torch.device("neuron:2")
    for t in (out, followed):
        torch.testing.assert_close(t.cpu(), torch.tensor([0.0, 2.0, 4.0, 6.0]))
