"""Mixture-of-experts on neuron: integer histc and transformers' default grouped-mm experts path."""
import pytest
import torch

import torch_neuronx


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.uint8, torch.float32, torch.bfloat16])
def test_histc_all_dtypes(dtype):
    x = torch.tensor([0, 1, 1, 3, 3, 3, 5, 2], dtype=dtype)
    out = torch.histc(x.to("neuron"), bins=4, min=0, max=3)
    assert out.device.type == "neuron" and out.dtype == dtype  # integer in, integer counts out (as CUDA)
    assert out.cpu().tolist() == [1, 2, 1, 3]
    res = torch.empty(0, dtype=dtype, device="neuron")
    torch.histc(x.to("neuron"), bins=4, min=0, max=3, out=res)
    assert res.cpu().tolist() == [1, 2, 1, 3]


def test_grouped_mm_matches_cpu():
    a = torch.randn(6, 16, dtype=torch.bfloat16)
    b = torch.randn(2, 16, 8, dtype=torch.bfloat16)
    offs = torch.tensor([2, 6], dtype=torch.int32)
    ref = torch._grouped_mm(a, b, offs=offs)
    out = torch._grouped_mm(a.to("neuron"), b.to("neuron"), offs=offs.to("neuron"))
    assert out.device.type == "neuron"
    torch.testing.assert_close(out.cpu(), ref)


def test_qwen3_moe_generates_like_cpu():
    from transformers import Qwen3MoeConfig, Qwen3MoeForCausalLM

    cfg = Qwen3MoeConfig(vocab_size=128, hidden_size=64, intermediate_size=128, moe_intermediate_size=32,
                         num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                         num_experts=4, num_experts_per_tok=2, max_position_embeddings=64)
    torch.manual_seed(0)
    cpu = Qwen3MoeForCausalLM(cfg).eval()
    dev = Qwen3MoeForCausalLM(cfg).eval()
    dev.load_state_dict(cpu.state_dict())
    dev.to("neuron")
    x = torch.randint(0, 128, (2, 10), generator=torch.Generator().manual_seed(3))
    kw = dict(max_new_tokens=8, do_sample=False, pad_token_id=0)
    torch_neuronx.clear_op_tracking()
    out = dev.generate(x.to("neuron"), attention_mask=torch.ones_like(x).to("neuron"), **kw)
    ref = cpu.generate(x, attention_mask=torch.ones_like(x), **kw)
    assert torch.equal(out.cpu(), ref)
    assert torch_neuronx.get_executed_ops().get("aten::histc", 0) > 0  # the non-CPU MoE routing path ran
