"""Tensor-parallel degree checks against a model's attention heads.

Colwise-sharding q/k/v projections over ``tp_size`` ranks gives each rank
``heads / tp_size`` heads, so ``tp_size`` must divide both the number of
attention heads and the number of key/value heads (grouped-query attention).
On Trainium a TP degree that does not divide the KV heads is a common failure,
and transformers itself only fails later, in the forward; this check says which
count fails before any weight is sharded.
"""
from __future__ import annotations


class TensorParallelDegreeError(ValueError):
    """``tp_size`` does not divide the model's attention or key/value heads."""


def check_tp_degree(config, tp_size: int) -> None:
    """Checks that ``tp_size`` divides the heads of ``config``.

    Args:
        config: a transformers ``PretrainedConfig`` (or any object) with
            ``num_attention_heads`` and optionally ``num_key_value_heads``
            (defaults to the attention heads, as transformers does); a
            composite config's ``text_config`` is used when it has the heads.
        tp_size: tensor-parallel degree, ≥ 1.

    Raises:
        TensorParallelDegreeError: naming the count that ``tp_size`` does not
            divide, e.g. ``"tp_size=4 does not divide num_key_value_heads=2 ..."``.
        ValueError: ``tp_size`` < 1, or a config without ``num_attention_heads``.
    """
    if tp_size < 1:
        raise ValueError(f"tp_size must be at least 1, got {tp_size}")
    if getattr(config, "num_attention_heads", None) is None and hasattr(config, "get_text_config"):
        config = config.get_text_config()
    heads = getattr(config, "num_attention_heads", None)
    if heads is None:
        raise ValueError(f"{type(config).__name__} has no num_attention_heads to check tp_size against")
    kv_heads = getattr(config, "num_key_value_heads", None) or heads
    for name, count in (("num_attention_heads", heads), ("num_key_value_heads", kv_heads)):
        if count % tp_size:
            divisors = [d for d in range(1, count + 1) if count % d == 0 and heads % d == 0 and kv_heads % d == 0]
            raise TensorParallelDegreeError(
                f"tp_size={tp_size} does not divide {name}={count} of {type(config).__name__} "
                f"(attention heads {heads}, key/value heads {kv_heads}): each tensor-parallel rank must "
                f"hold whole heads. Use a tp_size among {divisors}."
            )
