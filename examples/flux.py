"""Flux text-to-image with Diffusers on ``neuron``: eager, compiled, and tensor-parallel.

Usage::

    python examples/flux.py                                  # tiny random-weight pipeline, eager, neuron:0
    python examples/flux.py --device cpu --out /tmp/cpu      # the same pipeline on CPU (same weights/latents)
    python examples/flux.py --compile --out /tmp/compiled    # transformer under torch.compile(backend="neuron")
    torchrun --nproc-per-node 2 examples/flux.py --tp 2      # Diffusers' neuron tensor-parallel path, 2 cores
    python examples/flux.py --model black-forest-labs/FLUX.1-schnell --steps 4 --height 1024 --width 1024 \\
        --dtype bfloat16 --out flux.png                      # real weights (needs them locally or the Hub)

The default (``--tiny``) builds the whole pipeline offline from configs: a tiny ``FluxTransformer2DModel``,
a tiny ``AutoencoderKL``, tiny CLIP and T5 text encoders with seeded random weights, and their tokenizers
built in memory (byte-level vocabularies, no files, no Hub). Weights are drawn on CPU under
``torch.manual_seed(--seed)``, so a CPU run, a neuron run and every TP rank use bit-identical weights, and the
latents come from a CPU ``torch.Generator`` seeded with ``--seed``: the images can be compared directly.

``--tp N`` calls ``transformer.enable_parallelism(config=TensorParallelConfig(tp_degree=N))`` after
``init_process_group("neuron")``; Diffusers sees a ``neuron`` device mesh and shards the transformer with its
own neuron backend (``diffusers/hooks/tensor_parallel_neuron.py``). Text encoders and VAE are replicated.
"""
from __future__ import annotations


from _diffusers_common import (DTYPES, build_parser, byte_alphabet, check_args, enable_tensor_parallel,
                               finish, init_distributed, pretrained_pipeline, run, seeded_build)


def tiny_clip_tokenizer(max_length: int = 77):
    """A ``CLIPTokenizer`` with a byte-level vocabulary (256 bytes, their end-of-word forms, 2 specials) and
    no merges, built in memory. Vocabulary size 514: ids 0/1 are ``<|startoftext|>`` / ``<|endoftext|>``."""
    from transformers import CLIPTokenizer

    vocab = {"<|startoftext|>": 0, "<|endoftext|>": 1}
    for ch in byte_alphabet():
        vocab[ch] = len(vocab)
    for ch in byte_alphabet():
        vocab[ch + "</w>"] = len(vocab)
    return CLIPTokenizer(vocab=vocab, merges=[], model_max_length=max_length)


def tiny_t5_tokenizer(max_length: int = 32):
    """A ``T5Tokenizer`` (Unigram) over printable ASCII characters, built in memory, no extra ids.
    Ids: 0 ``<pad>``, 1 ``</s>``, 2 ``<unk>``, then ``▁`` and the characters (vocabulary size 99)."""
    from transformers import T5TokenizerFast

    pieces = [("<pad>", 0.0), ("</s>", 0.0), ("<unk>", 0.0), ("▁", -2.0)]
    pieces += [(chr(c), -3.0) for c in range(33, 127)]
    pieces += [("▁" + chr(c), -2.5) for c in range(33, 127)]
    return T5TokenizerFast(vocab=pieces, extra_ids=0, model_max_length=max_length)


def tiny_pipeline(seed: int):
    """A ``FluxPipeline`` with tiny random weights, built offline, fp32, on CPU.

    Transformer: 1 double-stream + 1 single-stream block, 2 heads of 16 (so ``--tp 2`` gives one head per
    rank), text dim 32. VAE: 1 level of 4 channels, 1 latent channel (packed 2x2 into the transformer's 4
    input channels), so an HxW image is (H/2)*(W/2) image tokens. Text: CLIP (2 layers, width 32) and T5
    encoder (2 layers, d_model 32). Weights depend only on ``seed``.
    """
    from diffusers import AutoencoderKL, FlowMatchEulerDiscreteScheduler, FluxPipeline, FluxTransformer2DModel
    from transformers import CLIPTextConfig, CLIPTextModel, T5Config, T5EncoderModel

    tok = tiny_clip_tokenizer()
    tok2 = tiny_t5_tokenizer()
    transformer = seeded_build(seed, lambda: FluxTransformer2DModel(
        patch_size=1, in_channels=4, num_layers=1, num_single_layers=1, attention_head_dim=16,
        num_attention_heads=2, joint_attention_dim=32, pooled_projection_dim=32, axes_dims_rope=[4, 4, 8]))
    text_encoder = seeded_build(seed + 1, lambda: CLIPTextModel(CLIPTextConfig(
        vocab_size=len(tok), hidden_size=32, intermediate_size=37, num_attention_heads=4, num_hidden_layers=2,
        projection_dim=32, bos_token_id=0, eos_token_id=1, pad_token_id=1, max_position_embeddings=77,
        hidden_act="gelu")))
    text_encoder_2 = seeded_build(seed + 2, lambda: T5EncoderModel(T5Config(
        vocab_size=len(tok2), d_model=32, d_kv=8, d_ff=37, num_layers=2, num_heads=4,
        relative_attention_num_buckets=8, pad_token_id=0, eos_token_id=1, decoder_start_token_id=0)))
    vae = seeded_build(seed + 3, lambda: AutoencoderKL(
        sample_size=32, in_channels=3, out_channels=3, block_out_channels=(4,), layers_per_block=1,
        latent_channels=1, norm_num_groups=1, use_quant_conv=False, use_post_quant_conv=False,
        shift_factor=0.0609, scaling_factor=1.5035))
    return FluxPipeline(scheduler=FlowMatchEulerDiscreteScheduler(), vae=vae, text_encoder=text_encoder,
                        tokenizer=tok, text_encoder_2=text_encoder_2, tokenizer_2=tok2, transformer=transformer)


def main(argv: list[str] | None = None):
    """Parses the command line, builds the pipeline, runs it and returns the image
    (float32 ``(1, H, W, 3)`` in [0, 1]). Exits with status 2 on bad options (see ``check_args``)."""
    parser = build_parser(__doc__, default_steps=2, default_size=32)
    args = parser.parse_args(argv)
    check_args(parser, args)
    if args.height % 2 or args.width % 2:
        parser.error(f"Flux needs --height/--width divisible by 2 for the tiny VAE (got {args.height}x{args.width})")
    rank, device = init_distributed(args)
    if args.model:
        from diffusers import FluxPipeline, FluxTransformer2DModel

        pipe = pretrained_pipeline(FluxPipeline, FluxTransformer2DModel, args.model, args.tp, DTYPES[args.dtype])
    else:
        pipe = tiny_pipeline(args.seed)
        if args.tp > 1:
            enable_tensor_parallel(pipe.transformer, args.tp)
    kwargs = {"max_sequence_length": 32 if args.model is None else 512, "guidance_scale": 3.5}
    image = run(pipe, args, rank, device, kwargs)
    finish(args)
    return image


if __name__ == "__main__":
    main()
