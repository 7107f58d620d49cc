"""Autograd, optimizers (foreach and fused paths), autocast to bf16."""
import pytest
import torch


def _pair(seed=0):
    torch.manual_seed(seed)
    cpu = torch.nn.Sequential(torch.nn.Linear(12, 32), torch.nn.GELU(), torch.nn.LayerNorm(32), torch.nn.Linear(32, 3))
    dev = torch.nn.Sequential(torch.nn.Linear(12, 32), torch.nn.GELU(), torch.nn.LayerNorm(32), torch.nn.Linear(32, 3))
    dev.load_state_dict(cpu.state_dict())
    return cpu, dev.to("neuron")


def test_autograd_matches_cpu():
    cpu, dev = _pair()
    x = torch.randn(5, 12)
    y = torch.randint(0, 3, (5,))
    torch.nn.functional.cross_entropy(cpu(x), y).backward()
    torch.nn.functional.cross_entropy(dev(x.to("neuron")), y.to("neuron")).backward()
    for a, b in zip(cpu.parameters(), dev.parameters(), strict=True):
        assert b.grad.device.type == "neuron"
        torch.testing.assert_close(b.grad.cpu(), a.grad, rtol=1e-5, atol=1e-6)


def test_higher_order_and_inplace_autograd():
    x = torch.randn(4, requires_grad=True)
    xn = x.detach().to("neuron").requires_grad_()
    (g,) = torch.autograd.grad((x ** 3).sum(), x, create_graph=True)
    (gn,) = torch.autograd.grad((xn ** 3).sum(), xn, create_graph=True)
    torch.testing.assert_close(gn.cpu(), g)
    torch.testing.assert_close(torch.autograd.grad(gn.sum(), xn)[0].cpu(), torch.autograd.grad(g.sum(), x)[0])
    y = xn * 1
    y.add_(1).mul_(2)
    y.sum().backward()
    assert torch.equal(xn.grad.cpu(), torch.full((4,), 2.0))


@pytest.mark.parametrize("opt,kw", [
    ("AdamW", dict(foreach=True)), ("AdamW", dict(fused=True)), ("AdamW", dict(foreach=False)),
    ("SGD", dict(momentum=0.9, foreach=True)), ("Adam", dict(fused=True)), ("Adagrad", dict(foreach=True)),
])
def test_optimizers_match_cpu(opt, kw):
    cpu, dev = _pair(1)
    oc = getattr(torch.optim, opt)(cpu.parameters(), lr=0.05, **kw)
    od = getattr(torch.optim, opt)(dev.parameters(), lr=0.05, **kw)
    x = torch.randn(6, 12)
    for _ in range(4):
        for m, o, inp in ((cpu, oc, x), (dev, od, x.to("neuron"))):
            o.zero_grad()
            m(inp).square().mean().backward()
            o.step()
    for a, b in zip(cpu.parameters(), dev.parameters(), strict=True):
        torch.testing.assert_close(b.detach().cpu(), a.detach(), rtol=1e-5, atol=1e-6)


def test_default_optimizer_path_on_neuron_is_foreach():
    from torch.optim.optimizer import _default_to_fused_or_foreach

    p = [torch.zeros(2, device="neuron", requires_grad=True)]
    fused, foreach = _default_to_fused_or_foreach(p, differentiable=False, use_fused=False)
    assert foreach and not fused


def test_autocast_bf16():
    cpu, dev = _pair(2)
    x = torch.randn(8, 12)
    assert torch.get_autocast_dtype("neuron") == torch.bfloat16
    with torch.autocast("neuron", dtype=torch.bfloat16):
        y = dev[0](x.to("neuron"))
        assert y.dtype == torch.bfloat16
        s = torch.softmax(y, -1)
        assert s.dtype == torch.float32  # fp32 list
        out = dev(x.to("neuron"))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        ref = cpu(x)
    torch.testing.assert_close(out.float().cpu(), ref.float(), rtol=2e-2, atol=2e-2)
    out.float().sum().backward()
    assert all(p.grad.dtype == torch.float32 for p in dev.parameters())
    with torch.autocast("neuron"):
        assert dev[0](x.to("neuron")).dtype == torch.bfloat16


def test_autocast_rejects_unsupported_dtype():
    with pytest.warns(UserWarning, match="(?i)autocast"):
        with torch.autocast("neuron", dtype=torch.float64):
            pass


def test_module_to_neuron_keeps_parameter_identity_and_tied_weights():
    """nn.Module.to("neuron") moves parameters in place (param.data = ...), as for CUDA:
    tied weights stay one Parameter and an optimizer built before the move still steps them."""
    emb = torch.nn.Embedding(16, 8)
    head = torch.nn.Linear(8, 16, bias=False)
    head.weight = emb.weight
    model = torch.nn.Sequential(emb, head)
    before = model[0].weight
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    model.to("neuron")
    assert model[0].weight is before and model[1].weight is before
    assert before.device.type == "neuron"
    assert len(list(model.parameters())) == 1
    ids = torch.tensor([[1, 2, 3]], device="neuron")
    model(ids).sum().backward()
    old = before.detach().cpu().clone()
    opt.step()
    assert not torch.equal(old, before.detach().cpu())  # the optimizer's reference is the live weight
    model.to("cpu")
    assert model[1].weight is before and before.device.type == "cpu"



@pytest.mark.parametrize("opt, kw", [(torch.optim.Adam, {}), (torch.optim.AdamW, {"amsgrad": True}),
                                     (torch.optim.SGD, {"momentum": 0.9}), (torch.optim.Adagrad, {})])
def test_grad_scaler_skips_an_overflow_of_a_model_on_two_cores(opt, kw):
    # README's workaround for a PyTorch bug: with fused=True, GradScaler.step hands the optimizer the
    # SUM of the per-device found_inf flags, 2.0 when both cores overflow, and the fused kernels skip
    # only when found_inf == 1 (every weight then became NaN; CUDA's kernels test == 1 too). The
    # foreach step (the default on neuron) skips the overflow step as on the CPU.
    def run(dev0, dev1, scaler_device):
        torch.manual_seed(0)
        first, second = torch.nn.Linear(8, 16), torch.nn.Linear(16, 2)
        first.to(dev0)
        second.to(dev1)
        params = [*first.parameters(), *second.parameters()]
        optimizer = opt(params, lr=0.05, foreach=True, **kw)
        scaler = torch.amp.GradScaler(scaler_device, init_scale=2.0 ** 10)
        x, y = torch.randn(4, 8), torch.randn(4, 2)
        for step in range(3):
            out = second(torch.tanh(first(x.to(dev0))).to(dev1))
            loss = ((out - y.to(dev1)) ** 2).mean()
            if step == 1:
                loss = loss * float("inf")
            optimizer.zero_grad()
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
        return [p.detach().cpu() for p in params], scaler.get_scale()

    expected, expected_scale = run("cpu", "cpu", "cpu")
    got, scale = run("neuron:0", "neuron:1", "neuron")
    assert scale == expected_scale == 2.0 ** 9
    for g, e in zip(got, expected, strict=True):
        assert torch.isfinite(g).all()
        torch.testing.assert_close(g, e, rtol=0, atol=0)
