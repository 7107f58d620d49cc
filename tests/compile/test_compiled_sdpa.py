"""Compiled SDPA on neuron: forward and gradients equal the CPU's, with gradient checkpointing
(the recomputed attention must not need PyTorch's CUDA/CPU-only RNG wrappers), grouped-query
attention, causal and explicit masks."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint


def _step(q, k, v, mask, causal, ckpt):
    def block(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal,
                                              enable_gqa=q.shape[1] != k.shape[1])
    out = checkpoint(block, q, k, v, use_reentrant=False) if ckpt else block(q, k, v)
    return (out * out).sum()


@pytest.mark.parametrize("hk, causal, mask_kind, ckpt", [
    (4, True, None, True),
    (2, True, None, True),       # grouped-query attention
    (4, False, "bool", True),
    (4, False, "float", False),
])
def test_compiled_sdpa_training_matches_cpu(hk, causal, mask_kind, ckpt):
    torch._dynamo.reset()
    gen = torch.Generator().manual_seed(0)
    q = torch.randn(2, 4, 16, 8, generator=gen)
    k = torch.randn(2, hk, 16, 8, generator=gen)
    v = torch.randn(2, hk, 16, 8, generator=gen)
    mask = None
    if mask_kind == "bool":
        mask = torch.rand(16, 16, generator=gen) > 0.3
        mask.fill_diagonal_(True)
    elif mask_kind == "float":
        mask = torch.randn(2, 1, 16, 16, generator=gen)

    def grads(device, compiled):
        leaves = [t.detach().clone().to(device).requires_grad_() for t in (q, k, v)]
        m = mask.to(device) if mask is not None else None
        fn = torch.compile(_step, backend="neuron") if compiled else _step
        loss = fn(*leaves, m, causal, ckpt)
        loss.backward()
        return loss.detach().cpu(), [t.grad.cpu() for t in leaves]

    ref_loss, ref_grads = grads("cpu", False)
    loss, got = grads("neuron", True)
    torch.testing.assert_close(loss, ref_loss, rtol=1e-5, atol=1e-4)
    for g, r in zip(got, ref_grads, strict=True):
        torch.testing.assert_close(g, r, rtol=1e-4, atol=1e-4)
