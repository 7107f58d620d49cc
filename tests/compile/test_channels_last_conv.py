"""channels_last convolutions and their gradients: a compiled training step runs and matches the CPU,
and the device's convolution backward gives the layout PyTorch's fake tensors predict for it.

torch.compile traces with fake tensors; for a PrivateUse1 convolution they predict the layout of its
``Overrideable`` backend (contiguous). A compiled backward graph runs ``convolution_backward`` as a
fallback kernel whose output strides Inductor asserts, then reads by.
"""
from __future__ import annotations

import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensorMode


def _model(device: str, dims: int, transposed: bool) -> torch.nn.Module:
    torch.manual_seed(0)
    conv = {2: torch.nn.ConvTranspose2d if transposed else torch.nn.Conv2d,
            3: torch.nn.ConvTranspose3d if transposed else torch.nn.Conv3d}[dims]
    fmt = torch.channels_last if dims == 2 else torch.channels_last_3d
    return torch.nn.Sequential(conv(4, 8, 3), torch.nn.ReLU(), conv(8, 2, 3)).to(device).to(memory_format=fmt)


@pytest.mark.parametrize("dims,transposed", [(2, False), (2, True), (3, False)])
def test_compiled_training_of_a_channels_last_conv_model_matches_the_cpu(dims, transposed):
    fmt = torch.channels_last if dims == 2 else torch.channels_last_3d
    torch.manual_seed(1)
    x = torch.rand((2, 4) + (6,) * dims).to(memory_format=fmt)

    ref = _model("cpu", dims, transposed)
    ref_out = ref(x)
    ref_out.square().sum().backward()

    model = _model("neuron", dims, transposed)
    out = torch.compile(model, backend="neuron")(x.to("neuron"))
    out.square().sum().backward()

    torch.testing.assert_close(out.detach().cpu(), ref_out.detach(), rtol=1e-5, atol=1e-5)
    for p, p_ref in zip(model.parameters(), ref.parameters(), strict=True):
        torch.testing.assert_close(p.grad.cpu(), p_ref.grad, rtol=1e-4, atol=1e-5)
        # a leaf gradient takes its parameter's layout, as on the CPU
        assert p.grad.stride() == p_ref.grad.stride()


def test_convolution_backward_gives_the_layout_fake_tensors_predict_and_the_cpu_values():
    torch.manual_seed(0)
    grad_out = torch.randn(2, 8, 4, 4).to(memory_format=torch.channels_last)
    inp = torch.randn(2, 4, 6, 6).to(memory_format=torch.channels_last)
    weight = torch.randn(8, 4, 3, 3).to(memory_format=torch.channels_last)
    args = ([8], [1, 1], [0, 0], [1, 1], False, [0, 0], 1, [True, True, True])
    cpu = torch.ops.aten.convolution_backward.default(grad_out, inp, weight, *args)

    on_neuron = [t.to("neuron") for t in (grad_out, inp, weight)]
    eager = torch.ops.aten.convolution_backward.default(*on_neuron, *args)
    mode = FakeTensorMode()
    with mode:
        fake = torch.ops.aten.convolution_backward.default(*(mode.from_tensor(t) for t in on_neuron), *args)

    for got, predicted, want in zip(eager, fake, cpu, strict=True):
        assert got.device == torch.device("neuron:0") and predicted.device == got.device
        assert got.stride() == predicted.stride(), "eager layout differs from the fake-tensor prediction"
        torch.testing.assert_close(got.cpu(), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("backend", ["neuron", "inductor"])
@pytest.mark.parametrize("input_channels_last", [False, True])
def test_compiled_1x1_conv_with_a_channels_last_weight_matches_eager(backend, input_channels_last):
    # a 1x1 channels_last weight is also contiguous (only size-1 strides differ): the compiled graph
    # hands it to the kernel unchanged and asserts the fake tensors' layout for the result
    torch.manual_seed(0)
    conv = torch.nn.Conv2d(3, 5, 1).to(memory_format=torch.channels_last)
    x = torch.randn(2, 3, 8, 8)
    if input_channels_last:
        x = x.to(memory_format=torch.channels_last)
    want = conv(x)
    on_neuron = conv.to("neuron")
    torch._dynamo.reset()
    got = torch.compile(on_neuron, backend=backend)(x.to("neuron"))
    torch.testing.assert_close(got.cpu(), want, rtol=1e-5, atol=1e-5)
    eager = on_neuron(x.to("neuron"))
    torch.testing.assert_close(eager.cpu(), want, rtol=1e-5, atol=1e-5)
