"""The ``seq2seq`` family: every entry of transformers' ``MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES``
(T5, BART, Marian, ...), greedy generate from 8 encoder token ids (eager and compiled static-cache,
:mod:`.generative`), tiny from its own config class (:mod:`.composite`)."""
from __future__ import annotations

from typing import Any

from .checks import Check
from .generative import GENERATIVE_CHECKS, MappingFamily


def text_inputs(model: Any, seed: int = 0, length: int = 8) -> dict[str, Any]:
    """``input_ids`` ``[1, length]`` (:func:`~.inputs.token_ids`) and an all-ones ``attention_mask``."""
    import torch

    from .composite import vocab_size
    from .inputs import token_ids

    ids = token_ids(length, vocab_size(model.config), seed)
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids)}


def _family_inputs(model: Any, model_type: str, seed: int) -> dict[str, Any]:
    return text_inputs(model, seed)


CHECKS: tuple[Check, ...] = GENERATIVE_CHECKS

#: The family's ``entries()`` (the mapping's model types) and ``check_entry(model_type, ...)``.
FAMILY = MappingFamily("MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES", _family_inputs)
entries = FAMILY.entries
check_entry = FAMILY.check_entry

