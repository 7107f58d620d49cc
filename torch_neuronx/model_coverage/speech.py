"""The ``speech-seq2seq`` family: every entry of transformers' ``MODEL_FOR_SPEECH_SEQ_2_SEQ_MAPPING_NAMES``
(Whisper, Speech2Text, ...), greedy generate from one second of a synthetic waveform through the model
type's own feature extractor class (:mod:`.inputs`), eager and compiled static-cache
(:mod:`.generative`), tiny from its own config class (:mod:`.composite`)."""
from __future__ import annotations

from .checks import Check, Report
from .generative import GENERATIVE_CHECKS, check_mapping_entry, mapping_entries

CHECKS: tuple[Check, ...] = GENERATIVE_CHECKS

#: The transformers auto mapping this family covers.
MAPPING = "MODEL_FOR_SPEECH_SEQ_2_SEQ_MAPPING_NAMES"


def entries() -> list[str]:
    """Every model type of ``MODEL_FOR_SPEECH_SEQ_2_SEQ_MAPPING_NAMES``, sorted."""
    return mapping_entries(MAPPING)


def check_entry(model_type: str, *, device: str = "neuron", new_tokens: int = 4, atol: float = 1e-3,
                checks: tuple[Check, ...] = CHECKS, seed: int = 0) -> Report:
    """The :mod:`.generative` checks of one model type (a key of the mapping) on ``device``.

    Raises:
        KeyError: ``model_type`` is not in the mapping. Never for a model's failure (see :class:`Report`).
    """
    from .inputs import speech_model_inputs

    return check_mapping_entry(MAPPING, model_type, speech_model_inputs, device=device, new_tokens=new_tokens,
                               atol=atol, checks=checks, seed=seed)
