"""Model inputs built offline: token ids, a synthetic image through the model's own image processor
class, a synthetic waveform through its own feature extractor class.

No tokenizer is needed: prompt ids are drawn from ``[3, vocab − RESERVED)`` and the model's own
(remapped, :mod:`.composite`) special ids are placed by hand. Processors are built from their
class defaults (no files), on the PIL backend (no torchvision), with their geometry aligned to the
tiny config (image size, patch and merge sizes, mel bins).
"""
from __future__ import annotations

import inspect
import re
from typing import Any

from . import tiny as _tiny
from .composite import RESERVED, vocab_size

#: Model types whose image processor is registered under another model type.
IMAGE_PROCESSOR_ALIAS: dict[str, str] = {
    "glm4v_moe": "glm4v", "qwen3_vl_moe": "qwen3_vl", "glm_ocr": "glm4v", "qwen2_5_omni_thinker": "qwen2_5_vl",
    "qwen3_omni_moe_thinker": "qwen2_vl", "mistral4": "pixtral", "fast_vlm": "llava",
    "instructblipvideo": "instructblip", "vision-encoder-decoder": "vit", "diffusion_gemma": "gemma3",
}
#: Model types whose feature extractor is registered under another model type (Moonshine Streaming's processor
#: takes the raw waveform, like Moonshine's ``Wav2Vec2FeatureExtractor``).
FEATURE_EXTRACTOR_ALIAS: dict[str, str] = {"moonshine_streaming": "moonshine"}
#: Model types whose language model takes ``token_type_ids`` marking the image tokens.
TOKEN_TYPE_IMAGE = frozenset({"paligemma", "shieldgemma2", "gemma3"})
_MISMATCH = re.compile(r"tokens: (\d+), features:? (\d+)")


def token_ids(n: int, vocab: int, seed: int) -> Any:
    """``[1, n]`` int64 ids drawn from ``[3, min(vocab, 256) − RESERVED)`` with a seeded CPU generator."""
    import torch

    g = torch.Generator().manual_seed(seed)
    return torch.randint(3, max(4, min(vocab, 256) - RESERVED), (1, n), generator=g)


def synthetic_image(size: int = 64, seed: int = 0) -> Any:
    """A seeded ``size`` × ``size`` RGB ``PIL.Image`` of uniform noise."""
    import numpy as np
    from PIL import Image

    return Image.fromarray(np.random.default_rng(seed).integers(0, 255, (size, size, 3), dtype=np.uint8))


def synthetic_waveform(sampling_rate: int, seed: int = 0) -> Any:
    """One second of a 440 Hz sine plus seeded noise: float32 numpy array ``[sampling_rate]``."""
    import numpy as np

    t = np.arange(sampling_rate) / sampling_rate
    noise = np.random.default_rng(seed).standard_normal(sampling_rate)
    return (0.5 * np.sin(2 * np.pi * 440 * t) + 0.1 * noise).astype(np.float32)


def _image_processor(model_type: str, config: Any) -> tuple[Any, dict[str, Any]]:
    import transformers
    from transformers.models.auto import image_processing_auto as ipa

    names = ipa.IMAGE_PROCESSOR_MAPPING_NAMES.get(model_type) or ipa.IMAGE_PROCESSOR_MAPPING_NAMES.get(
        IMAGE_PROCESSOR_ALIAS.get(model_type, ""))
    if not names:
        raise LookupError(f"transformers registers no image processor for {model_type!r}")
    name = (names.get("pil") or names.get("torchvision")) if isinstance(names, dict) else names
    if not name:
        raise LookupError(f"transformers registers no image processor class for {model_type!r}")
    cls = getattr(transformers, name)
    # UDOP / LayoutLMv3: no OCR (it needs pytesseract and the synthetic image has no words): pixels only.
    processor = cls(apply_ocr=False) if getattr(cls, "apply_ocr", None) is True else cls()
    vc = _tiny.get_field(config, "vision_config") or config
    kw: dict[str, Any] = {}
    size = _tiny.get_field(vc, "image_size")
    size = size[0] if isinstance(size, (list, tuple)) else size
    current = getattr(processor, "size", None)
    if isinstance(size, int) and current is not None:
        if getattr(current, "height", None) is not None:
            kw["size"] = {"height": size, "width": size}
        elif getattr(current, "shortest_edge", None) is not None and getattr(processor, "crop_size", None) is not None:
            kw["size"] = {"shortest_edge": size}
        elif getattr(current, "longest_edge", None) is not None and isinstance(getattr(processor, "max_image_size",
                                                                                        None), dict):
            # Idefics3 / SmolVLM: one image at the tower's size, not split into tiles
            kw.update(size={"longest_edge": size}, max_image_size={"longest_edge": size}, do_image_splitting=False)
        if getattr(processor, "crop_size", None) is not None:
            kw["crop_size"] = {"height": size, "width": size}
    pins = _tiny.get_field(config, "image_grid_pinpoints")
    if isinstance(pins, list) and getattr(processor, "image_grid_pinpoints", None) is not None:
        kw["image_grid_pinpoints"] = pins  # the tiny model's tilings (composite.fix_grid_pinpoints)
    for attr, keys in (("patch_size", ("patch_size",)), ("temporal_patch_size", ("temporal_patch_size",)),
                       ("merge_size", ("spatial_merge_size", "merge_size"))):
        if hasattr(processor, attr):
            value = next((v for v in (_tiny.get_field(vc, k) for k in keys) if isinstance(v, int)), None)
            if value is not None:
                current_value = getattr(processor, attr)
                # Fuyu's processor takes the patch as a size ({"height", "width"}), others an int
                sized = current_value is not None and hasattr(current_value, "height")
                if sized:
                    from transformers.image_utils import SizeDict

                    kw[attr] = SizeDict(height=value, width=value)
                else:
                    kw[attr] = value
    return processor, kw


def synthetic_pixels(config: Any, seed: int = 0) -> dict[str, Any]:
    """``{"pixel_values": [1, C, S, S]}`` seeded normal float32, C and S the vision tower's
    ``num_channels`` (3) and ``image_size`` (64): the pixels of a model type whose only image processor
    is a torchvision one (torchvision is not a dependency: installing it would change transformers'
    processor backends for every other model). A model that needs more than pixel values from its
    processor (grids, masks, tile counts) fails on the CPU with its own error, listed apart."""
    import torch

    vc = _tiny.get_field(config, "vision_config") or config
    size = _tiny.get_field(vc, "image_size")
    size = size[0] if isinstance(size, (list, tuple)) else size
    size = size if isinstance(size, int) and size > 0 else 64
    channels = _tiny.get_field(vc, "num_channels")
    channels = channels if isinstance(channels, int) and channels > 0 else 3
    g = torch.Generator().manual_seed(seed)
    return {"pixel_values": torch.randn(1, channels, size, size, generator=g)}


def image_inputs(model_type: str, config: Any, seed: int = 0) -> dict[str, Any]:
    """The tensors the model type's image processor (class defaults, PIL backend) returns for one
    :func:`synthetic_image`, its geometry aligned with ``config``'s vision tower.

    Raises:
        LookupError: transformers registers no image processor for ``model_type``.
    """
    import torch

    processor, kw = _image_processor(model_type, config)
    try:
        out = processor(images=[synthetic_image(seed=seed)], return_tensors="pt", **kw)
    except TypeError:  # a processor that takes none of the geometry keywords
        out = processor(images=[synthetic_image(seed=seed)], return_tensors="pt")
    if isinstance(out, torch.Tensor):  # IDEFICS's processor returns the pixel tensor itself
        return {"pixel_values": out}
    return {k: v for k, v in dict(out).items() if isinstance(v, torch.Tensor)}


def _image_token(config: Any) -> int | None:
    for key in ("image_token_id", "image_token_index"):
        value = _tiny.get_field(config, key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def image_text_inputs(model: Any, model_type: str, seed: int = 0, prompt_len: int = 6) -> dict[str, Any]:
    """Inputs of an image-text-to-text model: the processor's pixel tensors and ``input_ids`` =
    ``[3 text ids, N × image token, prompt_len − 3 text ids]``.

    A model type whose only image processor needs torchvision (not installed, see
    :func:`synthetic_pixels`) gets :func:`synthetic_pixels`; when the model needs more than those, the
    processor's ImportError is raised, the model's own error in its message.

    N (how many placeholders the image becomes) is found by running the model once with one
    placeholder and reading transformers' own "Image features and image tokens do not match,
    tokens: X, features: N" error (N may count features × hidden size: both are tried). Models
    with no image placeholder (BLIP, GIT, Pix2Struct, ...) get the pixel tensors and the text ids.

    Raises:
        LookupError: no image processor; RuntimeError: no placeholder count matched; anything the
        model raises for other reasons.
    """

    config = model.config
    params = inspect.signature(model.forward).parameters
    if "protein_input_ids" in params:  # Evolla: a protein sequence where other entries have an image
        return protein_text_inputs(model, seed, prompt_len)
    try:
        pixels, missing = image_inputs(model_type, config, seed), None
    except ImportError as err:  # a torchvision-only processor: try pixel values alone
        if "torchvision" not in str(err).lower():
            raise
        pixels, missing = synthetic_pixels(config, seed), err
    pixels = {k: v for k, v in pixels.items() if k in params}
    if missing is None:
        return _image_text_inputs(model, model_type, pixels, seed, prompt_len)
    try:
        return _image_text_inputs(model, model_type, pixels, seed, prompt_len)
    except Exception as err:
        first = str(missing).strip().split(". ")[0]
        raise ImportError(f"{first} (pixel values alone are not enough: {type(err).__name__}: "
                          f"{str(err)[:160]})") from err


def _image_text_inputs(model: Any, model_type: str, pixels: dict[str, Any], seed: int,
                       prompt_len: int) -> dict[str, Any]:
    import torch

    config = model.config
    params = inspect.signature(model.forward).parameters
    token = _image_token(config)
    pixels = _video_frames(model_type, pixels)
    if "image_embeds_position_mask" in params:  # Kosmos-2: the image fills latent_query_num marked positions
        return _marked_positions(config, pixels, seed, prompt_len)
    qformer = _tiny.get_field(config, "qformer_config")

    def types(ids: Any) -> dict[str, Any]:
        d: dict[str, Any] = {}
        if "qformer_input_ids" in params:  # InstructBLIP: the prompt, tokenized for the Q-Former too
            q = token_ids(ids.shape[1], _tiny.get_field(qformer, "vocab_size") or 256, seed + 2)
            d.update(qformer_input_ids=q, qformer_attention_mask=torch.ones_like(q))
        if "image_attention_mask" in params and "pixel_values" in pixels:  # IDEFICS: text positions × images
            d["image_attention_mask"] = torch.ones(1, ids.shape[1], pixels["pixel_values"].shape[1], dtype=torch.long)
        if "bbox" in params:  # UDOP: a layout box per text token, normalised to [0, 1] (one box for all)
            d["bbox"] = torch.tensor([0.1, 0.2, 0.3, 0.4]).expand(1, ids.shape[1], 4).clone()
        if token is None:
            return d
        if "mm_token_type_ids" in params:
            d["mm_token_type_ids"] = (ids == token).long()  # what transformers' processors return
        if "token_type_ids" in params and model_type in TOKEN_TYPE_IMAGE:
            d["token_type_ids"] = (ids == token).long()
        return d

    return with_placeholders(model, model_type, token, pixels, seed, prompt_len, types)


def protein_text_inputs(model: Any, seed: int = 0, prompt_len: int = 6, protein_len: int = 16) -> dict[str, Any]:
    """Inputs of a protein-text-to-text model (Evolla, listed among the image-text-to-text models):
    ``protein_input_ids`` ``[1, protein_len]`` seeded ids from ``[3, vocab − 4)`` of the protein encoder's
    vocabulary (``protein_encoder_config.vocab_size``, 64 if absent) with an all-ones
    ``protein_attention_mask``, and ``prompt_len`` text ids with their mask."""
    import torch

    protein = _tiny.get_field(model.config, "protein_encoder_config")
    vocab = _tiny.get_field(protein, "vocab_size") if protein is not None else None
    vocab = vocab if isinstance(vocab, int) and vocab > 8 else 64
    g = torch.Generator().manual_seed(seed + 3)
    protein_ids = torch.randint(3, vocab - 4, (1, protein_len), generator=g)
    ids = token_ids(prompt_len, vocab_size(model.config), seed)
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids), "protein_input_ids": protein_ids,
            "protein_attention_mask": torch.ones_like(protein_ids)}


#: Model types whose pixel input has an images (or frames) axis, ``[batch, n, channels, height, width]``,
#: and their ``n``: InstructBLIP-Video's clips of 4 frames, IDEFICS's images per sample.
VIDEO_FRAMES: dict[str, int] = {"instructblipvideo": 4, "idefics": 1}


def _video_frames(model_type: str, pixels: dict[str, Any]) -> dict[str, Any]:
    frames = VIDEO_FRAMES.get(model_type)
    pv = pixels.get("pixel_values")
    if frames is None or pv is None or pv.dim() != 4:
        return pixels
    return {**pixels, "pixel_values": pv.unsqueeze(1).repeat(1, frames, 1, 1, 1)}


def _marked_positions(config: Any, pixels: dict[str, Any], seed: int, prompt_len: int) -> dict[str, Any]:
    import torch

    n = _tiny.get_field(config, "latent_query_num") or 64
    vocab = vocab_size(config)
    ids = torch.cat([token_ids(3, vocab, seed), torch.full((1, n), 3), token_ids(prompt_len - 3, vocab, seed + 1)], 1)
    mask = torch.zeros_like(ids)
    mask[:, 3:3 + n] = 1
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids), "image_embeds_position_mask": mask, **pixels}


def with_placeholders(model: Any, model_type: str, token: int | None, features: dict[str, Any], seed: int,
                      prompt_len: int = 6, extra: Any = None) -> dict[str, Any]:
    """``features`` plus ``input_ids`` = ``[3 text ids, N × token, prompt_len − 3 text ids]`` and its
    attention mask (``extra(ids)`` adds more id-derived tensors). N is found by running ``model`` once
    with one placeholder and reading transformers' "... tokens: X, features: N" mismatch error (N may
    count features × hidden size: both are tried). ``token`` None: no placeholders, plain text ids.

    Raises:
        RuntimeError: no placeholder count matched; anything the model raises for other reasons.
    """
    import torch

    config = model.config
    vocab = vocab_size(config)
    if token is None:
        ids = token_ids(prompt_len, vocab, seed)
        return {"input_ids": ids, "attention_mask": torch.ones_like(ids), **features, **(extra(ids) if extra else {})}
    head, tail = token_ids(3, vocab, seed), token_ids(prompt_len - 3, vocab, seed + 1)

    def make(n: int) -> dict[str, Any]:
        ids = torch.cat([head, torch.full((1, n), token), tail], 1)
        return {"input_ids": ids, "attention_mask": torch.ones_like(ids), **features, **(extra(ids) if extra else {})}

    n, tried = 1, {1}
    text = _tiny.get_field(config, "text_config") or config
    hidden = _tiny.get_field(text, "hidden_size") or 64
    for _ in range(4):
        inputs = make(n)
        probe = dict(inputs)
        if getattr(config, "is_encoder_decoder", False) and "decoder_input_ids" not in probe:
            probe["decoder_input_ids"] = torch.zeros(1, 1, dtype=torch.long)  # the probe needs one decoder step
        try:
            with torch.no_grad():
                model(**probe)
            return inputs
        except Exception as err:
            m = _MISMATCH.search(str(err))
            if not m:
                raise
            feats = int(m.group(2))
            options = [c for c in (feats, feats // hidden if feats % hidden == 0 else 0) if c > 0 and c not in tried]
            if not options:
                raise
            n = options[0]
            tried.add(n)
    raise RuntimeError(f"{model_type}: no placeholder count matched the features (tried {sorted(tried)})")


def speech_model_inputs(model: Any, model_type: str, seed: int = 0) -> dict[str, Any]:
    """Inputs of a speech-to-text model: :func:`speech_inputs` (the forward's own names only), and for
    a decoder-only audio LM (its config has an ``audio_token_id``) a prompt with N audio placeholders
    (:func:`with_placeholders`). A forward taking ``sample`` (VibeVoice's σ-VAE noise on the acoustic
    latents) gets ``sample=False``: the device's random stream differs from the CPU's by design.

    Raises:
        LookupError: no feature extractor; RuntimeError: no placeholder count matched.
    """
    import torch

    config = model.config
    params = inspect.signature(model.forward).parameters
    if isinstance(getattr(config, "delay_pattern", None), list):
        return delayed_codebook_inputs(model, seed)
    features = speech_inputs(model_type, config, seed)
    if "sample" in params:
        features["sample"] = False
    token = next((v for v in (_tiny.get_field(config, k) for k in ("audio_token_id", "audio_token_index"))
                  if isinstance(v, int) and not isinstance(v, bool)), None)
    if token is None or getattr(config, "is_encoder_decoder", False) or "input_ids" not in params:
        return features
    mask_name = next((n for n in ("input_features_mask", "feature_attention_mask") if n in params), None)
    if mask_name and "attention_mask" in features:  # the extractor's frame mask, not the prompt's
        features[mask_name] = features.pop("attention_mask")
    elif mask_name and "input_features" in features:  # every frame is real audio
        features[mask_name] = torch.ones(1, features["input_features"].shape[-1], dtype=torch.long)
    features = {k: v for k, v in features.items() if k in params}
    return with_placeholders(model, model_type, token, features, seed)


def delayed_codebook_inputs(model: Any, seed: int = 0, length: int = 8) -> dict[str, Any]:
    """Inputs of a text-to-speech model decoding delayed audio codebooks (Dia, listed among the
    speech-seq2seq models): ``input_ids`` ``[1, length]`` text ids for the encoder, and what its processor
    (``DiaProcessor``) builds for generation without an audio prompt: ``decoder_input_ids``
    ``[1, 1 + max delay, channels]`` — one all-BOS frame under the config's ``delay_pattern``, the rest
    padding — and an all-ones ``decoder_attention_mask`` ``[1, 1 + max delay]``."""
    import torch
    from transformers import DiaProcessor

    config = model.config
    decoder = _tiny.get_field(config, "decoder_config") or config
    delays: list[int] = list(config.delay_pattern)
    bos, pad = decoder.bos_token_id, decoder.pad_token_id
    steps, channels = 1 + max(delays), len(delays)
    index = DiaProcessor.build_indices(bsz=1, seq_len=steps, num_channels=channels, delay_pattern=delays,
                                       revert=False)
    prefill = torch.full((1, steps, channels), pad, dtype=torch.long)
    prefill[:, :1] = bos
    decoder_ids = DiaProcessor.apply_audio_delay(audio=prefill, pad_token_id=pad, bos_token_id=bos,
                                                 precomputed_idx=index)
    ids = token_ids(length, vocab_size(_tiny.get_field(config, "encoder_config") or config), seed)
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids), "decoder_input_ids": decoder_ids,
            "decoder_attention_mask": torch.ones(1, steps, dtype=torch.long)}


def speech_inputs(model_type: str, config: Any, seed: int = 0) -> dict[str, Any]:
    """The tensors the model type's feature extractor (class defaults; ``feature_size`` set to the
    config's mel bins when they differ) returns for one :func:`synthetic_waveform`.

    Raises:
        LookupError: transformers registers no feature extractor for ``model_type``.
    """
    import torch
    import transformers
    from transformers.models.auto import feature_extraction_auto as fea

    name = fea.FEATURE_EXTRACTOR_MAPPING_NAMES.get(model_type) or fea.FEATURE_EXTRACTOR_MAPPING_NAMES.get(
        FEATURE_EXTRACTOR_ALIAS.get(model_type, ""))
    encoder = _tiny.get_field(config, "encoder")
    if name is None and encoder is not None:  # a composite (speech-encoder-decoder): its encoder's extractor
        name = fea.FEATURE_EXTRACTOR_MAPPING_NAMES.get(getattr(encoder, "model_type", ""))
    if name is None:
        raise LookupError(f"transformers registers no feature extractor for {model_type!r}")
    cls = getattr(transformers, name)
    extractor = cls()
    audio = _tiny.get_field(config, "audio_config") or _tiny.get_field(config, "encoder_config") or config
    mel = next((v for v in (_tiny.get_field(audio, k) for k in ("num_mel_bins", "feature_size", "input_feat_size"))
                if isinstance(v, int)), None)
    if mel is not None and getattr(extractor, "feature_size", mel) != mel:
        try:
            extractor = cls(feature_size=mel)
        except TypeError:
            pass
    rate = getattr(extractor, "sampling_rate", 16000)
    out = extractor(synthetic_waveform(rate, seed), sampling_rate=rate, return_tensors="pt")
    return {k: v for k, v in dict(out).items() if isinstance(v, torch.Tensor)}
