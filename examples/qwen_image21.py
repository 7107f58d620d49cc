"""Qwen-Image-2.1 text-to-image with Diffusers' ``QwenImage21Pipeline`` on ``neuron``: eager, compiled, and
tensor-parallel.

Usage::

    python examples/qwen_image21.py                                # tiny random-weight pipeline, eager, neuron:0
    python examples/qwen_image21.py --device cpu --out /tmp/cpu    # the same pipeline on CPU (same weights/latents)
    python examples/qwen_image21.py --compile --out /tmp/compiled  # transformer under torch.compile(backend="neuron")
    torchrun --nproc-per-node 2 examples/qwen_image21.py --tp 2    # Diffusers' neuron tensor-parallel path, 2 cores

The default (``--tiny``) builds the whole pipeline offline: a tiny ``QwenImage21Transformer2DModel`` (2 blocks,
2 heads of 16: ``--tp 2`` gives one head per rank), a tiny ``AutoencoderKLQwenImage21`` (5 levels, the 16×
spatial compression the pipeline assumes, base width 8), a tiny ``Qwen3VLForConditionalGeneration`` text encoder
(2 text layers of width 16; the vision tower is built and unused by text-to-image) and a Qwen3-VL processor
assembled in memory (:func:`tiny_processor`). Weights are seeded on CPU and the latents come from a seeded CPU
generator: CPU, neuron and every TP rank compute from identical numbers.

``--compile`` compiles the transformer with ``fullgraph=False``: Diffusers' ``QwenImage21Rope.forward`` calls
``Tensor.tolist()`` on a boolean mask, which Dynamo does not trace, so each transformer call has one graph break.
``--tp N`` uses the transformer's ``_tp_plan`` through Diffusers' neuron tensor-parallel backend.
"""
from __future__ import annotations

from _diffusers_common import (build_parser, byte_alphabet, check_args, enable_tensor_parallel, finish,
                               init_distributed, run, seeded_build)

#: The Qwen-VL special tokens the pipeline's chat prompt and the text encoder's config use.
SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>", "<|image_pad|>",
           "<|video_pad|>"]
CHAT_TEMPLATE = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{% for c in m['content'] %}{{ c['text'] }}"
                 "{% endfor %}<|im_end|>\n{% endfor %}")


def _image_text_processor_class():
    """``Qwen3VLProcessor`` without a video processor. transformers cannot build ``Qwen3VLProcessor`` without
    torchvision, even with ``video_processor=None``: its argument check looks up the video-processor class, a
    placeholder when torchvision is missing. ``ProcessorMixin`` reads a processor's attributes from its
    ``__init__`` signature, so this subclass (image processor + tokenizer only) builds; text-to-image never
    uses video."""
    from transformers import Qwen3VLProcessor
    from transformers.processing_utils import ProcessorMixin

    class Qwen3VLImageTextProcessor(Qwen3VLProcessor):
        def __init__(self, image_processor=None, tokenizer=None, chat_template=None, **kwargs):
            self.image_token, self.video_token = "<|image_pad|>", "<|video_pad|>"
            self.image_token_id = tokenizer.convert_tokens_to_ids(self.image_token)
            self.video_token_id = tokenizer.convert_tokens_to_ids(self.video_token)
            ProcessorMixin.__init__(self, image_processor, tokenizer, chat_template=chat_template)
            self.vision_start_token, self.vision_end_token = "<|vision_start|>", "<|vision_end|>"
            self.vision_start_token_id = tokenizer.convert_tokens_to_ids(self.vision_start_token)
            self.vision_end_token_id = tokenizer.convert_tokens_to_ids(self.vision_end_token)

    return Qwen3VLImageTextProcessor


def tiny_processor():
    """A Qwen3-VL processor built in memory: a byte-level ``Qwen2Tokenizer`` (256 byte symbols, no merges,
    :data:`SPECIAL` tokens after them), ``Qwen2VLImageProcessorPil`` (patch 16, merge 2) and
    :data:`CHAT_TEMPLATE` (the pipeline tokenizes its system message with it to know how many tokens to drop)."""
    from transformers import Qwen2Tokenizer, Qwen2VLImageProcessorPil

    vocab = {ch: i for i, ch in enumerate(byte_alphabet())}
    tok = Qwen2Tokenizer(vocab=vocab, merges=[], model_max_length=4096)
    tok.add_special_tokens({"additional_special_tokens": SPECIAL})
    tok.pad_token = "<|endoftext|>"
    image_processor = Qwen2VLImageProcessorPil(patch_size=16, temporal_patch_size=2, merge_size=2)
    return _image_text_processor_class()(image_processor=image_processor, tokenizer=tok, chat_template=CHAT_TEMPLATE)


def tiny_qwen3_vl(tok, seed: int, width: int, layers: int, head_dim: int, heads: int, kv_heads: int,
                  mrope_section: list[int]):
    """A seeded tiny ``Qwen3VLForConditionalGeneration`` (text ``layers`` × ``width``; a 1-block vision tower)
    whose special ids are ``tok``'s."""
    from transformers import Qwen3VLConfig, Qwen3VLForConditionalGeneration

    ids = {t: tok.convert_tokens_to_ids(t) for t in SPECIAL}
    config = Qwen3VLConfig(
        text_config={"hidden_size": width, "intermediate_size": 2 * width, "num_hidden_layers": layers,
                     "num_attention_heads": heads, "num_key_value_heads": kv_heads, "head_dim": head_dim,
                     "vocab_size": len(tok),
                     "rope_parameters": {"rope_type": "default", "rope_theta": 1e6, "mrope_section": mrope_section,
                                         "mrope_interleaved": True},
                     "bos_token_id": ids["<|endoftext|>"], "eos_token_id": ids["<|im_end|>"],
                     "pad_token_id": ids["<|endoftext|>"]},
        vision_config={"depth": 1, "hidden_size": 16, "intermediate_size": 32, "num_heads": 2, "out_hidden_size": width,
                       "patch_size": 16, "spatial_merge_size": 2, "temporal_patch_size": 2,
                       "num_position_embeddings": 64, "deepstack_visual_indexes": []},
        image_token_id=ids["<|image_pad|>"], video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"], vision_end_token_id=ids["<|vision_end|>"])
    return seeded_build(seed, lambda: Qwen3VLForConditionalGeneration(config))


def tiny_pipeline(seed: int):
    """A ``QwenImage21Pipeline`` with tiny random weights (module docstring), built offline, fp32, on CPU."""
    from diffusers import (AutoencoderKLQwenImage21, FlowMatchEulerDiscreteScheduler, QwenImage21Pipeline,
                           QwenImage21Transformer2DModel)

    proc = tiny_processor()
    transformer = seeded_build(seed, lambda: QwenImage21Transformer2DModel(
        patch_size=1, in_channels=4, out_channels=4, num_layers=2, attention_head_dim=16, num_attention_heads=2,
        context_in_dim=16, mlp_ratio=2, axes_dims_rope=(4, 6, 6)))
    text_encoder = tiny_qwen3_vl(proc.tokenizer, seed + 1, width=16, layers=2, head_dim=8, heads=2, kv_heads=2,
                                 mrope_section=[1, 1, 2])
    vae = seeded_build(seed + 2, lambda: AutoencoderKLQwenImage21(
        base_dim=8, decoder_base_dim=8, z_dim=4, dim_mult=[1, 1, 1, 1, 1], num_res_blocks=1,
        temperal_downsample=[False, False, False, False], latents_mean=[0.0] * 4, latents_std=[1.0] * 4))
    return QwenImage21Pipeline(scheduler=FlowMatchEulerDiscreteScheduler(), vae=vae, text_encoder=text_encoder,
                               processor=proc, transformer=transformer)


def main(argv: list[str] | None = None):
    """Parses the command line, builds the pipeline, runs it and returns the image (float32 ``(1, H, W, C)`` in
    [0, 1]; the tiny VAE decodes 4 channels). Exits with status 2 on bad options (see ``check_args``)."""
    parser = build_parser(__doc__, default_steps=2, default_size=64)
    args = parser.parse_args(argv)
    check_args(parser, args)
    if args.model:
        parser.error("--model is not supported by this example yet: it builds the tiny pipeline only")
    if args.height % 32 or args.width % 32:
        parser.error(f"Qwen-Image-2.1 needs --height/--width divisible by 32 (16x VAE, 2x2 latent packing; "
                     f"got {args.height}x{args.width})")
    rank, device = init_distributed(args)
    pipe = tiny_pipeline(args.seed)
    if args.tp > 1:
        enable_tensor_parallel(pipe.transformer, args.tp)
    image = run(pipe, args, rank, device, {}, fullgraph=False)
    finish(args)
    return image


if __name__ == "__main__":
    main()
