"""nn.LSTM, nn.GRU, nn.LSTMCell and nn.GRUCell on ``neuron`` equal the CPU: PyTorch sends
PrivateUse1 inputs to the fused cells (``_thnn_fused_lstm_cell``/``_thnn_fused_gru_cell``,
CUDA-only in PyTorch), which the device implements — outputs, final states and every
parameter's gradient, with and without biases, batched and unbatched, plus double backward
(PyTorch then uses the composite differentiable backward)."""
from __future__ import annotations

import copy

import pytest
import torch

TOL = dict(rtol=1e-5, atol=1e-5)


def _run(mod: torch.nn.Module, x: torch.Tensor, device: str):
    m = copy.deepcopy(mod).to(device)
    inp = x.to(device).requires_grad_(True)
    out = m(inp)
    outs = [out] if isinstance(out, torch.Tensor) else [out[0], *(out[1] if isinstance(out[1], tuple) else [out[1]])]
    loss = sum((o * torch.linspace(-1, 1, o.numel(), device=device).view_as(o)).sum() for o in outs)
    loss.backward()
    grads = [p.grad.cpu() for p in m.parameters()] + [inp.grad.cpu()]
    return [o.detach().cpu() for o in outs], grads


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "LSTMCell", "GRUCell"])
@pytest.mark.parametrize("bias", [True, False])
def test_rnn_modules_match_the_cpu(kind, bias):
    torch.manual_seed(0)
    cls = getattr(torch.nn, kind)
    if kind.endswith("Cell"):
        mod, x = cls(4, 3, bias=bias), torch.randn(2, 4)
    else:
        mod, x = cls(4, 3, num_layers=2, bias=bias, bidirectional=True), torch.randn(5, 2, 4)
    got_out, got_grad = _run(mod, x, "neuron")
    want_out, want_grad = _run(mod, x, "cpu")
    for g, w in zip(got_out + got_grad, want_out + want_grad, strict=True):
        torch.testing.assert_close(g, w, **TOL)


@pytest.mark.parametrize("kind", ["LSTMCell", "GRUCell"])
def test_unbatched_cells_and_given_states(kind):
    torch.manual_seed(1)
    mod = getattr(torch.nn, kind)(3, 2)
    x, h = torch.randn(3), torch.randn(2)
    state = (h, torch.randn(2)) if kind == "LSTMCell" else h
    want = mod(x, state)
    m = copy.deepcopy(mod).to("neuron")
    got = m(x.to("neuron"), tuple(s.to("neuron") for s in state) if isinstance(state, tuple) else state.to("neuron"))
    got, want = (got, want) if isinstance(got, tuple) else ((got,), (want,))
    for g, w in zip(got, want, strict=True):
        assert g.device.type == "neuron"
        torch.testing.assert_close(g.cpu(), w, **TOL)


def test_lstm_cell_state_only_gradient():
    """A loss on the cell state alone (no gradient reaches hy) still gives the CPU's gradients."""
    torch.manual_seed(2)
    mod = torch.nn.LSTMCell(3, 2)
    x = torch.randn(4, 3)
    grads = {}
    for d in ("cpu", "neuron"):
        m = copy.deepcopy(mod).to(d)
        _, c = m(x.to(d))
        (c * c).sum().backward()
        grads[d] = [p.grad.cpu() for p in m.parameters()]
    for g, w in zip(grads["neuron"], grads["cpu"], strict=True):
        torch.testing.assert_close(g, w, **TOL)


@pytest.mark.parametrize("kind", ["LSTMCell", "GRUCell"])
def test_double_backward(kind):
    torch.manual_seed(3)
    mod = getattr(torch.nn, kind)(3, 2)
    x = torch.randn(2, 3)
    res = {}
    for d in ("cpu", "neuron"):
        m = copy.deepcopy(mod).to(d)
        inp = x.to(d).requires_grad_(True)
        out = m(inp)
        h = out[0] if isinstance(out, tuple) else out
        (g,) = torch.autograd.grad(h.pow(2).sum(), inp, create_graph=True)
        g.sum().backward()
        res[d] = [g.detach().cpu()] + [p.grad.cpu() for p in m.parameters()]
    for g, w in zip(res["neuron"], res["cpu"], strict=True):
        torch.testing.assert_close(g, w, **TOL)
