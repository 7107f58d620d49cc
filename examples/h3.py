"""MiniMax H3 text-to-video-and-audio with Diffusers' modular ``MiniMaxH3ModularPipeline`` on ``neuron``: eager
and compiled.

Usage::

    python examples/h3.py                                  # tiny random-weight pipeline, eager, neuron:0
    python examples/h3.py --device cpu --out /tmp/cpu      # the same pipeline on CPU (same weights/latents)
    python examples/h3.py --compile --out /tmp/compiled    # transformer under torch.compile(backend="neuron")

H3 exists in Diffusers only as a modular pipeline (``MiniMaxH3Blocks().init_pipeline()``, workflow "t2va": text
to video + audio); there is no ``DiffusionPipeline`` class for it. The default builds every component offline
with seeded random weights: ``MiniMaxH3Transformer3DModel`` (2 layers + 2 refiner layers, width 24, 2 heads of
16), ``AutoencoderKLMiniMaxH3`` (video, 2 levels: 4× spatial and temporal) and ``AutoencoderKLMiniMaxH3Audio``,
two ``MiniMaxH3Scheduler`` (shift 12 for video, 3 for audio), and a Qwen3-VL text encoder of **51** text layers
of width 8 — the pipeline reads ``hidden_states[50]`` (a fixed property of the pipeline) — with the Qwen3-VL
processor of ``examples/qwen_image21.py``. The shortest clip the pipeline accepts is 124 frames (5 s at 24 fps,
aligned to 17n + 5): at 32×32 that is the default.

Tensor parallelism: not supported. ``MiniMaxH3Transformer3DModel`` defines no ``_tp_plan``, which Diffusers'
tensor-parallel path (its neuron backend included) requires; ``--tp`` > 1 is refused with that reason.

``--out FILE`` writes ``FILE.npz`` with ``video`` (float32 ``(frames, 3, H, W)``) and ``audio`` (float32
``(channels, samples)``).
"""
from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np
import torch
from _diffusers_common import seeded_build
from qwen_image21 import tiny_processor, tiny_qwen3_vl

#: The text-encoder depth the pipeline requires (it reads ``hidden_states[50]``).
TEXT_LAYERS = 51
TEXT_WIDTH = 8


def tiny_pipeline(seed: int):
    """A ``MiniMaxH3ModularPipeline`` with tiny random weights (module docstring), built offline, fp32, on CPU."""
    from diffusers import (AutoencoderKLMiniMaxH3, AutoencoderKLMiniMaxH3Audio, MiniMaxH3Scheduler,
                           MiniMaxH3Transformer3DModel)
    from diffusers.modular_pipelines import MiniMaxH3Blocks
    from diffusers.video_processor import VideoProcessor

    proc = tiny_processor()
    transformer = seeded_build(seed, lambda: MiniMaxH3Transformer3DModel(
        num_attention_heads=2, attention_head_dim=16, hidden_size=24, num_layers=2, num_refiner_layers=2, ffn_dim=32,
        in_channels=4, audio_in_channels=8, patch_size=(1, 2, 2), text_dim=TEXT_WIDTH, freq_dim=8,
        time_embed_hidden_dim=24, time_embed_dim=16, rope_freq_dim=2))
    vae = seeded_build(seed + 1, lambda: AutoencoderKLMiniMaxH3(
        in_channels=3, out_channels=3, latent_channels=4, block_out_channels=(8, 16), layers_per_block=1,
        spatial_downsample_factors=(2, 2), temporal_downsample_factors=(2, 2), norm_num_groups=8,
        decoder_num_layers=2, decoder_num_attention_heads=2, decoder_attention_head_dim=8,
        decoder_num_register_tokens=2, decoder_ffn_mult=2, clip_length=17, token_drop=3,
        latents_mean=(0.0,) * 4, latents_std=(1.0,) * 4))
    audio_vae = seeded_build(seed + 2, lambda: AutoencoderKLMiniMaxH3Audio(
        encoder_dim=4, encoder_rates=(2, 2), latent_dim=32, latent_channels=8, num_attention_heads=2, decoder_dim=16,
        decoder_rates=(2, 2), decoder_kernel_sizes=(4, 4), resblock_kernel_sizes=(3, 7),
        resblock_dilation_sizes=((1, 3), (1, 3)), sampling_rate=32000, latents_mean=[0.0] * 8, latents_std=[1.0] * 8))
    text_encoder = tiny_qwen3_vl(proc.tokenizer, seed + 3, width=TEXT_WIDTH, layers=TEXT_LAYERS, head_dim=4, heads=2,
                                 kv_heads=1, mrope_section=[1, 0, 1])
    pipe = MiniMaxH3Blocks().init_pipeline()
    pipe.update_components(transformer=transformer, vae=vae, audio_vae=audio_vae, text_encoder=text_encoder,
                           tokenizer=proc.tokenizer, processor=proc, scheduler=MiniMaxH3Scheduler(shift=12.0),
                           audio_scheduler=MiniMaxH3Scheduler(shift=3.0), video_processor=VideoProcessor())
    return pipe


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line (module docstring); exits with status 2 on bad options, ``--tp`` > 1 included."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", choices=("neuron", "cpu"), default="neuron")
    p.add_argument("--compile", action="store_true",
                   help='torch.compile(backend="neuron") the transformer (in place, module.compile)')
    p.add_argument("--tp", type=int, default=1, help="tensor-parallel degree: H3 supports only 1 (see above)")
    p.add_argument("--steps", type=int, default=2, help="denoising steps")
    p.add_argument("--height", type=int, default=32)
    p.add_argument("--width", type=int, default=32)
    p.add_argument("--num-frames", type=int, default=124, help="video frames: 17n + 5, at least 124")
    p.add_argument("--seed", type=int, default=0, help="seed of the weights and of the CPU latents")
    p.add_argument("--prompt", default="a robot dancing in the rain")
    p.add_argument("--out", default=None, metavar="FILE", help="save video and audio arrays as FILE.npz")
    args = p.parse_args(argv)
    if args.tp != 1:
        p.error(f"--tp {args.tp}: Diffusers' MiniMaxH3Transformer3DModel defines no _tp_plan, which its tensor-"
                f"parallel path (neuron backend included) requires; run H3 on one NeuronCore (--tp 1)")
    if args.steps < 1:
        p.error(f"--steps must be >= 1, got {args.steps}")
    if args.num_frames < 124 or (args.num_frames - 5) % 17:
        p.error(f"--num-frames must be 17n + 5 and at least 124 (5 s at 24 fps), got {args.num_frames}")
    if args.height % 32 or args.width % 32 or args.height < 32 or args.width < 32:
        p.error(f"--height/--width must be positive multiples of 32, got {args.height}x{args.width}")
    return args


def main(argv: list[str] | None = None) -> dict[str, np.ndarray]:
    """Builds the tiny pipeline, runs it on ``--device`` and returns ``{"video": ..., "audio": ...}`` as float32
    numpy arrays (module docstring)."""
    import torch_neuronx

    args = parse_args(argv)
    pipe = tiny_pipeline(args.seed)
    pipe.to(args.device)
    if args.compile:
        pipe.transformer.compile(backend="neuron", fullgraph=True)
    torch_neuronx.clear_op_tracking()
    t0 = time.perf_counter()
    state = pipe(prompt=args.prompt, num_inference_steps=args.steps, height=args.height, width=args.width,
                 num_frames=args.num_frames, generator=torch.Generator("cpu").manual_seed(args.seed), output_type="pt")
    seconds = time.perf_counter() - t0
    out = {}
    for key in ("videos", "audio"):
        value = state.get(key)
        value = value[0] if isinstance(value, (list, tuple)) else value
        value = value[0] if value.dim() == (5 if key == "videos" else 3) else value  # the batch of one
        out["video" if key == "videos" else key] = value.float().cpu().numpy()
    mode = "compiled" if args.compile else "eager"
    print(f"MiniMaxH3ModularPipeline (tiny random-weight pipeline) on {args.device} [{mode}, float32]")
    print(f"  {args.steps} steps {args.num_frames} frames {args.height}x{args.width}: {seconds:.2f} s")
    for key, value in out.items():
        print(f"  {key} shape={value.shape} min={value.min():.4f} max={value.max():.4f} mean={value.mean():.6f}")
    if args.device == "neuron":
        fallbacks = torch_neuronx.get_fallback_ops()
        print(f"  host fallbacks: {dict(fallbacks) if fallbacks else 'none'}")
    if args.out:
        path = Path(args.out).with_suffix(".npz")
        os.makedirs(path.parent, exist_ok=True)
        np.savez(path, **out)
        print(f"  saved {path}")
    return out


if __name__ == "__main__":
    main()
