"""The ``speech-seq2seq`` family: every entry of transformers' ``MODEL_FOR_SPEECH_SEQ_2_SEQ_MAPPING_NAMES``
(Whisper, Speech2Text, ...), greedy generate from one second of a synthetic waveform through the model
type's own feature extractor class (:mod:`.inputs`), eager and compiled static-cache
(:mod:`.generative`), tiny from its own config class (:mod:`.composite`)."""
from __future__ import annotations

from .checks import Check
from .generative import GENERATIVE_CHECKS, MappingFamily
from .inputs import speech_model_inputs

CHECKS: tuple[Check, ...] = GENERATIVE_CHECKS

#: The family's ``entries()`` (the mapping's model types) and ``check_entry(model_type, ...)``.
FAMILY = MappingFamily("MODEL_FOR_SPEECH_SEQ_2_SEQ_MAPPING_NAMES", speech_model_inputs)
entries = FAMILY.entries
check_entry = FAMILY.check_entry
