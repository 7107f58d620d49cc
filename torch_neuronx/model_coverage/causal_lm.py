"""The ``causal-lm`` family: every model type of transformers' ``MODEL_FOR_CAUSAL_LM_MAPPING_NAMES``,
checked by :func:`~.checks.check_architecture` (greedy generate, compiled static-cache generate, one
training step) on a tiny model from :mod:`.tiny`."""
from __future__ import annotations

from .checks import CHECKS, check_architecture

#: ``check_entry(model_type, *, device, new_tokens, prompt_len, atol, checks, seed, compiled_tokens)``.
check_entry = check_architecture

__all__ = ["CHECKS", "check_entry", "entries"]


def entries() -> list[str]:
    """Every ``model_type`` of the installed transformers' ``MODEL_FOR_CAUSAL_LM_MAPPING_NAMES``, sorted."""
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    return sorted(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES)
