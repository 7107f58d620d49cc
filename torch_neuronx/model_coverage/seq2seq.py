"""The ``seq2seq`` family: every entry of transformers' ``MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES``
(T5, BART, Marian, ...), greedy generate from 8 encoder token ids (eager and compiled static-cache,
:mod:`.generative`), tiny from its own config class (:mod:`.composite`)."""
from __future__ import annotations

from typing import Any

from .checks import Check, Report
from .generative import GENERATIVE_CHECKS, check_mapping_entry, mapping_entries

CHECKS: tuple[Check, ...] = GENERATIVE_CHECKS

#: The transformers auto mapping this family covers.
MAPPING = "MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES"


def entries() -> list[str]:
    """Every model type of ``MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES``, sorted."""
    return mapping_entries(MAPPING)


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
    return check_mapping_entry(MAPPING, model_type, lambda model, _type, s: text_inputs(model, s), device=device,
                               new_tokens=new_tokens, atol=atol, checks=checks, seed=seed)
