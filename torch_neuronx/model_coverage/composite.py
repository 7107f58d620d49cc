"""Tiny random-weight models of any transformers model class, composite ones included.

:func:`tiny_config` (the causal-LM builder, :mod:`.tiny`) shrinks one level of ``sub_configs``.
Vision-language, encoder-decoder and speech models nest deeper (a vision tower inside a
multimodal config, an audio tower inside a text config) and use size names a decoder never has
(``depth``, ``embed_dim``, ``d_ff``...). :func:`tiny_composite_model` therefore:

1. shrinks every nesting level with :mod:`.tiny`'s table plus :data:`NESTED_SHRINK`;
2. zeroes every random probability, floats and per-stage lists (:data:`RANDOM_KEYS`): the
   device's random stream differs from the CPU's by design, so a draw in the forward pass or in
   train mode would make the comparison meaningless;
3. moves every special token id (``*_token_id``, ``*_token_index``) that the released vocabulary
   placed above the tiny one into the top :data:`RESERVED` ids, distinct per id, at every level;
4. rescales multimodal rotary sections (``mrope_section``) to the tiny head size, and Gemma-3
   style pooled image tokens (``mm_tokens_per_image``) to the tiny patch grid;
5. applies :data:`EXTRA` (per-architecture settings the generic rules cannot infer).

No file is read or downloaded; weights come from ``torch.manual_seed(seed)``.
"""
from __future__ import annotations

import copy
import re
from typing import TYPE_CHECKING, Any

from . import tiny as _tiny

if TYPE_CHECKING:
    from transformers import PreTrainedConfig, PreTrainedModel

#: Sizes of vision / audio towers and encoder-decoder stacks the causal-LM table does not know.
NESTED_SHRINK: dict[str, int] = {
    "depth": 2, "embed_dim": 64, "num_heads": 4, "vision_layers": 2, "num_layers": 2, "num_decoder_layers": 2,
    "projection_dim": 64, "out_hidden_size": 64, "d_ff": 128, "d_kv": 16, "encoder_hidden_size": 64,
    "num_encoder_layers": 2, "decoder_hidden_size": 64, "decoder_num_hidden_layers": 2,
    "decoder_intermediate_size": 128, "decoder_num_attention_heads": 4, "text_hidden_size": 64,
    "vision_hidden_size": 64, "mm_hidden_size": 64, "qformer_hidden_size": 64,
    # convolutional audio tokenizers whose channels double per stage (VibeVoice: 32 → 2048 over 7 stages)
    "num_filters": 4,
    "num_global_layers": 1,  # Mllama's vision tower: 8 global layers after the local ones
    # Dia's decoder cross-attends the encoder's states: its cross-attention sizes mirror the encoder's
    "cross_hidden_size": 64, "cross_num_attention_heads": 4, "cross_num_key_value_heads": 4, "cross_head_dim": 16,
}

#: Config keys (suffixes) holding a probability of a random draw: zeroed, floats and lists.
RANDOM_KEYS = ("drop_path_rate", "drop_connect_rate", "layerdrop", "drop_path", "stochastic_depth_prob",
               "hidden_dropout", "attention_dropout", "dropout", "_pdrop", "dropout_prob", "dropout_rate",
               "router_jitter_noise")

#: Per-architecture settings (model type -> config keyword arguments) the generic rules cannot infer.
EXTRA: dict[str, dict[str, Any]] = {
    **{k: v for k, v in _tiny.EXTRA.items() if k != "reformer"},
    # the masked-LM / classification Reformer is bidirectional (``is_decoder`` False), local attention only
    "reformer": {"is_decoder": False, "attn_layers": ["local", "local"], "axial_pos_shape": [2, 4],
                 "axial_pos_embds_dim": [32, 32], "local_attn_chunk_length": 4, "num_buckets": 4},
    # 3 heads of the released Swin-style stages do not divide the tiny width
    "swin": {"embed_dim": 32, "depths": [1, 1], "num_heads": [2, 2], "window_size": 4, "image_size": 32},
    "swinv2": {"embed_dim": 32, "depths": [1, 1], "num_heads": [2, 2], "window_size": 4, "image_size": 32},
    "donut-swin": {"embed_dim": 32, "depths": [1, 1], "num_heads": [2, 2], "window_size": 4, "image_size": 32},
    "convnext": {"hidden_sizes": [16, 32], "depths": [1, 1], "num_stages": 2},
    "convnextv2": {"hidden_sizes": [16, 32], "depths": [1, 1], "num_stages": 2},
    "mobilebert": {"embedding_size": 64, "intra_bottleneck_size": 64, "true_hidden_size": 64},
    "squeezebert": {"embedding_size": 64},
    # released 600×600 input and 64 M parameters (timed out): a 64-pixel input, a quarter of the width and depth
    "efficientnet": {"image_size": 64, "width_coefficient": 0.25, "depth_coefficient": 0.25, "hidden_dim": 320},
    # latent array and its attention sizes are not named like any other model's
    # the thinker's modelling code reads vision_start_token_id, which its config class does not define
    "qwen2_5_omni_thinker": {"vision_start_token_id": 151652},
    "qwen3_omni_moe_thinker": {"vision_start_token_id": 151652},
    # the projector's window sizes and the deepstack map (vision layer -> LLM layer) have no defaults; the 4 spatial
    # offset groups target LLM layers 12-21 by default: the tiny model's 2 layers instead
    "granite4_vision": {"downsample_rate": "1/2", "deepstack_layer_map": [[-1, 0]],
                        "spatial_target_layers": [0, 1, 0, 1]},
    # its decoder layers read num_key_value_heads, which the config class does not define (released configs do)
    "moonshine_streaming": {"num_key_value_heads": 4},
    "perceiver": {"d_latents": 64, "num_latents": 16, "num_blocks": 1, "num_self_attends_per_block": 1, "d_model": 64,
                  "qk_channels": 64, "v_channels": 64, "image_size": 32, "num_cross_attention_heads": 1,
                  "num_self_attention_heads": 4},
}

#: The top ids of the tiny vocabulary kept for special tokens; prompts draw below them.
RESERVED = 32

_SPECIAL_ID = re.compile(r"(_token_id|_token_index|_token_ids)$")
#: Config classes whose modelling code applies Qwen-VL's default rotary sections when the config has none.
_MROPE_DEFAULT = frozenset({"PaddleOCRTextConfig", "PaddleOCRVLTextConfig"})


def _shrink_kwargs(cfg: Any) -> dict[str, Any]:
    out = _tiny.shrink_overrides(cfg)
    for key, value in cfg.to_dict().items():
        if not key.endswith(RANDOM_KEYS) or isinstance(value, bool):
            continue
        if isinstance(value, float) and value > 0:
            out[key] = 0.0
        elif isinstance(value, (list, tuple)) and value and all(isinstance(v, (int, float)) for v in value):
            out[key] = [0.0] * len(value)
    for key, value in NESTED_SHRINK.items():
        current = _tiny.get_field(cfg, key)
        if _tiny.has_field(cfg, key) and isinstance(current, int) and not isinstance(current, bool):
            out[key] = min(value, current)
    # Per-stage block counts of convolutional / hierarchical towers (ResNet-style ``depths``, VibeVoice's
    # acoustic tokenizer): one block per stage, the stages themselves (and their strides) kept.
    depths = _tiny.get_field(cfg, "depths")
    if (_tiny.has_field(cfg, "depths") and isinstance(depths, (list, tuple)) and depths
            and all(isinstance(d, int) and not isinstance(d, bool) for d in depths)):
        out["depths"] = [min(1, d) for d in depths]
    return out


def _parent_flags(cfg: Any) -> dict[str, bool]:
    """The boolean settings of a nested ``cfg`` that differ from its own class's defaults: what the parent
    config decided for it (an encoder-decoder's BERT decoder: ``is_decoder`` and ``add_cross_attention``
    True), which rebuilding the sub-config from its class defaults would lose."""
    try:
        defaults = type(cfg)().to_dict()
    except Exception:  # noqa: BLE001 - a class without usable defaults: nothing to compare with
        return {}
    return {k: v for k, v in cfg.to_dict().items() if isinstance(v, bool) and k in defaults and defaults[k] != v}


def _tiny_instance(cfg: Any, extra: dict[str, Any], nested: bool = False) -> Any:
    kwargs = {**(_parent_flags(cfg) if nested else {}), **_shrink_kwargs(cfg)}
    for name, sub_class in (getattr(cfg, "sub_configs", None) or {}).items():
        sub = getattr(cfg, name, None)
        if sub is None and name == "vision_config":  # a vision tower left out by default (Gemma 4)
            try:
                sub = sub_class()
            except Exception:  # noqa: BLE001 - an AutoConfig slot: nothing to build from
                sub = None
        if sub is not None and hasattr(sub, "to_dict"):
            kwargs[name] = _tiny_instance(sub, {}, nested=True)
    kwargs.update(extra)
    cls = type(cfg)
    merged = {k: v for k, v in {**cfg.to_dict(), **kwargs}.items() if k != "transformers_version"}
    for build in (lambda: cls(**kwargs), lambda: cls(**merged)):
        try:
            return build()
        except Exception:  # noqa: BLE001 - the next way
            continue
    return _tiny.apply_overrides(copy.deepcopy(cfg), kwargs)


def tiny_nested_config(config_class: type[PreTrainedConfig], **extra: Any) -> PreTrainedConfig:
    """A shrunk instance of ``config_class``, every nested sub-config shrunk too (module docstring,
    steps 1-2); ``extra`` keyword arguments are applied last at the top level.

    Raises:
        Whatever the config class raises when its own validation rejects the shrunk values.
    """
    return _tiny_instance(config_class(), dict(extra))


def vocab_size(config: Any) -> int:
    """The text vocabulary of ``config`` (its own ``vocab_size`` or its ``text_config``'s), 256 if none."""
    for cfg in (config, _tiny.get_field(config, "text_config"), _tiny.get_field(config, "decoder")):
        v = _tiny.get_field(cfg, "vocab_size") if cfg is not None else None
        if isinstance(v, int) and v > 0:
            return v
    return 256


def remap_special_ids(config: Any) -> None:
    """Moves every special token id ≥ ``vocab − RESERVED`` into the reserved top ids of the tiny
    vocabulary (the same old id always gets the same new id), at every nesting level, in place."""
    vocab = vocab_size(config)
    table: dict[int, int] = {}

    def new_id(old: int) -> int:
        if old not in table:
            table[old] = min(vocab - 1, vocab - RESERVED + len(table))
        return table[old]

    def walk(cfg: Any) -> None:
        for key, value in list(cfg.__dict__.items()):
            if hasattr(value, "to_dict") and hasattr(value, "__dict__"):
                walk(value)
            elif _SPECIAL_ID.search(key) and not isinstance(value, bool):
                if isinstance(value, int) and value >= max(3, vocab - RESERVED):
                    setattr(cfg, key, new_id(value))
                elif isinstance(value, list) and value and all(isinstance(v, int) for v in value):
                    setattr(cfg, key, [new_id(v) if v >= max(3, vocab - RESERVED) else v for v in value])
    walk(config)


#: Placeholder ids a multimodal config may leave unset (``None``: "the processor's choice"), while its
#: modelling code compares ``input_ids`` with them.
PLACEHOLDER_IDS = ("image_token_id", "audio_token_id", "video_token_id")


def fill_placeholder_ids(config: Any) -> None:
    """Gives each :data:`PLACEHOLDER_IDS` field of ``config`` (top level) that is ``None`` a free id
    among the reserved top ids of the tiny vocabulary, in place."""
    vocab = vocab_size(config)
    used: set[int] = set()

    def walk(cfg: Any) -> None:
        for key, value in cfg.__dict__.items():
            if hasattr(value, "to_dict") and hasattr(value, "__dict__"):
                walk(value)
            elif _SPECIAL_ID.search(key) and isinstance(value, int) and not isinstance(value, bool):
                used.add(value)
    walk(config)
    free = (i for i in range(vocab - 1, vocab - RESERVED, -1) if i not in used)
    for key in PLACEHOLDER_IDS:
        if _tiny.has_field(config, key) and getattr(config, key, 0) is None:
            setattr(config, key, next(free))


def _scaled(sections: list[int], total: int) -> list[int]:
    s = sum(sections)
    out = [max(1, round(x * total / s)) for x in sections]
    out[-1] += total - sum(out)
    return out


def fix_rope_sections(config: Any) -> None:
    """Rescales multimodal rotary sections (``mrope_section``) to sum to the tiny rotary half-size,
    at every nesting level, in place; sets Qwen-VL's implicit default ``[16, 24, 24]`` first where the
    modelling code would apply it."""
    def walk(cfg: Any) -> None:
        for value in list(cfg.__dict__.values()):
            if hasattr(value, "to_dict") and hasattr(value, "__dict__"):
                walk(value)
        hd = _tiny.get_field(cfg, "head_dim")
        if not isinstance(hd, int):
            h, n = _tiny.get_field(cfg, "hidden_size"), _tiny.get_field(cfg, "num_attention_heads")
            hd = h // n if isinstance(h, int) and isinstance(n, int) and n else None
        rp = getattr(cfg, "rope_parameters", None)
        factor = (rp.get("partial_rotary_factor") if isinstance(rp, dict) else None) or _tiny.get_field(
            cfg, "partial_rotary_factor")
        if isinstance(factor, float) and hd and factor < 1:
            hd = int(hd * factor)
        for attr in ("rope_parameters", "rope_scaling"):
            rp = getattr(cfg, attr, None)
            if not (isinstance(rp, dict) and hd):
                continue
            implicit = ("mrope_section" in (getattr(cfg, "ignore_keys_at_rope_validation", None) or ())
                        or type(cfg).__name__ in _MROPE_DEFAULT)
            if implicit and "mrope_section" not in rp:
                rp["mrope_section"] = [16, 24, 24]
            for key in ("mrope_section", "mrope_sections"):
                if isinstance(rp.get(key), list) and sum(rp[key]) != hd // 2:
                    rp[key] = _scaled(rp[key], hd // 2)
    walk(config)


#: Config keys holding indices into a vision tower's hidden states (one per layer, plus the embeddings).
LAYER_INDEX_KEYS = ("vision_feature_layer", "vision_feature_layers", "intermediate_layers_indices",
                    "global_attn_index", "global_attn_indexes")


def _depth(cfg: Any) -> int | None:
    for key in ("num_hidden_layers", "depth", "num_layers"):
        value = _tiny.get_field(cfg, key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def fix_layer_indices(config: Any) -> None:
    """Clamps every :data:`LAYER_INDEX_KEYS` index into the tiny tower (``-(depth + 1) … depth − 1``:
    ``hidden_states`` has depth + 1 entries, layer indices count from 0), keeping the list lengths
    (projectors are sized by them), in place.
    A top-level key indexes the ``vision_config`` tower."""
    def clamp(i: int, depth: int) -> int:
        return min(i, depth - 1) if i >= 0 else max(i, -(depth + 1))

    def walk(cfg: Any, tower: Any) -> None:
        for value in list(cfg.__dict__.values()):
            if hasattr(value, "to_dict") and hasattr(value, "__dict__"):
                walk(value, value)
        depth = _depth(tower) if tower is not None else None
        if depth is None:
            return
        for key in LAYER_INDEX_KEYS:
            value = cfg.__dict__.get(key)
            if isinstance(value, int) and not isinstance(value, bool):
                setattr(cfg, key, clamp(value, depth))
            elif isinstance(value, (list, tuple)) and value and all(isinstance(v, int) for v in value):
                setattr(cfg, key, type(value)(clamp(v, depth) for v in value))
        layers, hidden = cfg.__dict__.get("intermediate_layers_indices"), _tiny.get_field(cfg, "hidden_size")
        if isinstance(layers, list) and isinstance(hidden, int) and "vision_output_dim" in cfg.__dict__:
            cfg.vision_output_dim = hidden * (len(layers) + 1)  # Mllama: last state + each intermediate one
    walk(config, _tiny.get_field(config, "vision_config"))


def fix_grid_pinpoints(config: Any) -> None:
    """LLaVA-NeXT style ``image_grid_pinpoints`` (any-resolution tilings, multiples of the released
    vision tower's input size) rescaled to multiples of the tiny tower's ``image_size``, in place."""
    pins, vc = _tiny.get_field(config, "image_grid_pinpoints"), _tiny.get_field(config, "vision_config")
    size = _tiny.get_field(vc, "image_size") if vc is not None else None
    if not (isinstance(pins, list) and pins and isinstance(size, int)
            and all(isinstance(p, (list, tuple)) and len(p) == 2 for p in pins)):
        return
    base = min(min(p) for p in pins)
    config.image_grid_pinpoints = [[a * size // base, b * size // base] for a, b in pins]


def fix_pixel_shuffle(config: Any) -> None:
    """Idefics3-style pixel shuffle folds ``scale_factor`` × ``scale_factor`` patches into one token: the
    tiny tower's patches per side must be a multiple of it. Rounds ``vision_config.image_size`` up to the
    next such size, in place."""
    scale, vc = _tiny.get_field(config, "scale_factor"), _tiny.get_field(config, "vision_config")
    size: Any = _tiny.get_field(vc, "image_size") if vc is not None else None
    patch: Any = _tiny.get_field(vc, "patch_size") if vc is not None else None
    if not all(isinstance(x, int) and not isinstance(x, bool) and x > 0 for x in (scale, size, patch)):
        return
    side = size // patch
    if side % scale:
        vc.image_size = -(-side // scale) * scale * patch


def fix_window_downsample(config: Any) -> None:
    """Granite-4-Vision's window Q-Former projector (``downsample_rate`` "q/k": windows of k × k patches
    pooled to q × q queries) needs the tiny tower's patches per side to be a multiple of k: rounds
    ``vision_config.image_size`` up to the next such size, in place."""
    rate, vc = _tiny.get_field(config, "downsample_rate"), _tiny.get_field(config, "vision_config")
    if not (isinstance(rate, str) and re.fullmatch(r"\d+/\d+", rate) and vc is not None):
        return
    window = int(rate.split("/")[1])
    size, patch = _tiny.get_field(vc, "image_size"), _tiny.get_field(vc, "patch_size")
    if isinstance(size, int) and isinstance(patch, int) and patch and window and (size // patch) % window:
        vc.image_size = -(-(size // patch) // window) * window * patch


def fix_mlp_layer_types(config: Any) -> None:
    """A config whose ``mlp_layer_types`` ("dense" / "sparse" per decoder layer) stays ``None`` after
    construction while its modelling code indexes it (DeepSeek-OCR-2's text model; released checkpoints
    list it): a dense first layer, sparse (MoE) layers after it, at every nesting level, in place."""
    for value in list(config.__dict__.values()):
        if hasattr(value, "to_dict") and hasattr(value, "__dict__"):
            fix_mlp_layer_types(value)
    layers = _tiny.get_field(config, "num_hidden_layers")
    if "mlp_layer_types" in config.__dict__ and config.mlp_layer_types is None and isinstance(layers, int):
        config.mlp_layer_types = ["dense"] + ["sparse"] * (layers - 1)


def fix_sam_neck(config: Any) -> None:
    """DeepSeek-OCR-2's SAM neck downsamples into the vision encoder: the last of its
    ``downsample_channels`` (released ``[512, 896]``) is the encoder's ``hidden_size``; set to
    ``[hidden // 2, hidden]`` of the tiny encoder, at every nesting level, in place."""
    for value in list(config.__dict__.values()):
        if hasattr(value, "to_dict") and hasattr(value, "__dict__"):
            fix_sam_neck(value)
    sam, encoder = _tiny.get_field(config, "sam_config"), _tiny.get_field(config, "encoder_config")
    hidden = _tiny.get_field(encoder, "hidden_size") if encoder is not None else None
    if sam is not None and isinstance(sam.__dict__.get("downsample_channels"), list) and isinstance(hidden, int):
        sam.downsample_channels = [max(1, hidden // 2), hidden]


def fix_patch_to_query(config: Any) -> None:
    """Aria's projector maps a patch count to a query count (``projector_patch_to_query_dict``, keyed by the
    released tower's counts): keyed by the patch counts of the tiny tower at its own size and at the two
    sizes Aria's image processor produces (490 and 980 pixels), 16 queries each, in place."""
    table, vc = _tiny.get_field(config, "projector_patch_to_query_dict"), _tiny.get_field(config, "vision_config")
    size = _tiny.get_field(vc, "image_size") if vc is not None else None
    patch = _tiny.get_field(vc, "patch_size") if vc is not None else None
    if isinstance(table, dict) and isinstance(size, int) and isinstance(patch, int) and patch:
        config.projector_patch_to_query_dict = {(side // patch) ** 2: 16 for side in (size, 490, 980)}


def fix_partial_rope_head_dim(config: Any) -> None:
    """Multi-head latent attention with a partial rotary factor (Mistral 4: rotary dims = head_dim × factor
    = qk_rope_head_dim): ``head_dim`` set back to ``qk_rope_head_dim / factor`` after the shrinking set it to
    the rotary size, at every nesting level, in place."""
    for value in list(config.__dict__.values()):
        if hasattr(value, "to_dict") and hasattr(value, "__dict__"):
            fix_partial_rope_head_dim(value)
    rope, rp = _tiny.get_field(config, "qk_rope_head_dim"), getattr(config, "rope_parameters", None)
    factor = rp.get("partial_rotary_factor") if isinstance(rp, dict) else None
    if isinstance(rope, int) and isinstance(factor, float) and 0 < factor < 1 and "head_dim" in config.__dict__:
        config.head_dim = int(rope / factor)


def _chameleon_name(code: int) -> str:
    return "IMGIMG" + "".join(chr(ord("A") + int(d)) for d in str(code)) + "Z"


#: Early-fusion models whose image tokens are VQ codes named in a ``vocabulary_map`` (absent from the default
#: config): the VQ codebook field and each code's token name.
VQ_VOCABULARY: dict[str, tuple[str, Any]] = {
    "ChameleonConfig": ("num_embeddings", _chameleon_name),
    "Emu3Config": ("codebook_size", lambda code: f"<|visual token {code:06d}|>"),
}
#: Codebook size of the tiny VQ models; their codes take the ids from 64 up.
VQ_CODES = 64


def fill_vq_vocabulary(config: Any) -> None:
    """For :data:`VQ_VOCABULARY` configs without a ``vocabulary_map``: a tiny VQ model and codebook
    (:data:`VQ_CODES` codes, token ids 64…127), ``<image>`` and Emu3's end-of-line token at free reserved
    ids, in place."""
    rule = VQ_VOCABULARY.get(type(config).__name__)
    vq = _tiny.get_field(config, "vq_config")
    if rule is None or vq is None or getattr(config, "vocabulary_map", None):
        return
    field, name = rule
    setattr(vq, field, VQ_CODES)
    vq.base_channels, vq.num_res_blocks = 32, 1  # 32: the VQ blocks' group norms have 32 groups
    vq.latent_channels = min(vq.latent_channels, 64)
    if "hidden_size" in vq.__dict__:  # Emu3's VQ attention runs on the last stage's channels
        vq.hidden_size = vq.base_channels * vq.channel_multiplier[-1]
    vocab = vocab_size(config)
    table = {name(code): 64 + code for code in range(VQ_CODES)}
    table["<image>"] = vocab - 1
    table["<|extra_200|>"] = vocab - 2
    config.vocabulary_map = table
    config.image_token_id = vocab - 1


def fix_depthwise_groups(config: Any) -> None:
    """Mimi-style codecs upsample with a depthwise convolution (``upsample_groups`` = the released
    ``hidden_size``): set to the tiny ``hidden_size``, at every nesting level, in place."""
    for value in list(config.__dict__.values()):
        if hasattr(value, "to_dict") and hasattr(value, "__dict__"):
            fix_depthwise_groups(value)
    hidden = _tiny.get_field(config, "hidden_size")
    if isinstance(config.__dict__.get("upsample_groups"), int) and isinstance(hidden, int):
        config.upsample_groups = hidden


def fix_audio_output_dim(config: Any) -> None:
    """An audio tower whose ``output_dim`` is the released text width (Qwen3-ASR, Qwen-Omni style
    projections into the language model): set to the tiny text model's ``hidden_size``, in place."""
    audio, text = _tiny.get_field(config, "audio_config"), _tiny.get_field(config, "text_config")
    hidden = _tiny.get_field(text, "hidden_size") if text is not None else None
    if audio is not None and isinstance(hidden, int) and isinstance(audio.__dict__.get("output_dim"), int):
        audio.output_dim = hidden


def fix_pooled_image_tokens(config: Any) -> None:
    """Gemma-3 style ``mm_tokens_per_image`` must be (patches per side / k)² for an integer k: set it
    from the tiny vision tower, in place."""
    for value in list(config.__dict__.values()):  # nested (T5Gemma 2: inside the encoder config)
        if hasattr(value, "to_dict") and hasattr(value, "__dict__"):
            fix_pooled_image_tokens(value)
    vc, mm = _tiny.get_field(config, "vision_config"), _tiny.get_field(config, "mm_tokens_per_image")
    if vc is None or not isinstance(mm, int):
        return
    size, patch = _tiny.get_field(vc, "image_size"), _tiny.get_field(vc, "patch_size")
    if isinstance(size, int) and isinstance(patch, int) and patch:
        side = size // patch
        k = next((d for d in range(2, side + 1) if side % d == 0), 1)
        config.mm_tokens_per_image = (side // k) ** 2


def tiny_composite_model(model_type: str, class_name: str, seed: int = 0) -> PreTrainedModel:
    """A tiny random-weight ``class_name`` (a transformers model class) in float32 on the CPU, in eval
    mode, built from the config class the model class declares (module docstring).

    Args:
        model_type: the transformers ``model_type`` (selects :data:`EXTRA`).
        class_name: a model class exported by transformers, e.g. ``"T5ForConditionalGeneration"``.
        seed: seeds the weights.

    Raises:
        AttributeError: transformers exports no ``class_name``.
        Anything the config or model constructor raises for the shrunk sizes.
    """
    import torch
    import transformers
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    model_class = getattr(transformers, class_name)
    config_class = getattr(model_class, "config_class", None) or CONFIG_MAPPING[model_type]
    config = tiny_nested_config(config_class, **EXTRA.get(model_type, {}))
    remap_special_ids(config)
    fill_placeholder_ids(config)
    fill_vq_vocabulary(config)
    fix_layer_indices(config)
    fix_window_downsample(config)
    fix_mlp_layer_types(config)
    fix_sam_neck(config)
    fix_grid_pinpoints(config)
    fix_pixel_shuffle(config)
    fix_patch_to_query(config)
    fix_partial_rope_head_dim(config)
    fix_audio_output_dim(config)
    fix_depthwise_groups(config)
    fix_rope_sections(config)
    fix_pooled_image_tokens(config)
    torch.manual_seed(seed)
    model = model_class(config).eval()
    if model_type == "xmod":  # X-MOD needs an adapter language before any forward
        model.set_default_language(config.languages[0])
    return model
