"""Tiny specs for Diffusers model classes without a hand-written one, derived from the class itself.

:func:`generic_init` reads the class's ``__init__`` defaults (the released sizes) and scales them down
by the parameter's name: depths and block counts to 1, heads to 2, head sizes to ≤ 32 (rotary axis
lists rescaled to the new head size, each axis even), model widths to 64, feed-forward widths to 128,
text/conditioning widths to 32, per-stage channel lists to start at 16, group-norm groups to ≤ 8;
:func:`fewer_stages` then keeps one stage of each kind (a variant tried before the released stage count).
:data:`MAX_PARAMS` bounds the result (counted on the meta device first).
Everything else (input channels, patch sizes, flags, vocabularies) keeps the class's default.

:func:`generic_inputs` builds the forward's required inputs from their names (``sample``,
``hidden_states``, ``timestep``, ``encoder_hidden_states``, position ids, masks...; ``sample_posterior=False``
 so a VAE returns its posterior mean, not a random draw). The layout of the
main input (an image ``[1, C, H, W]``, a packed token sequence ``[1, S, C]``, a video
``[1, C, F, H, W]``, audio ``[1, C, T]``) is not written anywhere a program can read, so the
candidates of :data:`MAIN_SHAPES` are tried in order on the CPU model and the first that runs is
kept; a class none of them fits fails on the CPU with the first candidate's error (listed apart).
"""
from __future__ import annotations

import inspect
import re
from collections.abc import Iterator
from typing import Any

#: Parameter-name patterns and what they scale to (first match wins).
_LAYERS = re.compile(r"(^|_)(layers|depth|depths|blocks|nlayers|n_layers|num_res_blocks|layers_per_block"
                     r"|layers_per_down_block|layers_per_up_block)$|^num_.*(layers|blocks)$|_depth$")
_KV_HEADS = re.compile(r"(kv_heads|key_value_heads|key_value_attention_heads)$")
_HEADS = re.compile(r"(^|_)(heads|nheads|n_heads)$|^num_.*heads$")
_HEAD_DIM = re.compile(r"(^|_)(head_dim|attention_head_dim|dim_head|dim_heads|head_dims)$")
_WIDTH = re.compile(r"^(hidden_size|dim|model_dim|d_model|embed_dim|inner_dim|dit_dim|token_dim|transformer_dim"
                    r"|decoder_hidden_size|encoder_hidden_size|attention_dim|time_embedding_dim)$")
_FFN = re.compile(r"(intermediate_size|ffn_dim|ff_dim|ffn_hidden_size|ff_inner_dim|mlp_dim|ff_hidden_dim"
                  r"|approximator_hidden_dim|time_embed_hidden_dim|face_encoder_hidden_dim)$")
_TEXT = re.compile(r"^(joint_attention_dim|text_dim|text_embed_dim|cross_attention_dim|caption_channels"
                   r"|pooled_projection_dim|caption_projection_dim|context_in_dim|cap_feat_dim|text_in_dim"
                   r"|cond_token_dim|encoder_hid_dim|text_hidden_dim|in_text_dim|in_text_dim2|dit_text_dim"
                   r"|context_dim|text_emb_dim|condition_dim|global_cond_dim|conditioning_dim"
                   r"|cross_attention_dim_t5|cross_attention_input_dim|global_states_input_dim)$")
_CHANNEL_LIST = re.compile(r"(block_out_channels|_channels_list|hidden_channels_list|stage_channels)$")
#: Per-stage channel multipliers of classes without a channel list (VidTok's ``ch_mult``): their length is
#: the number of stages (read by :func:`fewer_stages` only; their values are kept).
_STAGE_MULT = re.compile(r"^(ch_mult|dim_mult|channel_mult|channels_mult)$")
_BASE_CHANNELS = re.compile(r"^(base_dim|decoder_base_dim|ch|channels|base_channels|hidden_channels|encoder_dim"
                            r"|decoder_dim|encoder_channels|num_filters|decoder_channels|encoder_hidden_size)$")
_GROUPS = re.compile(r"(norm_num_groups|groups|num_groups)$")
_ROPE_AXES = re.compile(r"(axes_dims_rope|axes_dim_rope|axes_dim|axes_dims|rope_axes_dim|rope_dim_list)$")

HEAD_DIM, WIDTH, FFN, TEXT, HEADS = 32, 64, 128, 32, 2
#: Sizes a class builds its positional embeddings for (video transformers: CogVideoX's 60 x 90 latents
#: of 49 frames); scaled only in :func:`generic_specs`' second variant, since VAEs read them as tiling sizes.
SAMPLE_SIZES: dict[str, int] = {"sample_height": 16, "sample_width": 16, "sample_frames": 1}
#: ``__init__`` parameters whose default is ``None`` but that the class cannot be built without (its
#: pipeline always passes them): the value the tiny model gets.
NONE_DEFAULTS: dict[str, Any] = {"in_channels": 16, "patch_size": 2, "caption_channels": TEXT}
#: Largest generic tiny model (parameters): a class whose sizes are not all reachable by name stays big.
MAX_PARAMS = 12_000_000

#: Main-input layouts tried in order (C: the class's input channels): image, packed tokens, video
#: (1 and 5 frames: causal video VAEs take 1 + 4k), audio, larger images for deep down-sampling.
MAIN_SHAPES: tuple[tuple[str, tuple[int, ...]], ...] = (
    ("image", (16, 16)), ("tokens", (16,)), ("video", (1, 16, 16)), ("video", (5, 16, 16)),
    ("video", (2, 16, 16)), ("image", (64, 64)), ("audio", (4096,)), ("video", (5, 64, 64)),
)


def _int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _int_list(v: Any) -> bool:
    return isinstance(v, (list, tuple)) and bool(v) and all(_int(x) for x in v)


def _scaled_axes(axes: list[int], head_dim: int) -> list[int]:
    out = [max(2, 2 * round(a * head_dim / sum(axes) / 2)) for a in axes]
    out[-1] += head_dim - sum(out)
    return out


def generic_init(cls: type, channels: int = 16, small_samples: bool = False) -> dict[str, Any]:
    """Scaled-down ``__init__`` keyword arguments for a Diffusers model class (module docstring);
    ``channels``: the first width of per-stage channel lists and the base channel count;
    ``small_samples``: also the latent sizes positional embeddings are built for (``sample_height``,
    ``sample_width`` to 16, ``sample_frames`` to 1; :data:`SAMPLE_SIZES`).

    Raises:
        TypeError: a required ``__init__`` parameter has no default (nothing to scale from).
    """
    init_fn: Any = cls.__init__  # type: ignore[misc]  # the class's own signature is what is read
    params = {k: p for k, p in inspect.signature(init_fn).parameters.items()
              if k != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}
    missing = [k for k, p in params.items() if p.default is inspect.Parameter.empty]
    if missing:
        raise TypeError(f"{cls.__name__}.__init__ has required parameters without defaults: {missing}")
    defaults = {k: p.default for k, p in params.items()}
    out: dict[str, Any] = {}
    old_hd = next((v for k, v in defaults.items() if _HEAD_DIM.search(k) and _int(v)), None)
    new_hd = min(old_hd, HEAD_DIM) if old_hd else HEAD_DIM
    old_heads = next((v for k, v in defaults.items() if _HEADS.search(k) and not _KV_HEADS.search(k) and _int(v)),
                     None)
    # A class without a head-size parameter derives it as width / heads (JoyImage, Lumina 2): its rotary
    # axes sum to that, and scale to the tiny width / heads.
    old_width = next((int(v) for k, v in defaults.items() if _WIDTH.search(k) and _int(v)), 0)
    heads = int(old_heads or 0)
    derived = old_width // heads if not old_hd and heads and old_width % heads == 0 else 0
    new_derived = min(old_width, WIDTH) // min(heads, HEADS) if derived else 0
    for key, v in defaults.items():
        if _ROPE_AXES.search(key) and _int_list(v):
            if old_hd and sum(v) == old_hd:
                out[key] = type(v)(_scaled_axes(list(v), new_hd))
            elif derived and sum(v) == derived:
                out[key] = type(v)(_scaled_axes(list(v), new_derived))
            else:
                out[key] = v
        elif _HEAD_DIM.search(key) and _int(v):
            out[key] = min(v, HEAD_DIM)
        elif _KV_HEADS.search(key) and _int(v):
            out[key] = min(v, HEADS)
        elif _HEADS.search(key) and _int(v):
            out[key] = min(v, HEADS)
        elif _HEADS.search(key) and _int_list(v):
            out[key] = type(v)(min(x, HEADS) for x in v)
        elif _LAYERS.search(key) and _int(v):
            out[key] = min(v, 1)
        elif _LAYERS.search(key) and _int_list(v):
            out[key] = type(v)(min(x, 1) for x in v)
        elif _WIDTH.search(key) and _int(v):
            same = old_hd and old_heads and v == old_hd * old_heads
            out[key] = min(v, new_hd * HEADS if same else WIDTH)
        elif _FFN.search(key) and _int(v):
            out[key] = min(v, FFN)
        elif _TEXT.search(key) and _int(v):
            # A conditioning width equal to the released inner width (heads x head size) is tied to it.
            inner = old_hd and old_heads and v == old_hd * old_heads
            out[key] = new_hd * HEADS if inner else min(v, TEXT)
        elif _CHANNEL_LIST.search(key) and _int_list(v):
            factor = max(1, v[0] // channels)
            out[key] = type(v)(max(channels, x // factor) for x in v)
        elif _BASE_CHANNELS.search(key) and _int(v):
            out[key] = min(v, channels)
        elif _GROUPS.search(key) and _int(v) and v > 8:
            out[key] = 8
        elif key.endswith("dropout") or key.endswith("dropout_prob"):
            if isinstance(v, float):
                out[key] = 0.0
        elif v is None and key in NONE_DEFAULTS:
            out[key] = NONE_DEFAULTS[key]
        elif small_samples and key in SAMPLE_SIZES and _int(v):
            out[key] = min(v, SAMPLE_SIZES[key])
    return out


def _text_dims(init: dict[str, Any], model: Any) -> list[int]:
    """Conditioning widths to try for ``encoder_hidden_states``: the first conditioning size of
    ``init`` (as the built model's config has it), then the other ones, then :data:`WIDTH`."""
    config = getattr(model, "config", {})
    out: list[int] = []
    for key, value in init.items():
        if _TEXT.search(key) and key not in ("pooled_projection_dim", "global_cond_dim") and _int(value):
            width = int(config.get(key, value)) if hasattr(config, "get") else value
            if width not in out:
                out.append(width)
    return (out or [TEXT]) + ([WIDTH] if WIDTH not in out else [])


def _in_channels(model: Any) -> int:
    config = getattr(model, "config", {})
    for key in ("in_channels", "in_dim", "in_visual_dim", "io_channels", "input_channels", "audio_channels",
                "num_channels", "channels", "latent_channels", "num_mels", "mel_bins"):
        value = config.get(key) if hasattr(config, "get") else None
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return 3


def _patch(model: Any) -> int:
    config = getattr(model, "config", {})
    value: Any = config.get("patch_size") if hasattr(config, "get") else None
    if isinstance(value, (list, tuple)) and value:
        value = value[-1]
    return int(value) if _int(value) and value > 0 else 1


def _main(kind: str, dims: tuple[int, ...], channels: int, g: Any) -> Any:
    import torch

    if kind == "tokens":
        return torch.randn(1, dims[0], channels, generator=g)
    if kind == "video_fc":  # frames before channels (CogVideoX-style)
        return torch.randn(1, dims[0], channels, *dims[1:], generator=g)
    return torch.randn(1, channels, *dims, generator=g)


#: The first positional input names of the main tensor.
MAIN_NAMES = ("sample", "hidden_states", "x", "z", "latents", "mel", "noisy_images")
#: Timestep-like inputs (a ``[1]`` float tensor); besides these, any name containing ``timestep``.
TIMESTEP_NAMES = ("timestep", "timesteps", "t", "timestep_ratio", "decoder_noise_time")
#: Text-embedding inputs ``[1, 8, text width]``.
TEXT_NAMES = ("encoder_hidden_states", "context", "cap_feats", "encoder_hidden_states_t5", "text_bth")
#: Inputs the generic builder passes only on its second try, though the forward does not require them
#: (sizes a packed-token forward cannot infer, masks some classes index without a ``None`` check, the
#: guidance scale of guidance-distilled models).
OPTIONAL_EXTRAS = ("num_frames", "height", "width", "encoder_attention_mask", "guidance", "global_hidden_states")


def input_candidates(model: Any, init: dict[str, Any], seed: int = 0) -> list[dict[str, Any]]:
    """Forward inputs of ``model`` to try in order (module docstring): every :data:`MAIN_SHAPES`
    layout with the first conditioning width, then with the other widths (:func:`_text_dims`), then
    all of these again with the :data:`OPTIONAL_EXTRAS` the forward takes.

    Name rules (required inputs unless said): the main tensor (:data:`MAIN_NAMES`); any ``*timestep*``
    → ``[1]`` float; text embeddings (:data:`TEXT_NAMES`, ``encoder_hidden_states`` also when
    optional) ``[1, 8, width]`` and their masks ``[1, 8]`` ones; ``pooled_projections`` ``[1, P]``
    (P the class's pooled or global width, else the text width) and Stable Audio's
    ``global_hidden_states`` ``[1, 1, P]``; ``img_ids`` / ``txt_ids`` rotary coordinates;
    ``original_size`` / ``target_size`` ``[1, 2]`` pixels and ``crop_coords`` zeros (SDXL-style
    micro-conditioning); ``fps``; any ``*latents`` (conditioning latents) shaped like the main tensor;
    ``img_shapes`` ``[(frames, H / patch, W / patch)]``; ``text_lens`` / ``txt_seq_lens`` ``[8]``.

    Raises:
        TypeError: a required forward parameter whose name has no generic input.
    """

    params = {k: p for k, p in inspect.signature(model.forward).parameters.items()
              if k != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}
    required = [k for k, p in params.items() if p.default is inspect.Parameter.empty]
    channels = _in_channels(model)
    patch = _patch(model)
    pooled = next((v for k, v in init.items() if k in ("pooled_projection_dim", "global_states_input_dim")
                   and _int(v)), None)
    rope = next((v for k, v in init.items() if _ROPE_AXES.search(k) and _int_list(v)), None)
    extras = [k for k in OPTIONAL_EXTRAS if k in params and k not in required and params[k].default is None]
    layouts = MAIN_SHAPES + (("video_fc", (1, 16, 16)), ("video_fc", (2, 16, 16)))
    out = []
    for extended in (False, True) if extras else (False,):
        for text in _text_dims(init, model):
            for kind, dims in layouts:
                out.append(_inputs(params, required, kind, dims, channels, text, patch, pooled, rope,
                                   extras if extended else [], type(model).__name__, seed))
    return out


def _inputs(params: dict[str, Any], required: list[str], kind: str, dims: tuple[int, ...], channels: int,
            text: int, patch: int, pooled: int | None, rope: list[int] | None, extras: list[str],
            model_name: str, seed: int) -> dict[str, Any]:
    import torch

    g = torch.Generator().manual_seed(seed)
    seq = dims[0] if kind == "tokens" else 16
    frames = dims[0] if kind in ("video", "video_fc") else 1
    height, width = (4, 4) if kind == "tokens" else dims[-2:] if kind != "audio" else (1, 1)
    d: dict[str, Any] = {}
    for name in params:
        if name in MAIN_NAMES and (name in required or not d):
            if not any(m in d for m in MAIN_NAMES):
                d[name] = _main(kind, dims, channels, g)
        elif name in TIMESTEP_NAMES or "timestep" in name and name in required:
            d[name] = torch.full((1,), 0.5 if name in ("timestep_ratio", "decoder_noise_time") else 500.0)
        elif name == "guidance" and (name in required or name in extras):  # guidance-distilled (HunyuanVideo)
            d[name] = torch.full((1,), 3.5)
        elif name in TEXT_NAMES:
            if name in required or name == "encoder_hidden_states":
                d[name] = torch.randn(1, 8, text, generator=g)
        elif name == "pooled_projections" and (pooled or name in required):
            d[name] = torch.randn(1, pooled or text, generator=g)
        elif name == "global_hidden_states" and (name in required or name in extras):  # Stable Audio
            d[name] = torch.randn(1, 1, pooled or text, generator=g)
        elif name in ("encoder_attention_mask", "encoder_hidden_states_mask") and (name in required
                                                                                  or name in extras):
            d[name] = torch.ones(1, 8, dtype=torch.long)
        elif name == "img_ids" and rope:
            d[name] = torch.arange(seq * len(rope)).reshape(seq, len(rope)) % 7
        elif name == "txt_ids" and rope:
            d[name] = torch.arange(8 * len(rope)).reshape(8, len(rope)) % 7
        elif name in ("original_size", "target_size") and name in required:
            d[name] = torch.tensor([[8.0 * height, 8.0 * width]])
        elif name == "crop_coords" and name in required:
            d[name] = torch.zeros(1, 2)
        elif name == "fps" and name in required:
            d[name] = torch.tensor([8])
        elif name.endswith("latents") and name in required and any(m in d for m in MAIN_NAMES):
            d[name] = torch.randn(next(d[m] for m in MAIN_NAMES if m in d).shape, generator=g)
        elif name == "img_shapes" and name in required:
            d[name] = [(1, 4, 4)] if kind == "tokens" else [(frames, height // patch, width // patch)]
        elif name in ("text_lens", "txt_seq_lens") and name in required:
            d[name] = torch.tensor([8]) if name == "text_lens" else [8]
        elif name in extras:
            d[name] = {"num_frames": frames, "height": height, "width": width}[name]
        elif name == "sample_posterior":
            # The posterior's mean, not a draw: a draw differs between two CPU runs and
            # between generators (AutoencoderVidTok samples by default).
            d[name] = False
        elif name == "return_dict":
            continue
        elif name in required:
            raise TypeError(f"no generic input for the required forward parameter {name!r} of {model_name}")
    return d


def generic_inputs(model: Any, init: dict[str, Any], seed: int = 0) -> dict[str, Any]:
    """The first of :func:`input_candidates` the CPU ``model`` runs (no grad).

    Raises:
        TypeError: see :func:`input_candidates`; the first candidate's error when none runs.
    """
    import torch

    first: Exception | None = None
    for inputs in input_candidates(model, init, seed):
        try:
            with torch.no_grad():
                model(**inputs)
            return inputs
        except Exception as err:  # noqa: BLE001 - the next layout
            first = first or err
    assert first is not None  # MAIN_SHAPES is not empty
    raise first


#: Channel floors tried in order by :func:`generic_spec`: 32 for classes whose group norms have a
#: fixed 32 groups (not an ``__init__`` parameter), which 16 channels cannot divide; 8 for classes
#: whose deepest stages still exceed :data:`MAX_PARAMS` from 16.
CHANNEL_FLOORS = (16, 32, 8)


def fewer_stages(cls: type, init: dict[str, Any]) -> dict[str, Any] | None:
    """``init`` with every per-stage list cut to the stages that still run each kind of stage once, or
    None when nothing can be cut.

    The per-stage lists are those as long as the class's channel list (:data:`_CHANNEL_LIST`, e.g.
    ``block_out_channels``, or a channel multiplier list, :data:`_STAGE_MULT`) holding ints, bools,
    strings or tuples: channel lists, block types, per-stage flags, counts, heads and attention scales
    (rotary axis lists excepted). A stage's kind is the tuple of its values in every per-stage list but
    the channel lists and multipliers; the first stage of each kind
    is kept, and the first and the last stage always (a last stage has no down-sampler). The kept set
    is made symmetric (stage ``i`` with ``n - 1 - i``), so lists that a class reads in reverse
    (``up_block_types``) keep the same stages. A VAE released with four stages of one down-sampling
    block is checked with two: every block type, the down- and up-sampling paths and the stage
    without a sampler still run, with about half its kernels to compile."""
    params = inspect.signature(cls.__init__).parameters  # type: ignore[misc]
    merged = {k: p.default for k, p in params.items()
              if k != "self" and p.default is not inspect.Parameter.empty}
    merged.update(init)
    stage_lists = [k for k, v in merged.items()
                   if (_CHANNEL_LIST.search(k) or _STAGE_MULT.search(k)) and _int_list(v)]
    lengths = {len(merged[k]) for k in stage_lists}
    if len(lengths) != 1:
        return None
    n = lengths.pop()
    if n <= 2:
        return None
    per_stage = {k: v for k, v in merged.items()
                 if isinstance(v, (list, tuple)) and len(v) == n and not _ROPE_AXES.search(k)
                 and all(isinstance(x, (int, str, tuple)) for x in v)}
    kinds = [tuple(v[i] for k, v in per_stage.items() if k not in stage_lists) for i in range(n)]
    keep = {0, n - 1} | {kinds.index(kind) for kind in kinds}
    keep |= {n - 1 - i for i in keep}
    if len(keep) == n:
        return None
    order = sorted(keep)
    return {**init, **{k: type(v)(v[i] for i in order) for k, v in per_stage.items()}}


def generic_specs(cls: type) -> Iterator[dict[str, Any]]:
    """The :func:`generic_init` variants of ``cls`` that construct and pass :func:`check_size` (built on
    the meta device: no memory, no time), in the order to try: each of :data:`CHANNEL_FLOORS`, without
    then with ``small_samples``, each first with :func:`fewer_stages` (when it cuts any) then with the
    released number of stages; each distinct variant once.

    Raises:
        TypeError, ValueError, ...: the first variant's error when none constructs.
    """
    first: Exception | None = None
    seen: list[dict[str, Any]] = []
    built = 0
    for channels in CHANNEL_FLOORS:
        for small_samples in (False, True):
            try:
                full = generic_init(cls, channels, small_samples)
            except Exception as err:  # noqa: BLE001 - the next variant
                first = first or err
                continue
            for init in (fewer_stages(cls, full), full):
                if init is None or init in seen:
                    continue
                seen.append(init)
                try:
                    check_size(cls, init)
                except Exception as err:  # noqa: BLE001 - the next variant
                    first = first or err
                    continue
                built += 1
                yield init
    if not built:
        assert first is not None  # every variant raised
        raise first


def check_size(cls: type, init: dict[str, Any]) -> None:
    """Raises ValueError when ``cls(**init)`` would have more than :data:`MAX_PARAMS` parameters
    (built on the meta device: no memory)."""
    import torch

    with torch.device("meta"):
        n = sum(p.numel() for p in cls(**init).parameters())
    if n > MAX_PARAMS:
        raise ValueError(f"the generic tiny spec still has {n:,} parameters (> {MAX_PARAMS:,}): some size of "
                         f"{cls.__name__} has a name the scaling does not know")
