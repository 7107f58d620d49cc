"""Scaled dot-product attention takes the fused kernel on neuron and matches CPU."""
import pytest
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend

import torch_neuronx


@pytest.mark.parametrize("hq,hk,causal,mask", [(4, 4, True, False), (4, 4, False, True), (8, 2, True, False),
                                               (8, 2, False, True)])
def test_fused_sdpa_matches_cpu(hq, hk, causal, mask):
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, h, 16, 32, requires_grad=True) for h in (hq, hk, hk))
    m = torch.randn(2, 1, 16, 16) if mask else None
    kw = dict(is_causal=causal, enable_gqa=hq != hk)
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=m, **kw)
    ref.square().sum().backward()
    qn, kn, vn = (t.detach().to("neuron").requires_grad_() for t in (q, k, v))
    torch_neuronx.clear_op_tracking()
    out = F.scaled_dot_product_attention(qn, kn, vn, attn_mask=None if m is None else m.to("neuron"), **kw)
    out.square().sum().backward()
    ops = torch_neuronx.get_executed_ops()
    assert ops.get("aten::_scaled_dot_product_fused_attention_overrideable") == 1
    assert ops.get("aten::_scaled_dot_product_fused_attention_overrideable_backward") == 1
    torch.testing.assert_close(out.cpu(), ref, rtol=1e-5, atol=1e-5)
    for a, b in zip((qn, kn, vn), (q, k, v), strict=True):
        torch.testing.assert_close(a.grad.cpu(), b.grad, rtol=1e-5, atol=1e-5)


def test_dropout_and_mask_grad_use_math_path():
    q = torch.randn(1, 2, 8, 16, device="neuron")
    torch_neuronx.clear_op_tracking()
    out = F.scaled_dot_product_attention(q, q, q, dropout_p=0.5)
    assert "aten::_scaled_dot_product_fused_attention_overrideable" not in torch_neuronx.get_executed_ops()
    assert out.shape == q.shape and out.device.type == "neuron"
    m = torch.zeros(1, 1, 8, 8, device="neuron", requires_grad=True)
    F.scaled_dot_product_attention(q, q, q, attn_mask=m).sum().backward()
    assert m.grad is not None and m.grad.shape == m.shape


@pytest.mark.parametrize("mask_device", ["cpu", "neuron:1"])
def test_mask_on_another_device_is_an_error(mask_device):
    q = torch.randn(1, 2, 16, 8, device="neuron")
    mask = (torch.rand(16, 16) > 0.5).to(mask_device)
    with pytest.raises(RuntimeError, match="same device"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=mask)


def test_fused_sdpa_outputs_match_meta_shapes():
    """Every output of the fused op has the meta kernel's shape and dtype (Inductor asserts
    them in compiled training graphs): 0-d philox seed/offset, no debug mask."""
    q = torch.randn(1, 2, 4, 8)
    op = torch.ops.aten._scaled_dot_product_fused_attention_overrideable
    meta = op(q.to("meta"), q.to("meta"), q.to("meta"))
    got = op(q.to("neuron"), q.to("neuron"), q.to("neuron"))
    for m, g in zip(meta, got, strict=True):
        if isinstance(m, torch.Tensor):
            assert isinstance(g, torch.Tensor) and g.shape == m.shape and g.dtype == m.dtype
        else:
            assert (m is None and g is None) or m == g


class _NoGradThrough(torch.autograd.Function):
    """Identity whose backward sends no gradient back (None): the node before it gets an undefined grad."""

    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        return None


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_fused_sdpa_backward_with_no_gradient_at_its_output(dtype):
    """Autograd hands the fused backward an undefined grad when nothing flows back into the attention
    output (gradcheck's undefined-grad check does the same); the CPU's flash backward answers with no input
    gradients, and so must neuron's (it raised before; found by PyTorch's test_ops_gradients)."""
    torch.manual_seed(0)
    q, k, v = (torch.randn(1, 2, 3, 4, dtype=dtype) for _ in range(3))
    results = []
    for device in ("cpu", "neuron"):
        qd, kd, vd = (t.to(device).requires_grad_() for t in (q, k, v))
        torch_neuronx.clear_op_tracking()
        out = _NoGradThrough.apply(F.scaled_dot_product_attention(qd, kd, vd, is_causal=True))
        loss = out.sum() + (qd * 2).sum()
        results.append(torch.autograd.grad(loss, (qd, kd, vd), allow_unused=True))
        if device == "neuron":
            assert torch_neuronx.get_executed_ops().get(
                "aten::_scaled_dot_product_fused_attention_overrideable") == 1
    (gq_cpu, gk_cpu, gv_cpu), (gq, gk, gv) = results
    assert gk_cpu is None and gv_cpu is None and gk is None and gv is None
    assert torch.equal(gq.cpu(), gq_cpu) and torch.equal(gq_cpu, torch.full_like(q, 2.0))


def test_fused_sdp_choice_op_reports_the_choice_sdpa_makes():
    # torch._fused_sdp_choice on neuron tensors answers with the device's own choice (the fused
    # "overrideable" kernel, or math for dropout / a mask needing a gradient), as it does on CUDA,
    # not the CPU's flash-attention answer.
    from torch.nn.attention import SDPBackend

    q = torch.rand(2, 2, 16, 32, device="neuron")
    mask = torch.rand(2, 2, 16, 16, device="neuron")
    assert torch._fused_sdp_choice(q, q, q) == SDPBackend.OVERRIDEABLE.value
    assert torch._fused_sdp_choice(q, q, q, mask) == SDPBackend.OVERRIDEABLE.value
    assert torch._fused_sdp_choice(q, q, q, dropout_p=0.5) == SDPBackend.MATH.value
    assert torch._fused_sdp_choice(q, q, q, mask.requires_grad_()) == SDPBackend.MATH.value
    assert torch._fused_sdp_choice(q.cpu(), q.cpu(), q.cpu()) == SDPBackend.FLASH_ATTENTION.value


def test_sdpa_kernel_overrideable_selects_the_fused_kernel():
    # SDPBackend.OVERRIDEABLE is PyTorch's name for a PrivateUse1 device's fused kernel, the one
    # neuron runs: restricting SDPA to it must run that kernel (the CPU's flash result), not fail
    # with "No viable backend" because the CPU flash flag is off.
    from torch.nn.attention import SDPBackend, sdpa_kernel

    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 4, 16, 32) for _ in range(3))
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    qn, kn, vn = (t.to("neuron") for t in (q, k, v))
    with sdpa_kernel(SDPBackend.OVERRIDEABLE):
        assert torch._fused_sdp_choice(qn, kn, vn, is_causal=True) == SDPBackend.OVERRIDEABLE.value
        torch_neuronx.clear_op_tracking()
        out = F.scaled_dot_product_attention(qn, kn, vn, is_causal=True)
        assert torch_neuronx.get_executed_ops().get("aten::_scaled_dot_product_fused_attention_overrideable") == 1
    assert torch.equal(out.cpu(), ref)
    with sdpa_kernel([SDPBackend.OVERRIDEABLE, SDPBackend.MATH]):
        assert torch._fused_sdp_choice(qn, kn, vn, is_causal=True) == SDPBackend.OVERRIDEABLE.value
    with sdpa_kernel(SDPBackend.MATH):
        assert torch._fused_sdp_choice(qn, kn, vn, is_causal=True) == SDPBackend.MATH.value


@pytest.mark.parametrize("backends, kwargs", [
    ([SDPBackend.FLASH_ATTENTION], {"dropout_p": 0.5}),        # the fused kernel has no dropout
    ([SDPBackend.OVERRIDEABLE], {"dropout_p": 0.5}),
    ([SDPBackend.EFFICIENT_ATTENTION], {}),                     # neither the fused kernel nor math allowed
])
def test_sdpa_without_a_viable_backend_raises_as_on_cpu(backends, kwargs):
    # The CPU raises here; neuron used to run the math path anyway (dropout with FLASH_ATTENTION only),
    # i.e. ignored the user's restriction.
    from torch.nn.attention import sdpa_kernel

    q = torch.randn(1, 2, 8, 16)
    with sdpa_kernel(backends):
        with pytest.raises(RuntimeError):
            F.scaled_dot_product_attention(q, q, q, **kwargs)
        with pytest.raises(RuntimeError, match="No viable backend.*neuron.*SDPBackend.MATH"):
            F.scaled_dot_product_attention(q.to("neuron"), q.to("neuron"), q.to("neuron"), **kwargs)
