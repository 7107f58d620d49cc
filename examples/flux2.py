"""FLUX.2 text-to-image with Diffusers' ``Flux2Pipeline`` on ``neuron``: eager, compiled, and tensor-parallel.

Usage::

    python examples/flux2.py                                  # tiny random-weight pipeline, eager, neuron:0
    python examples/flux2.py --device cpu --out /tmp/cpu      # the same pipeline on CPU (same weights/latents)
    python examples/flux2.py --compile --out /tmp/compiled    # transformer under torch.compile(backend="neuron")
    torchrun --nproc-per-node 2 examples/flux2.py --tp 2      # Diffusers' neuron tensor-parallel path, 2 cores
    python examples/flux2.py --model black-forest-labs/FLUX.2-dev --steps 28 --height 1024 --width 1024 \\
        --dtype bfloat16 --out flux2.png                      # real weights (needs them locally or the Hub)

The default (``--tiny``) builds the whole pipeline offline: a tiny ``Flux2Transformer2DModel`` (1 double-stream
+ 1 single-stream block, 2 heads of 16, so ``--tp 2`` gives one head per rank), a tiny ``AutoencoderKLFlux2``
(1 level of 4 channels), a tiny ``Mistral3ForConditionalGeneration`` text encoder (2 text layers of width 16; its
Pixtral vision tower is built and unused) and a byte-level tokenizer built in memory with a one-line chat
template — the pipeline only calls ``tokenizer.apply_chat_template`` on text conversations. The text embedding is
the concatenation of text layers 1 and 2 (``text_encoder_out_layers=(1, 2)``: the released default reads layers
10, 20, 30), so the transformer's joint dimension is 2 × 16. Weights are seeded on CPU and the latents come from a
seeded CPU generator: CPU, neuron and every TP rank compute from identical numbers.

``--tp N`` shards the transformer with ``enable_parallelism(TensorParallelConfig(tp_degree=N))``: Diffusers'
``Flux2Transformer2DModel`` has a ``_tp_plan`` and a ``neuron`` mesh selects its neuron backend.
"""
from __future__ import annotations

from _diffusers_common import (DTYPES, build_parser, byte_alphabet, check_args, enable_tensor_parallel,
                               finish, init_distributed, pretrained_pipeline, run, seeded_build)

#: Renders ``[{"role": ..., "content": [{"type": "text", "text": ...}]}]`` conversations as plain text.
CHAT_TEMPLATE = ("{% for m in messages %}[{{ m['role'] }}]{% for c in m['content'] %}{{ c['text'] }}{% endfor %}"
                 "{% endfor %}")
#: Text-encoder layers whose hidden states are concatenated into the prompt embedding (tiny: 2 layers).
TEXT_LAYERS = (1, 2)


def tiny_tokenizer():
    """A byte-level BPE ``PreTrainedTokenizerFast`` built in memory: the 256 byte symbols (ids 0-255), no merges,
    ``<pad>``, ``<s>``, ``</s>`` (ids 256-258) and :data:`CHAT_TEMPLATE`. Vocabulary size 259."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {ch: i for i, ch in enumerate(byte_alphabet())}
    for token in ("<pad>", "<s>", "</s>"):
        vocab[token] = len(vocab)
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", bos_token="<s>", eos_token="</s>",
                                   model_max_length=4096)
    fast.chat_template = CHAT_TEMPLATE
    return fast


def tiny_pipeline(seed: int):
    """A ``Flux2Pipeline`` with tiny random weights (module docstring), built offline, fp32, on CPU."""
    from diffusers import AutoencoderKLFlux2, FlowMatchEulerDiscreteScheduler, Flux2Pipeline, Flux2Transformer2DModel
    from transformers import Mistral3Config, Mistral3ForConditionalGeneration

    tok = tiny_tokenizer()
    transformer = seeded_build(seed, lambda: Flux2Transformer2DModel(
        patch_size=1, in_channels=4, num_layers=1, num_single_layers=1, attention_head_dim=16,
        num_attention_heads=2, joint_attention_dim=16 * len(TEXT_LAYERS), timestep_guidance_channels=256,
        axes_dims_rope=[4, 4, 4, 4]))
    config = Mistral3Config(
        text_config={"model_type": "mistral", "vocab_size": len(tok), "hidden_size": 16, "intermediate_size": 37,
                     "max_position_embeddings": 1024, "num_attention_heads": 4, "num_hidden_layers": 2,
                     "num_key_value_heads": 2, "rms_norm_eps": 1e-05, "rope_theta": 1e9, "sliding_window": None,
                     "bos_token_id": tok.bos_token_id, "eos_token_id": tok.eos_token_id,
                     "pad_token_id": tok.pad_token_id},
        vision_config={"model_type": "pixtral", "hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 4,
                       "intermediate_size": 37, "image_size": 30, "patch_size": 6, "num_channels": 3},
        bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id,
        image_seq_length=4, vision_feature_layer=-1, image_token_index=tok.pad_token_id)
    text_encoder = seeded_build(seed + 1, lambda: Mistral3ForConditionalGeneration(config))
    vae = seeded_build(seed + 2, lambda: AutoencoderKLFlux2(
        sample_size=32, in_channels=3, out_channels=3, down_block_types=("DownEncoderBlock2D",),
        up_block_types=("UpDecoderBlock2D",), block_out_channels=(4,), layers_per_block=1, latent_channels=1,
        norm_num_groups=1, use_quant_conv=False, use_post_quant_conv=False))
    return Flux2Pipeline(scheduler=FlowMatchEulerDiscreteScheduler(), vae=vae, text_encoder=text_encoder,
                         tokenizer=tok, transformer=transformer)


def main(argv: list[str] | None = None):
    """Parses the command line, builds the pipeline, runs it and returns the image
    (float32 ``(1, H, W, 3)`` in [0, 1]). Exits with status 2 on bad options (see ``check_args``)."""
    parser = build_parser(__doc__, default_steps=2, default_size=32)
    args = parser.parse_args(argv)
    check_args(parser, args)
    rank, device = init_distributed(args)
    if args.model:
        from diffusers import Flux2Pipeline, Flux2Transformer2DModel

        pipe = pretrained_pipeline(Flux2Pipeline, Flux2Transformer2DModel, args.model, args.tp, DTYPES[args.dtype])
        kwargs: dict = {}
    else:
        pipe = tiny_pipeline(args.seed)
        if args.tp > 1:
            enable_tensor_parallel(pipe.transformer, args.tp)
        # the 168-character system message comes first: a shorter window would truncate the prompt away
        kwargs = {"max_sequence_length": 256, "text_encoder_out_layers": TEXT_LAYERS}
    image = run(pipe, args, rank, device, {"guidance_scale": 4.0, **kwargs})
    finish(args)
    return image


if __name__ == "__main__":
    main()
