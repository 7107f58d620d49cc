"""The ``image-text-to-text`` family: every entry of transformers'
``MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES``, greedy generate from a synthetic image and a prompt
(eager and compiled static-cache, :mod:`.generative`), tiny from its own config class
(:mod:`.composite`), pixels through its own image processor class (:mod:`.inputs`)."""
from __future__ import annotations

from .checks import Check
from .generative import GENERATIVE_CHECKS, MappingFamily
from .inputs import image_text_inputs

CHECKS: tuple[Check, ...] = GENERATIVE_CHECKS

#: The family's ``entries()`` (the mapping's model types) and ``check_entry(model_type, ...)``.
FAMILY = MappingFamily("MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES", image_text_inputs)
entries = FAMILY.entries
check_entry = FAMILY.check_entry
