"""Attention of shape-only models: SDPA without a materialised mask, optionally recomputed.

On real tensors transformers passes no mask to SDPA for a plain causal prefill or training step (it sets
``is_causal=True``, so the attention kernel skips the masked half and no ``[query, key]`` mask is built). On
fake tensors its checks cannot read values (is the prompt packed? padded?), so it builds the full mask: a
shape-only run would pay for a ``seq x seq`` mask and a non-causal attention that the real run, and the
fused attention kernels of NxD / NxD Inference, do not. Two attention implementations registered through
transformers' public ``AttentionInterface`` avoid that: transformers builds no mask for an implementation
that registers no mask function (its "custom attention without equivalent mask creation" case), so SDPA
runs causal for multi-token queries (``is_causal``) and unmasked over the cache for a decode step (the
same work as the masked kernel):

* :data:`SDPA` (``"neuron_estimate_sdpa"``): transformers' SDPA;
* :data:`RECOMPUTED_SDPA` (``"neuron_estimate_recomputed_sdpa"``): the same in a non-reentrant
  ``torch.utils.checkpoint``, so attention is recomputed in the backward (NxD's selective checkpointing).

Only shape-only models use them; padded batches are therefore not modelled (every sequence is full length).
"""
from __future__ import annotations

import torch

__all__ = ["SDPA", "RECOMPUTED_SDPA", "register"]

SDPA = "neuron_estimate_sdpa"
RECOMPUTED_SDPA = "neuron_estimate_recomputed_sdpa"
_registered = False


def register() -> None:
    """Registers both implementations with transformers' ``AttentionInterface`` (idempotent)."""
    global _registered
    if _registered:
        return
    from transformers import AttentionInterface
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    def recomputed(module, query, key, value, attention_mask, **kwargs):
        # preserve_rng_state=False: this SDPA has no dropout, and a shape-only run has no real RNG state
        return torch.utils.checkpoint.checkpoint(sdpa_attention_forward, module, query, key, value, attention_mask,
                                                 use_reentrant=False, preserve_rng_state=False, **kwargs)

    AttentionInterface.register(SDPA, sdpa_attention_forward)
    AttentionInterface.register(RECOMPUTED_SDPA, recomputed)
    _registered = True
