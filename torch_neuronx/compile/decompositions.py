"""Decompositions backend ``"neuron"`` adds to Inductor's table.

``aten._scaled_dot_product_fused_attention_overrideable`` (the fused SDPA op the ``neuron``
device picks in eager mode) is tagged ``nondeterministic_seeded`` because it *may* apply dropout.
When activation checkpointing recomputes it in the backward, AOTAutograd's partitioner wraps
every such op in ``torch._prims.rng_prims.run_and_save_rng_state`` / ``run_with_rng_state``,
whose device table is CUDA/CPU/HPU/XPU only — so a compiled training step with SDPA and gradient
checkpointing (TRL's defaults with ``torch_compile=True``) failed with "Backend not supported for
neuron". Without dropout the op is deterministic: in compiled training graphs it is written as its math
(scaled scores in float32, causal/bias mask, log-sum-exp, softmax, weighted values), which
carries no RNG tag and which Inductor fuses into its own kernels. Inference graphs keep the fused
kernel (:func:`decomposition_table` is told which kind the graph is); with dropout the op is kept
(``NotImplemented``) and follows PyTorch's RNG handling.

**Small matmuls as on the CPU.** Inductor decides per device type whether a matrix-vector
product becomes an extern BLAS call or a fused C++ loop: its ``aten.mm`` / ``aten.addmm`` /
``aten.bmm`` decompositions (``torch/_inductor/decomposition.py``) and its ``aten.bmm`` lowering
(``torch/_inductor/kernel/bmm.py``) write a product with a dimension of size 1 as a multiply and
a sum only when ``device.type == "cpu"``. ``neuron`` runs the CPU's C++ code generator on host
memory, so it takes the CPU's choices (:func:`neuron_mm`, :func:`neuron_addmm`,
:func:`neuron_bmm`): a decode step's attention (``[B·H, 1, D] @ [B·H, D, L]``) is then fused into
the softmax kernels instead of eight extern ``bmm`` calls per layer stack, as with Inductor on
the CPU. Other devices keep Inductor's decompositions unchanged.
"""
from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import torch
from torch._decomp.decompositions import pw_cast_for_opmath
from torch.fx.experimental.symbolic_shapes import guard_or_false, statically_known_true

aten = torch.ops.aten


def _fused_attention_math(query, key, value, attn_bias=None, dropout_p=0.0, is_causal=False,
                          return_debug_mask=False, *, scale=None):
    """The 9 outputs of ``_scaled_dot_product_fused_attention_overrideable`` for ``dropout_p == 0``.

    Shapes: query ``[B, Hq, Lq, E]``, key ``[B, Hk, Lk, E]``, value ``[B, Hk, Lk, Ev]`` with
    ``Hq % Hk == 0`` (grouped-query attention), ``attn_bias`` broadcastable to ``[B, Hq, Lq, Lk]``
    (bool: True keeps). Returns ``(out [B, Hq, Lq, Ev] in query's dtype, logsumexp [B, Hq, Lq]
    float32, None, None, Lq, Lk, philox seed/offset (0-d int64 zeros), None)``.
    """
    if dropout_p != 0.0 or return_debug_mask:
        return NotImplemented
    hq, hk = query.shape[1], key.shape[1]
    if hq != hk:
        key = key.repeat_interleave(hq // hk, dim=1)
        value = value.repeat_interleave(hq // hk, dim=1)
    scale = scale if scale is not None else 1.0 / math.sqrt(query.shape[-1])
    scores = torch.matmul(query.float(), key.float().transpose(-2, -1)) * scale
    lq, lk = query.shape[-2], key.shape[-2]
    if is_causal:
        keep = torch.ones(lq, lk, dtype=torch.bool, device=query.device).tril()
        scores = scores.masked_fill(~keep, float("-inf"))
    if attn_bias is not None:
        if attn_bias.dtype == torch.bool:
            scores = scores.masked_fill(~attn_bias, float("-inf"))
        else:
            scores = scores + attn_bias.float()
    lse = torch.logsumexp(scores, dim=-1)
    probs = torch.exp(scores - lse.unsqueeze(-1))
    out = torch.matmul(probs, value.float()).to(query.dtype)
    zero = torch.zeros((), dtype=torch.int64, device=query.device)
    return out, lse, None, None, lq, lk, zero, zero.clone(), None


def _on_neuron(t: Any) -> bool:
    return isinstance(t, torch.Tensor) and t.device.type == "neuron"


@pw_cast_for_opmath
def neuron_mm(self: torch.Tensor, input2: torch.Tensor) -> Any:
    """``aten.mm`` ``[M, K] @ [K, N]`` on ``neuron``: Inductor's CPU rules (torch 2.13) — a tiny
    outer product (K = 1, at most 32 elements) as a broadcast multiply, a dot product (M = N = 1)
    as a sum; otherwise ``NotImplemented`` (the extern BLAS call)."""
    if (statically_known_true(self.size(-1) == 1) and statically_known_true(self.size(0) != 1)
            and statically_known_true(input2.size(1) != 1)
            and statically_known_true(self.size(0) > 0) and statically_known_true(input2.size(0) == 1)
            and self.dtype == input2.dtype
            and guard_or_false((torch.numel(self) + torch.numel(input2)) <= 32)):
        return self * input2
    if statically_known_true(self.size(0) == 1) and statically_known_true(input2.size(-1) == 1):
        return torch.sum(self.squeeze(0) * input2.squeeze(-1), dim=0, keepdim=True).unsqueeze(0)
    return NotImplemented


@pw_cast_for_opmath
def neuron_addmm(self: torch.Tensor, mat1: torch.Tensor, mat2: torch.Tensor,
                 beta: Any = 1, alpha: Any = 1) -> Any:
    """``aten.addmm`` ``beta·self + alpha·(mat1 [M, K] @ mat2 [K, N])`` on ``neuron``: Inductor's
    CPU rules (torch 2.13) — a dot product (M = N = 1), or one row times a matrix of at most
    16 × 16, as multiply and sum; otherwise ``NotImplemented``."""
    if statically_known_true(mat1.size(0) == 1) and statically_known_true(mat2.size(-1) == 1):
        out = torch.sum(mat1.squeeze(0) * mat2.squeeze(-1), dim=0, keepdim=True).unsqueeze(0)
        return alpha * out + beta * self
    if (statically_known_true(mat1.size(0) == 1) and guard_or_false(mat2.size(0) <= 16)
            and guard_or_false(mat2.size(1) <= 16)):
        out = (mat1.T * mat2).sum(dim=0, keepdim=True)
        return alpha * out + beta * self
    return NotImplemented


@pw_cast_for_opmath
def neuron_bmm(self: torch.Tensor, batch2: torch.Tensor) -> Any:
    """``aten.bmm`` ``[B, M, K] @ [B, K, N]`` on ``neuron``: Inductor's CPU rules (torch 2.13) — an
    outer product (K = 1) as a broadcast multiply, M = N = 1 as a sum (its decomposition), and
    M = 1 or N = 1 as a multiply and a sum over K (its lowering's "memory bound" case);
    otherwise ``NotImplemented``."""
    if statically_known_true(self.shape[2] == 1) and statically_known_true(batch2.shape[1] == 1):
        return (self * batch2).contiguous()
    if statically_known_true(self.size(1) == 1) and statically_known_true(batch2.size(-1) == 1):
        return torch.sum(self.squeeze(1) * batch2.squeeze(-1), dim=1, keepdim=True).unsqueeze(1)
    if statically_known_true(self.size(1) == 1) or statically_known_true(batch2.size(2) == 1):
        return (self.unsqueeze(-1) * batch2.unsqueeze(1)).sum(dim=2)
    return NotImplemented


def _cpu_rules_on_neuron(original: Callable[..., Any], neuron_rule: Callable[..., Any]) -> Callable[..., Any]:
    """``original`` (Inductor's decomposition) for other devices, ``neuron_rule`` on ``neuron``."""

    @functools.wraps(original)
    def decompose(*args: Any, **kwargs: Any) -> Any:
        if _on_neuron(args[0]) and "out_dtype" not in kwargs:
            return neuron_rule(*args, **kwargs)
        return original(*args, **kwargs)

    return decompose


def decomposition_table(training: bool) -> dict:
    """Inductor's default table with the CPU's small-matmul rules on ``neuron`` (above), plus for
    a training graph (``training``: grad mode on and an
    input requires grad, AOTAutograd's own test) the entries of this module. The choice is made
    per Dynamo graph: inside AOTAutograd's trace, grad mode says nothing (reentrant activation
    checkpointing runs its forward under ``no_grad``)."""
    from torch._inductor.decomposition import select_decomp_table

    table = dict(select_decomp_table())
    for op, rule in ((aten.mm.default, neuron_mm), (aten.addmm.default, neuron_addmm),
                     (aten.bmm.default, neuron_bmm)):
        if op in table:
            table[op] = _cpu_rules_on_neuron(table[op], rule)
    if training:
        table[aten._scaled_dot_product_fused_attention_overrideable.default] = _fused_attention_math
    return table
