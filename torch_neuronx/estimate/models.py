"""Model configurations for shape-only estimates: presets, ``config.json`` files and folders.

``--model`` takes a preset name (the files of ``configs/``: public ``config.json`` values of the models AWS
and Hugging Face published Trainium measurements for; see ``configs/README.md``), a path to a
``config.json``, or a folder holding one. Nothing is downloaded.
"""
from __future__ import annotations

import json
import pathlib
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from transformers import PreTrainedConfig

__all__ = ["PRESETS", "load_config", "model_kind", "ModelKind"]

_DIR = pathlib.Path(__file__).with_name("configs")
#: preset name -> config file
PRESETS: dict[str, pathlib.Path] = {p.stem: p for p in sorted(_DIR.glob("*.json"))}

ModelKind = Literal["causal_lm", "encoder", "vision"]


def load_config(model: str) -> PreTrainedConfig:
    """The transformers config of ``model`` (preset name, ``config.json`` path, or folder).

    Raises:
        ValueError: ``model`` is none of those (the message lists the presets), or the file is not a
            transformers configuration.
    """
    from transformers import AutoConfig

    key = str(model).strip()
    if key.lower() in PRESETS:
        path = PRESETS[key.lower()]
    else:
        path = pathlib.Path(key).expanduser()
        if path.is_dir():
            path = path / "config.json"
        if not path.is_file():
            raise ValueError(
                f"--model {model!r}: not a preset ({', '.join(PRESETS)}), a config.json, or a folder holding one. "
                "Hugging Face Hub ids are not downloaded: save the model's config.json and pass its path.")
    try:
        values = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise ValueError(f"--model {model!r}: {path} is not a JSON file ({err})") from None
    if not isinstance(values, dict) or "model_type" not in values:
        raise ValueError(f"--model {model!r}: {path} has no 'model_type': not a transformers config.json")
    values = dict(values)
    model_type = values.pop("model_type")
    try:
        return AutoConfig.for_model(model_type, **values)
    except ValueError as err:
        raise ValueError(f"--model {model!r}: transformers {__import__('transformers').__version__} does not know "
                         f"model_type {model_type!r} ({err})") from None


def model_kind(config: PreTrainedConfig) -> ModelKind:
    """``"vision"`` (pixel inputs), ``"causal_lm"`` (decoder with a language-model head) or ``"encoder"``."""
    if getattr(config, "image_size", None) and getattr(config, "num_channels", None):
        return "vision"
    archs = getattr(config, "architectures", None) or []
    if any(a.endswith("ForCausalLM") for a in archs):
        return "causal_lm"
    if archs:
        return "encoder"
    from transformers.models.auto.modeling_auto import (
        MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
        MODEL_FOR_MASKED_LM_MAPPING_NAMES,
    )

    causal, masked = MODEL_FOR_CAUSAL_LM_MAPPING_NAMES, MODEL_FOR_MASKED_LM_MAPPING_NAMES
    if config.model_type in causal and config.model_type not in masked:
        return "causal_lm"
    return "encoder"
