"""The ``speech-seq2seq`` family: every entry of transformers' ``MODEL_FOR_SPEECH_SEQ_2_SEQ_MAPPING_NAMES``
(Whisper, Speech2Text, ...), greedy generate from one second of a synthetic waveform through the model
type's own feature extractor class (:mod:`.inputs`), eager and compiled static-cache
(:mod:`.generative`), tiny from its own config class (:mod:`.composite`)."""
from __future__ import annotations

from .checks import Check, Report
from .generative import GENERATIVE_CHECKS, check_generative

CHECKS: tuple[Check, ...] = GENERATIVE_CHECKS


def entries() -> list[str]:
    """Every model type of ``MODEL_FOR_SPEECH_SEQ_2_SEQ_MAPPING_NAMES``, sorted."""
    from transformers.models.auto.modeling_auto import MODEL_FOR_SPEECH_SEQ_2_SEQ_MAPPING_NAMES

    return sorted(MODEL_FOR_SPEECH_SEQ_2_SEQ_MAPPING_NAMES)


def check_entry(model_type: str, *, device: str = "neuron", new_tokens: int = 4, atol: float = 1e-3,
                checks: tuple[Check, ...] = CHECKS, seed: int = 0) -> Report:
    """The :mod:`.generative` checks of one model type (a key of the mapping) on ``device``.

    Raises:
        KeyError: ``model_type`` is not in the mapping. Never for a model's failure (see :class:`Report`).
    """
    from transformers.models.auto.modeling_auto import MODEL_FOR_SPEECH_SEQ_2_SEQ_MAPPING_NAMES

    from .composite import tiny_composite_model
    from .inputs import speech_model_inputs

    class_name = MODEL_FOR_SPEECH_SEQ_2_SEQ_MAPPING_NAMES[model_type]
    return check_generative(model_type, lambda: tiny_composite_model(model_type, class_name, seed),
                            lambda model: speech_model_inputs(model, model_type, seed),
                            device=device, new_tokens=new_tokens, atol=atol, checks=checks)
