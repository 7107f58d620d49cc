"""The ``seq2seq`` family: every entry of transformers' ``MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES``
(T5, BART, Marian, ...), greedy generate from 8 encoder token ids (eager and compiled static-cache,
:mod:`.generative`), tiny from its own config class (:mod:`.composite`)."""
from __future__ import annotations

from typing import Any

from .checks import Check, Report
from .generative import GENERATIVE_CHECKS, check_generative

CHECKS: tuple[Check, ...] = GENERATIVE_CHECKS


def entries() -> list[str]:
    """Every model type of ``MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES``, sorted."""
    from transformers.models.auto.modeling_auto import MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES

    return sorted(MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES)


def text_inputs(model: Any, seed: int = 0, length: int = 8) -> dict[str, Any]:
    """``input_ids`` ``[1, length]`` (:func:`~.inputs.token_ids`) and an all-ones ``attention_mask``."""
    import torch

    from .composite import vocab_size
    from .inputs import token_ids

    ids = token_ids(length, vocab_size(model.config), seed)
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids)}


def check_entry(model_type: str, *, device: str = "neuron", new_tokens: int = 4, atol: float = 1e-3,
                checks: tuple[Check, ...] = CHECKS, seed: int = 0) -> Report:
    """The :mod:`.generative` checks of one model type (a key of the mapping) on ``device``.

    Raises:
        KeyError: ``model_type`` is not in the mapping. Never for a model's failure (see :class:`Report`).
    """
    from transformers.models.auto.modeling_auto import MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES

    from .composite import tiny_composite_model

    class_name = MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES[model_type]
    return check_generative(model_type, lambda: tiny_composite_model(model_type, class_name, seed),
                            lambda model: text_inputs(model, seed),
                            device=device, new_tokens=new_tokens, atol=atol, checks=checks)
