"""FLOP formulas of the ``neuron`` device's fused attention op for ``torch.utils.flop_counter``.

On ``neuron``, ``scaled_dot_product_attention`` runs ``aten._scaled_dot_product_fused_attention_overrideable``
(and its ``_backward``) whenever PyTorch's CPU flash kernel applies (``csrc/aten/Attention.cpp``). PyTorch's
``FlopCounterMode`` has no formula for that op and counts it as 0 FLOPs, so it under-counts every
transformer step on the device. :func:`register` adds PyTorch's own attention formulas
(``sdpa_flop_count`` / ``sdpa_backward_flop_count``: 2 matmuls forward, 5 backward, non-causal, as for
CUDA's flash and efficient attention ops) through the public ``register_flop_formula``, so
``FlopCounterMode`` and ``torch_neuronx.estimate`` count the same, correct FLOPs.
"""
from __future__ import annotations

import torch

__all__ = ["register"]


def _forward_flops(query, key, value, *args, out_shape=None, **kwargs) -> int:
    from torch.utils.flop_counter import sdpa_flop_count

    return sdpa_flop_count(query, key, value)


def _backward_flops(grad_out, query, key, value, *args, out_shape=None, **kwargs) -> int:
    from torch.utils.flop_counter import sdpa_backward_flop_count

    return sdpa_backward_flop_count(grad_out, query, key, value)


def register() -> None:
    """Registers the formulas once (a second call does nothing; PyTorch refuses duplicates)."""
    from torch.utils.flop_counter import flop_registry, register_flop_formula

    aten = torch.ops.aten
    for packet, formula in ((aten._scaled_dot_product_fused_attention_overrideable, _forward_flops),
                            (aten._scaled_dot_product_fused_attention_overrideable_backward, _backward_flops)):
        if packet not in flop_registry:
            register_flop_formula(packet)(formula)
