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
"""
from __future__ import annotations

import math

import torch

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


def decomposition_table(training: bool) -> dict:
    """Inductor's default table, plus for a training graph (``training``: grad mode on and an
    input requires grad, AOTAutograd's own test) the entries of this module. The choice is made
    per Dynamo graph: inside AOTAutograd's trace, grad mode says nothing (reentrant activation
    checkpointing runs its forward under ``no_grad``)."""
    from torch._inductor.decomposition import select_decomp_table

    table = dict(select_decomp_table())
    if training:
        table[aten._scaled_dot_product_fused_attention_overrideable.default] = _fused_attention_math
    return table
