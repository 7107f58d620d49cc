"""Tiny random-weight causal LMs built offline from each architecture's own config class.

:func:`tiny_config` takes the config class's defaults (the released model's shape) and shrinks
every size it knows by name — width, depth, heads, vocabulary, experts, low-rank and
state-space sizes — keeping what makes the architecture itself: its attention variant, its
MoE routing, and **every distinct layer type of a hybrid stack** (``layer_types`` such as
sliding/full attention, linear attention, Mamba or convolution blocks keep one layer each, in
their original order). Composite configs (a text model inside a multimodal one) are shrunk
through their ``sub_configs``.

No file is read or downloaded: the configs are the installed transformers' classes and the
weights are drawn from ``torch.manual_seed(seed)`` by the model's own initialisation.
"""
from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from transformers import PreTrainedConfig, PreTrainedModel

#: Sizes set when the default config has the attribute (directly or through its
#: ``attribute_map``). Chosen so that every architecture keeps valid ratios (heads divide the
#: width, KV heads divide heads, experts ≥ experts per token) at ~10⁵ parameters.
SHRINK: dict[str, Any] = {
    "vocab_size": 256,
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "max_position_embeddings": 256,
    "rotary_dim": 8,
    # Gemma 3n / Gemma 4 per-layer input embeddings and KV sharing across layers
    "vocab_size_per_layer_input": 256,
    "hidden_size_per_layer_input": 16,
    "num_kv_shared_layers": 0,
    # encoder-decoder families used as decoders (BART, Marian, Whisper, ...)
    "d_model": 64,
    "encoder_layers": 2,
    "decoder_layers": 2,
    "encoder_attention_heads": 4,
    "decoder_attention_heads": 4,
    "encoder_ffn_dim": 128,
    "decoder_ffn_dim": 128,
    # mixture of experts
    "num_experts": 4,
    "num_local_experts": 4,
    "n_routed_experts": 4,
    "moe_num_experts": 4,
    "num_experts_per_tok": 2,
    "moe_topk": 2,
    "moe_k": 2,
    "moe_intermediate_size": 32,
    "shared_expert_intermediate_size": 32,
    "expert_intermediate_size": 32,
    "n_shared_experts": 1,
    "num_shared_experts": 1,
    "n_group": 1,
    "topk_group": 1,
    # multi-head latent attention (DeepSeek V2/V3, MiniCPM3, ...)
    "q_lora_rank": 32,
    "kv_lora_rank": 16,
    "qk_rope_head_dim": 8,
    "qk_nope_head_dim": 8,
    "v_head_dim": 16,
    # linear attention / gated delta net
    "linear_num_key_heads": 2,
    "linear_num_value_heads": 4,
    "linear_key_head_dim": 16,
    "linear_value_head_dim": 16,
    # state-space blocks
    "state_size": 8,
    "mamba_d_state": 8,
    "mamba_n_heads": 8,
    "mamba_d_head": 16,
    "mamba_n_groups": 1,
    "n_groups": 1,
    "time_step_rank": 8,
    # windows
    "sliding_window": 8,
    "attention_window_size": 8,
}

#: Keys set even where the default is ``None`` (there ``None`` means "derive it from the
#: released sizes", which the shrunk sizes no longer match).
SET_WHEN_NONE = frozenset({"head_dim", "num_key_value_heads", "num_experts_per_tok", "n_routed_experts",
                           "n_shared_experts"})

#: Per-architecture settings the generic rules cannot infer: where a hybrid stack is not
#: described by ``layer_types`` (periods, index lists, patterns), or where sizes are tied by
#: a rule of the architecture (Mamba heads × head size = expand × width).
EXTRA: dict[str, dict[str, Any]] = {
    "jamba": {"attn_layer_period": 2, "attn_layer_offset": 1, "expert_layer_period": 2, "expert_layer_offset": 1},
    "bamba": {"attn_layer_indices": [1]},
    "granitemoehybrid": {"layer_types": ["linear_attention", "full_attention"]},
    "lfm2_moe": {"layer_types": ["conv", "full_attention"], "num_dense_layers": 1},
    "recurrent_gemma": {"num_hidden_layers": 3},  # block_types: recurrent, recurrent, attention
    "falcon_h1": {"mamba_n_heads": 8, "mamba_d_head": 16, "mamba_d_ssm": 128},
    # the shared transformer block is tied across hybrid layers: keep two of them
    "zamba": {"layer_types": ["linear_attention", "hybrid", "hybrid"]},
    "zamba2": {"layer_types": ["linear_attention", "hybrid", "hybrid"], "hybrid_layer_ids": [1, 2]},
    "mamba2": {"num_heads": 8, "head_dim": 16},
    "gpt_neo": {"attention_types": [[["global", "local"], 1]]},
    "xlnet": {"d_head": 16},
    # Reformer: local attention only — LSH layers draw random rotations from the device's RNG,
    # whose stream differs from the CPU's (as CUDA's does), so they cannot be compared.
    "reformer": {"is_decoder": True, "attn_layers": ["local", "local"], "axial_pos_shape": [16, 16],
                 "axial_pos_embds_dim": [32, 32], "local_attn_chunk_length": 8, "lsh_attn_chunk_length": 8,
                 "num_buckets": 4},
}

#: Keys zeroed so CPU and ``neuron`` draw no random numbers in the forward pass.
ZERO_SUFFIXES = ("dropout", "_pdrop", "dropout_prob", "dropout_rate", "router_jitter_noise")


def _field(config, key: str) -> str | None:
    """The attribute name ``key`` is stored under, or None when ``config`` does not have it
    as a settable field (a read-only property derived from other fields does not count)."""
    key = getattr(config, "attribute_map", {}).get(key, key)
    if isinstance(getattr(type(config), key, None), property):
        return None
    if key in config.__dict__ or key in getattr(type(config), "__dataclass_fields__", {}):
        return key
    return None


def _known(config, key: str) -> bool:
    return _field(config, key) is not None


def has_field(config: Any, key: str) -> bool:
    """True when ``config`` has ``key`` (directly or through its ``attribute_map``) as a settable field."""
    return _known(config, key)


def get_field(config: Any, key: str, default: Any = None) -> Any:
    """``getattr(config, key, default)`` treating any error (per-layer attributes raise on global
    access) as absent."""
    return _get(config, key, default)


def shrink_overrides(config: Any) -> dict[str, Any]:
    """The shrinking keyword arguments (:data:`SHRINK`, zeroed dropouts, one layer per layer type, token
    ids inside the tiny vocabulary) for a default ``config`` instance; nested sub-configs not included."""
    return _overrides(config)


def apply_overrides(config: Any, kwargs: dict[str, Any]) -> Any:
    """Sets every ``kwargs`` item as an attribute of ``config`` (for configs whose ``__init__`` does not take
    them by name) and returns ``config``."""
    return _apply(config, kwargs)


def _get(config, key: str, default=None):
    """``getattr`` that treats any error (per-layer attributes raise on global access) as absent."""
    try:
        return getattr(config, key, default)
    except Exception:  # noqa: BLE001
        return default


def _distinct_in_order(items) -> list:
    seen: list = []
    for item in items:
        if item not in seen:
            seen.append(item)
    return seen


def _overrides(config) -> dict[str, Any]:
    """The shrinking keyword arguments for a default ``config`` instance."""
    out: dict[str, Any] = {}
    for key, value in SHRINK.items():
        if not _known(config, key):
            continue
        current = _get(config, key)
        if current is None and key in SET_WHEN_NONE:
            out[key] = value
        elif isinstance(current, int) and not isinstance(current, bool):
            out[key] = value if key == "vocab_size" else min(value, current)
        # else: None (feature off, e.g. no sliding window), a list or a flag: the architecture's choice
    for key, value in config.to_dict().items():
        if isinstance(value, float) and key.endswith(ZERO_SUFFIXES):
            out[key] = 0.0
    # Hybrid stacks: one layer of each distinct type, in their first-appearance order.
    # (A single-type stack is left to derive its own list from num_hidden_layers.)
    layer_types = _get(config, "layer_types")
    if _known(config, "layer_types") and isinstance(layer_types, (list, tuple)) and layer_types:
        kinds = _distinct_in_order(layer_types)
        if len(kinds) > 1:
            out["layer_types"] = list(kinds)
            out["num_hidden_layers"] = len(kinds)
    # Multi-head latent attention: the rotary part is the head_dim the rope code sees, and
    # the cache holds one latent per attention head.
    if "qk_rope_head_dim" in out and _known(config, "head_dim"):
        out["head_dim"] = out["qk_rope_head_dim"]
    if "kv_lora_rank" in out and "num_key_value_heads" in out:
        out["num_key_value_heads"] = out.get("num_attention_heads", 4)
    # MoE with leading dense layers: keep one dense and one sparse layer.
    if _known(config, "first_k_dense_replace") and isinstance(_get(config, "first_k_dense_replace"), int):
        out["first_k_dense_replace"] = min(1, config.first_k_dense_replace)
    # Token ids must index the tiny vocabulary.
    vocab = out.get("vocab_size")
    if vocab:
        for key in ("pad_token_id", "bos_token_id", "eos_token_id", "decoder_start_token_id", "sep_token_id",
                    "cls_token_id", "mask_token_id", "unk_token_id"):
            value = _get(config, key)
            if isinstance(value, bool):
                continue
            if isinstance(value, int) and value >= vocab:
                out[key] = {"pad_token_id": 0, "bos_token_id": 1}.get(key, 2)
            elif isinstance(value, list):
                out[key] = [v if v < vocab else 2 for v in value]
    return out


def tiny_model(model_type: str, seed: int = 0) -> PreTrainedModel:
    """A tiny random-weight causal LM of ``model_type`` (a key of transformers'
    ``MODEL_FOR_CAUSAL_LM_MAPPING_NAMES``), in float32 on the CPU, in eval mode.

    The config class is the one the model class declares (for a multimodal entry whose causal-LM
    class takes the text config, that text config); :data:`EXTRA` adds the per-architecture
    settings. Weights come from ``torch.manual_seed(seed)`` and the model's own initialisation.

    Raises:
        KeyError: ``model_type`` is not a causal-LM architecture of the installed transformers.
        Anything the config or model constructor raises for the shrunk sizes.
    """
    import torch
    import transformers
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    model_class = getattr(transformers, MODEL_FOR_CAUSAL_LM_MAPPING_NAMES[model_type])
    config_class = getattr(model_class, "config_class", None) or CONFIG_MAPPING[model_type]
    config = tiny_config(config_class, **EXTRA.get(model_type, {}))
    torch.manual_seed(seed)
    model = model_class(config).eval()
    if model_type == "xmod":  # X-MOD needs an adapter language before any forward
        model.set_default_language(config.languages[0])
    return model


def tiny_config(config_class: type[PreTrainedConfig], **extra: Any) -> PreTrainedConfig:
    """A shrunk instance of ``config_class`` (a transformers ``PreTrainedConfig`` subclass).

    Args:
        config_class: the architecture's config class, e.g. ``LlamaConfig``.
        **extra: keyword arguments applied last (override the shrinking).

    Returns:
        A config instance with hidden size ≤ 64, 2 layers (one per distinct layer type for
        hybrid stacks), ≤ 4 heads, a 256-token vocabulary, ≤ 4 experts, dropout 0.

    Raises:
        Whatever the config class raises when its own validation rejects the shrunk values
        (reported by the coverage run as a CPU-side failure of the architecture).
    """
    default = config_class()
    kwargs = _overrides(default)
    for name in getattr(default, "sub_configs", None) or {}:
        sub = getattr(default, name, None)
        if sub is None or not hasattr(sub, "to_dict"):
            continue
        sub_kwargs = _overrides(sub)
        if "num_hidden_layers" in sub_kwargs and "layer_types" not in sub_kwargs and _known(sub, "layer_types"):
            sub_kwargs["layer_types"] = None  # a single-type list re-derives for the new depth
        kwargs[name] = _shrunk_sub_config(sub, sub_kwargs)
    kwargs.update(extra)
    if isinstance(extra.get("layer_types"), list) and "num_hidden_layers" not in extra:
        kwargs["num_hidden_layers"] = len(extra["layer_types"])
    try:
        return config_class(**kwargs)
    except TypeError:
        # Legacy configs whose __init__ does not take every attribute by name.
        return _apply(config_class(), kwargs)


def _shrunk_sub_config(sub, sub_kwargs: dict[str, Any]):
    """A sub-config rebuilt with ``sub_kwargs``: from its own values when they still validate,
    else from its class defaults (its per-layer tables may name layers the tiny depth lacks),
    else by setting the attributes on a copy."""
    merged = {k: v for k, v in {**sub.to_dict(), **sub_kwargs}.items() if k != "transformers_version"}
    for build in (lambda: type(sub)(**merged), lambda: type(sub)(**sub_kwargs)):
        try:
            return build()
        except Exception:  # noqa: BLE001 - try the next way
            continue
    return _apply(copy.deepcopy(sub), sub_kwargs)


def _apply(config, kwargs: dict[str, Any]):
    for key, value in kwargs.items():
        setattr(config, key, value)
    return config
