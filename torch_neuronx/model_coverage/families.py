"""The model families of ``torch-neuronx compat --family F``: what each family checks and where.

=====================  ==============================================  ===========================
family                 entries                                          checks
=====================  ==============================================  ===========================
``causal-lm``          ``MODEL_FOR_CAUSAL_LM_MAPPING_NAMES``            generate, compiled, train
``image-text-to-text`` ``MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES``   generate, compiled
``seq2seq``            ``MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES`` generate, compiled
``speech-seq2seq``     ``MODEL_FOR_SPEECH_SEQ_2_SEQ_MAPPING_NAMES``     generate, compiled
``encoder``            masked-LM, sequence- and image-classification    forward, train
``diffusers``          Diffusers' transformer, UNet and VAE classes     forward, compiled, train
=====================  ==============================================  ===========================

Each family is one module of this package with ``CHECKS``, ``entries()`` and
``check_entry(name, *, device, atol, checks, seed, ...)`` returning a :class:`~.checks.Report`.
"""
from __future__ import annotations

import importlib
import inspect
from dataclasses import dataclass
from typing import Any

from .checks import CHECK_LABELS, Check, Report


@dataclass(frozen=True)
class Family:
    """One family: its name, the module implementing it and how the table names its checks."""

    name: str
    module: str
    compiled_label: str

    def implementation(self) -> Any:
        """The family's module (imported on first use)."""
        return importlib.import_module(f"{__package__}.{self.module}")

    @property
    def checks(self) -> tuple[Check, ...]:
        """The family's checks, in the order they run."""
        return tuple(self.implementation().CHECKS)

    def labels(self) -> dict[Check, str]:
        """Check -> how the summary line names it."""
        return {**CHECK_LABELS, "compiled": self.compiled_label}

    def entries(self) -> list[str]:
        """Every entry name of the installed libraries (model types, or class names for ``encoder``
        and ``diffusers``)."""
        return list(self.implementation().entries())

    def select(self, names: list[str]) -> list[str]:
        """The entries among ``names``, in the family's order; for ``encoder`` a model type also
        selects every class of that model type."""
        wanted = set(names)
        if self.name == "encoder":
            table = self.implementation().entry_table()
            return [e for e in self.entries() if e in wanted or table[e][0] in wanted]
        return [e for e in self.entries() if e in wanted]

    def class_name(self, entry: str) -> str:
        """The model class ``entry`` stands for: the mapping's class for the model-type families, the
        entry itself for ``encoder`` and ``diffusers`` (whose entries are classes); "" when unknown."""
        if self.name in ("encoder", "diffusers"):
            return entry
        from transformers.models.auto import modeling_auto

        value = getattr(modeling_auto, MAPPINGS[self.name], {}).get(entry, "")
        return value if isinstance(value, str) else ", ".join(value)

    def check(self, name: str, **options: Any) -> Report:
        """``check_entry(name, **options)`` of the family's module."""
        return self.implementation().check_entry(name, **options)


#: The transformers mapping (in ``transformers.models.auto.modeling_auto``) of each model-type family.
MAPPINGS: dict[str, str] = {
    "causal-lm": "MODEL_FOR_CAUSAL_LM_MAPPING_NAMES",
    "image-text-to-text": "MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES",
    "seq2seq": "MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES",
    "speech-seq2seq": "MODEL_FOR_SPEECH_SEQ_2_SEQ_MAPPING_NAMES",
}

FAMILIES: dict[str, Family] = {f.name: f for f in (
    Family("causal-lm", "causal_lm", "compiled static-cache generate"),
    Family("image-text-to-text", "image_text", "compiled static-cache generate"),
    Family("seq2seq", "seq2seq", "compiled static-cache generate"),
    Family("speech-seq2seq", "speech", "compiled static-cache generate"),
    Family("encoder", "encoder", "compiled"),
    Family("diffusers", "diffusers_models", "compiled forward"),
)}


def get_family(name: str) -> Family:
    """The :class:`Family` called ``name``.

    Raises:
        ValueError: no such family (the message lists them).
    """
    if name not in FAMILIES:
        raise ValueError(f"unknown family {name!r}; choose from {', '.join(FAMILIES)}")
    return FAMILIES[name]


def validate_family_options(family: Family, options: dict[str, Any]) -> None:
    """Raises ValueError for options ``family``'s ``check_entry`` does not take or would reject
    (sizes < 1, a negative ``atol``, checks the family does not have) — the caller's mistakes, which
    must not be reported as a model's failure."""
    accepted = set(inspect.signature(family.implementation().check_entry).parameters) - {"device"}
    accepted = {p for p in accepted if p not in ("model_type", "class_name")}
    wrong = sorted(set(options) - accepted)
    if wrong:
        raise ValueError(f"unknown options {wrong} for family {family.name}; it takes {sorted(accepted)}")
    for key in ("new_tokens", "compiled_tokens", "prompt_len"):
        if key in options and not (isinstance(options[key], int) and options[key] >= 1):
            raise ValueError(f"{key} must be an integer ≥ 1, got {options[key]!r}")
    if "atol" in options and not options["atol"] >= 0:
        raise ValueError(f"atol must be ≥ 0, got {options['atol']!r}")
    unknown = [c for c in options.get("checks", ()) if c not in family.checks]
    if unknown:
        raise ValueError(f"unknown checks {unknown} for family {family.name}; choose from {family.checks}")
