"""Qwen-Image text-to-image with Diffusers on ``neuron``: eager, compiled, and tensor-parallel.

Usage::

    python examples/qwen_image.py                                 # tiny random-weight pipeline, eager, neuron:0
    python examples/qwen_image.py --device cpu --out /tmp/cpu     # the same pipeline on CPU (same weights/latents)
    python examples/qwen_image.py --compile --out /tmp/compiled   # transformer under torch.compile(backend="neuron")
    torchrun --nproc-per-node 2 examples/qwen_image.py --tp 2     # Diffusers' neuron tensor-parallel path, 2 cores
    python examples/qwen_image.py --model Qwen/Qwen-Image --steps 30 --height 1024 --width 1024 \\
        --dtype bfloat16 --out qwen.png                           # real weights (needs them locally or the Hub)

The default (``--tiny``) builds the whole pipeline offline from configs: a tiny
``QwenImageTransformer2DModel``, a tiny ``AutoencoderKLQwenImage``, a tiny Qwen2.5-VL text encoder with seeded
random weights, and a byte-level ``Qwen2Tokenizer`` built in memory (no files, no Hub). Weights are drawn on
CPU under ``torch.manual_seed(--seed)``, so a CPU run, a neuron run and every TP rank use bit-identical weights,
and the latents come from a CPU ``torch.Generator`` seeded with ``--seed``: the images can be compared directly.

``--tp N`` calls ``transformer.enable_parallelism(config=TensorParallelConfig(tp_degree=N))`` after
``init_process_group("neuron")``; Diffusers sees a ``neuron`` device mesh and shards the transformer with its
own neuron backend (``diffusers/hooks/tensor_parallel_neuron.py``). Text encoder and VAE are replicated.
"""
from __future__ import annotations


from _diffusers_common import (DTYPES, build_parser, byte_alphabet, check_args, enable_tensor_parallel,
                               finish, init_distributed, pretrained_pipeline, run, seeded_build)

SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]


def tiny_qwen2_tokenizer():
    """A byte-level ``Qwen2Tokenizer`` built in memory: the 256 byte symbols (ids 0-255), no merges, and the
    chat special tokens ``<|endoftext|>``, ``<|im_start|>``, ``<|im_end|>`` (ids 256-258) that the
    pipeline's prompt template uses. Vocabulary size 259."""
    from transformers import Qwen2Tokenizer

    vocab = {ch: i for i, ch in enumerate(byte_alphabet())}
    tok = Qwen2Tokenizer(vocab=vocab, merges=[], model_max_length=2048)
    tok.add_special_tokens({"additional_special_tokens": SPECIAL_TOKENS[1:]})
    return tok


def tiny_pipeline(seed: int):
    """A ``QwenImagePipeline`` with tiny random weights, built offline, fp32, on CPU.

    Transformer: 2 double-stream blocks, 2 heads of 16 (so ``--tp 2`` gives one head per rank), text dim 16.
    VAE: ``AutoencoderKLQwenImage`` with 4 latent channels and 8x spatial downsampling (packed 2x2 into the
    transformer's 16 input channels), so an HxW image is (H/16)*(W/16) image tokens. Text encoder:
    Qwen2.5-VL, 2 text layers of width 16 (its vision tower is built too but unused). Weights depend only
    on ``seed``.
    """
    from diffusers import (AutoencoderKLQwenImage, FlowMatchEulerDiscreteScheduler, QwenImagePipeline,
                           QwenImageTransformer2DModel)
    from transformers import Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration

    tok = tiny_qwen2_tokenizer()
    transformer = seeded_build(seed, lambda: QwenImageTransformer2DModel(
        patch_size=2, in_channels=16, out_channels=4, num_layers=2, attention_head_dim=16,
        num_attention_heads=2, joint_attention_dim=16, guidance_embeds=False, axes_dims_rope=(8, 4, 4)))
    config = Qwen2_5_VLConfig(
        text_config={"hidden_size": 16, "intermediate_size": 16, "num_hidden_layers": 2, "num_attention_heads": 2,
                     "num_key_value_heads": 2, "vocab_size": len(tok), "rope_theta": 1000000.0,
                     "bos_token_id": tok.convert_tokens_to_ids("<|endoftext|>"),
                     "eos_token_id": tok.convert_tokens_to_ids("<|im_end|>"),
                     "rope_scaling": {"mrope_section": [1, 1, 2], "rope_type": "default", "type": "default"}},
        vision_config={"depth": 2, "hidden_size": 16, "intermediate_size": 16, "num_heads": 2,
                       "out_hidden_size": 16},
        vocab_size=len(tok), hidden_size=16)
    text_encoder = seeded_build(seed + 1, lambda: Qwen2_5_VLForConditionalGeneration(config))
    vae = seeded_build(seed + 2, lambda: AutoencoderKLQwenImage(
        base_dim=24, z_dim=4, dim_mult=[1, 2, 4], num_res_blocks=1, temperal_downsample=[False, True],
        latents_mean=[0.0] * 4, latents_std=[1.0] * 4))
    return QwenImagePipeline(scheduler=FlowMatchEulerDiscreteScheduler(), vae=vae, text_encoder=text_encoder,
                             tokenizer=tok, transformer=transformer)


def main(argv: list[str] | None = None):
    """Parses the command line, builds the pipeline, runs it and returns the image
    (float32 ``(1, H, W, 3)`` in [0, 1]). Exits with status 2 on bad options (see ``check_args``)."""
    parser = build_parser(__doc__, default_steps=2, default_size=32)
    args = parser.parse_args(argv)
    check_args(parser, args)
    if args.height % 16 or args.width % 16:
        parser.error(f"Qwen-Image needs --height/--width divisible by 16 (VAE 8x, then 2x2 patches), "
                     f"got {args.height}x{args.width}")
    rank, device = init_distributed(args)
    if args.model:
        from diffusers import QwenImagePipeline, QwenImageTransformer2DModel

        pipe = pretrained_pipeline(QwenImagePipeline, QwenImageTransformer2DModel, args.model, args.tp,
                                   DTYPES[args.dtype])
    else:
        pipe = tiny_pipeline(args.seed)
        if args.tp > 1:
            enable_tensor_parallel(pipe.transformer, args.tp)
    kwargs = {"max_sequence_length": 64 if args.model is None else 512}
    image = run(pipe, args, rank, device, kwargs)
    finish(args)
    return image


if __name__ == "__main__":
    main()
