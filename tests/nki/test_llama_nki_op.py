"""Acceptance: an RMSNorm written for the current ``nki`` front end in the style of AWS's kernel library
(destination-passing ``nisa`` calls, ``dma_copy`` between HBM and SBUF, 128-row tiles, the sum of
squares fused into ``nisa.activation``'s reduction, ``rsqrt`` on the Scalar Engine, the gamma row
broadcast across partitions), registered as an ``nki_op`` and used for every RMSNorm of a transformers
Llama on ``neuron``: logits match the PyTorch model in fp32 and bf16, eagerly and under
``torch.compile(backend="neuron")``. The kernel and inputs are ours."""
import copy

import pytest
import torch

pytest.importorskip("transformers")
from transformers import LlamaConfig, LlamaForCausalLM
from transformers.models.llama.modeling_llama import LlamaRMSNorm

import torch_neuronx.nki.current.isa as nisa
import torch_neuronx.nki.current.language as nl
from torch_neuronx import nki_op, wrap_nki
from torch_neuronx.nki import current as nki
from torch_neuronx.nki.torch_op import kernel_cache

CONFIG = dict(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
              num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)


@nki.jit
def rmsnorm_kernel(x, gamma, eps):
    """``out[t, :] = x[t, :] / sqrt(mean(x[t, :]**2) + eps) * gamma``; x [T, H] in HBM, gamma [1, H]."""
    T, H = x.shape
    P = nl.tile_size.pmax
    out = nl.ndarray((T, H), dtype=x.dtype, buffer=nl.shared_hbm)
    g = nl.ndarray((P, H), dtype=nl.float32, buffer=nl.sbuf)
    g_row = nl.ndarray((1, H), dtype=gamma.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=g_row, src=gamma)
    nisa.tensor_copy(dst=g, src=g_row.broadcast_to((P, H)))        # gamma on every partition
    for t0 in range(0, T, P):
        rows = min(P, T - t0)
        xt = nl.ndarray((P, H), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=xt[0:rows, :], src=x[t0:t0 + rows, :])
        sq = nl.ndarray((P, H), dtype=nl.float32, buffer=nl.sbuf)
        ssum = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=sq[0:rows, :], op=nl.square, data=xt[0:rows, :], reduce_op=nl.add,
                        reduce_res=ssum[0:rows, :])
        inv = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=inv[0:rows, :], data=ssum[0:rows, :], op0=nl.multiply, operand0=1.0 / H,
                           op1=nl.add, operand1=eps)
        nisa.activation(dst=inv[0:rows, :], op=nl.rsqrt, data=inv[0:rows, :])
        y = nl.ndarray((P, H), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=y[0:rows, :], data=xt[0:rows, :], op0=nl.multiply, operand0=inv[0:rows, :])
        yo = nl.ndarray((P, H), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=yo[0:rows, :], data1=y[0:rows, :], data2=g[0:rows, :], op=nl.multiply)
        nisa.dma_copy(dst=out[t0:t0 + rows, :], src=yo[0:rows, :])
    return out


@nki_op("test_llama_nki_op::rms_norm", mutates_args=())
def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    shape = x.shape
    out = wrap_nki(rmsnorm_kernel)(x.reshape(-1, shape[-1]), weight.reshape(1, -1), eps)
    return out.reshape(shape)


class NKIRMSNorm(torch.nn.Module):
    """Drop-in for a ``LlamaRMSNorm`` instance: same weight and epsilon, the NKI kernel's forward."""

    def __init__(self, norm: LlamaRMSNorm):
        super().__init__()
        self.weight = norm.weight
        self.eps = norm.variance_epsilon

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return rms_norm(x, self.weight, self.eps)


def _swap_norms(model):
    names = [n for n, m in model.named_modules() if isinstance(m, LlamaRMSNorm)]
    for name in names:
        parent, _, leaf = name.rpartition(".")
        owner = model.get_submodule(parent) if parent else model
        setattr(owner, leaf, NKIRMSNorm(getattr(owner, leaf)))
    return len(names)


def _calls():
    return sum(e.calls + 1 for e in kernel_cache() if e.name == "rmsnorm_kernel" and e.instructions)


@pytest.fixture(scope="module")
def base_and_batch():
    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(**CONFIG)).eval()
    with torch.no_grad():           # non-trivial norm weights, so a wrong weight path would show
        for m in model.modules():
            if isinstance(m, LlamaRMSNorm):
                m.weight.copy_(torch.rand_like(m.weight) + 0.5)
    batch = torch.randint(0, CONFIG["vocab_size"], (2, 80), generator=torch.Generator().manual_seed(1))
    return model, batch                 # 160 tokens: one full 128-row tile and a partial one


def test_kernel_matches_the_pytorch_op_on_a_partial_tile():
    x = torch.randn(130, 64, device="neuron")
    w = torch.rand(64, device="neuron") + 0.5
    ref = LlamaRMSNorm(64, eps=1e-6).to("neuron")
    with torch.no_grad():
        ref.weight.copy_(w)
        torch.testing.assert_close(rms_norm(x, w, 1e-6).cpu(), ref(x).cpu(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype,tol", [(torch.float32, 1e-4), (torch.bfloat16, 3e-2)])
@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_llama_forward_with_the_nki_rmsnorm(base_and_batch, dtype, tol, compiled):
    base, batch = base_and_batch
    ref_model = copy.deepcopy(base).to(dtype).to("neuron")
    model = copy.deepcopy(base).to(dtype).to("neuron")
    assert _swap_norms(model) == 2 * CONFIG["num_hidden_layers"] + 1
    batch = batch.to("neuron")
    with torch.no_grad():
        ref = ref_model(batch).logits.float().cpu()
        before = _calls()
        if compiled:
            torch._dynamo.reset()
            fwd = torch.compile(lambda b: model(b).logits, backend="neuron", fullgraph=True)
            out = fwd(batch)
        else:
            out = model(batch).logits
    assert out.device.type == "neuron" and out.dtype == dtype
    assert _calls() - before == 2 * CONFIG["num_hidden_layers"] + 1     # every norm ran the kernel
    torch.testing.assert_close(out.float().cpu(), ref, rtol=tol, atol=tol)
