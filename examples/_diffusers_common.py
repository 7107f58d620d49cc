"""Shared plumbing of the Diffusers examples (``examples/flux.py``, ``flux2.py``, ``qwen_image.py``,
``qwen_image21.py``; ``h3.py`` uses only the building blocks).

Not an example by itself: the command-line options, the tensor-parallel launch (torchrun + Diffusers'
``TensorParallelConfig``), ``torch.compile`` of the transformer, the timed generation, saving the image
and the summary are the same for every text-to-image pipeline, so they live here once.

Everything uses the libraries' public API: Diffusers picks its ``neuron`` tensor-parallel backend by itself
(``diffusers/hooks/tensor_parallel_neuron.py``) when the device mesh is on ``neuron``; nothing is patched.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}


def byte_alphabet() -> list[str]:
    """The 256 symbols of a byte-level BPE vocabulary (GPT-2's ``bytes_to_unicode``, byte order): with all
    of them in a vocabulary, every UTF-8 string tokenizes with no unknown token."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return [chr(c) for c in cs]


def build_parser(description: str, default_steps: int, default_size: int) -> argparse.ArgumentParser:
    """The command line shared by the Diffusers examples.

    Args:
        description: the parser's description (the example's module docstring).
        default_steps: default ``--steps``.
        default_size: default ``--height`` and ``--width`` in pixels.

    Returns:
        An ``argparse.ArgumentParser``; ``parse_args`` on it returns a namespace with ``tiny``, ``model``,
        ``device``, ``compile``, ``tp``, ``steps``, ``height``, ``width``, ``seed``, ``prompt``, ``out``,
        ``dtype``.
    """
    p = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    src = p.add_mutually_exclusive_group()
    src.add_argument("--tiny", action="store_true", default=True,
                     help="tiny random-weight pipeline built offline from configs (default)")
    src.add_argument("--model", metavar="PATH_OR_ID", default=None,
                     help="load a real pipeline with from_pretrained (local folder or Hub id)")
    p.add_argument("--device", choices=("neuron", "cpu"), default="neuron")
    p.add_argument("--compile", action="store_true",
                   help='torch.compile(backend="neuron") the transformer (in place, module.compile)')
    p.add_argument("--tp", type=int, default=1, metavar="N",
                   help="tensor-parallel degree; launch with torchrun --nproc-per-node N")
    p.add_argument("--steps", type=int, default=default_steps, help="denoising steps")
    p.add_argument("--height", type=int, default=default_size)
    p.add_argument("--width", type=int, default=default_size)
    p.add_argument("--seed", type=int, default=0, help="seed of the weights (tiny) and of the CPU latents")
    p.add_argument("--prompt", default="a photo of a cat sitting on a red chair")
    p.add_argument("--out", default=None, metavar="FILE",
                   help="save the image as FILE.png and its float32 [0, 1] array as FILE.npy (FILE is a path stem)")
    p.add_argument("--dtype", choices=tuple(DTYPES), default="float32")
    return p


def check_args(p: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Rejects option combinations that cannot work, with the fix in the message (``p.error`` exits 2).

    ``--tp N`` (N > 1) needs ``--device neuron`` and a torchrun launch with exactly N processes
    (``WORLD_SIZE == N``); sizes and steps must be positive.
    """
    if args.steps < 1:
        p.error(f"--steps must be >= 1, got {args.steps}")
    if args.height < 1 or args.width < 1:
        p.error(f"--height/--width must be positive, got {args.height}x{args.width}")
    if args.tp < 1:
        p.error(f"--tp must be >= 1, got {args.tp}")
    world = os.environ.get("WORLD_SIZE")
    if args.tp > 1:
        if args.device != "neuron":
            p.error("--tp needs --device neuron (Diffusers' neuron tensor-parallel path)")
        if world is None:
            p.error(f"--tp {args.tp} runs one process per NeuronCore: launch it with "
                    f"torchrun --nproc-per-node {args.tp} {sys.argv[0]} --tp {args.tp} ...")
        if int(world) != args.tp:
            p.error(f"--tp {args.tp} but torchrun started WORLD_SIZE={world} processes: "
                    f"use torchrun --nproc-per-node {args.tp}")
    elif world is not None and int(world) > 1:
        p.error(f"launched by torchrun with WORLD_SIZE={world} but --tp is 1: pass --tp {world}")


def init_distributed(args: argparse.Namespace) -> tuple[int, torch.device]:
    """Starts the c10d process group (backend ``"neuron"``) when ``--tp`` > 1.

    Returns:
        ``(rank, device)``: rank 0 and ``torch.device(args.device)`` without TP; otherwise the global rank and
        ``neuron:<LOCAL_RANK>`` (torch-neuronx makes ``LOCAL_RANK`` the current device).
    """
    if args.tp == 1:
        return 0, torch.device(args.device)
    import torch.distributed as dist

    dist.init_process_group(backend="neuron")
    return dist.get_rank(), torch.device("neuron", torch.neuron.current_device())


def enable_tensor_parallel(transformer: torch.nn.Module, tp: int) -> None:
    """Shards ``transformer`` over ``tp`` NeuronCores with Diffusers' own tensor-parallel path.

    ``ModelMixin.enable_parallelism(config=TensorParallelConfig(tp_degree=tp))`` builds a ``("tp",)`` device
    mesh on the current accelerator (``neuron``) and, because the mesh is on ``neuron``, Diffusers'
    ``_apply_tp_neuron`` cuts each rank's slice of the ``_tp_plan`` weights locally on CPU and places it on the
    rank's NeuronCore as a ``DTensor``. Diffusers requires the weights to still be on CPU at this point; the
    rest of the model is moved with the pipeline afterwards.

    Raises:
        ValueError: from Diffusers, when ``tp`` does not divide the attention heads or a sharded dimension.
    """
    from diffusers import TensorParallelConfig

    transformer.enable_parallelism(config=TensorParallelConfig(tp_degree=tp))


def pretrained_pipeline(pipeline_class, transformer_class, model: str, tp: int, dtype: torch.dtype):
    """``pipeline_class.from_pretrained(model)`` in ``dtype`` on CPU (loaded in that dtype, never
    materialized in fp32 first). With ``tp`` > 1 the transformer (``transformer_class``) is loaded
    first with ``parallel_config=TensorParallelConfig(tp_degree=tp)``, which makes every rank read only its
    own slice of the safetensors straight onto its NeuronCore."""
    from diffusers import TensorParallelConfig

    if tp == 1:
        return pipeline_class.from_pretrained(model, torch_dtype=dtype)
    transformer = transformer_class.from_pretrained(
        model, subfolder="transformer", torch_dtype=dtype,
        parallel_config=TensorParallelConfig(tp_degree=tp))
    return pipeline_class.from_pretrained(model, transformer=transformer, torch_dtype=dtype)


def seeded_build(seed: int, fn: Callable[[], torch.nn.Module]) -> torch.nn.Module:
    """``fn()`` under ``torch.manual_seed(seed)`` on CPU in fp32, in eval mode: the same bits on every run,
    device and rank, so CPU, single-core neuron and every TP rank start from identical weights."""
    torch.manual_seed(seed)
    with torch.device("cpu"):
        return fn().eval()


def run(pipe, args: argparse.Namespace, rank: int, device: torch.device, call_kwargs: dict,
        fullgraph: bool | None = None) -> np.ndarray:
    """Places, optionally compiles, runs and reports a text-to-image pipeline.

    Args:
        pipe: a Diffusers pipeline whose weights are on CPU in fp32 (the transformer already sharded when
            ``args.tp`` > 1).
        args: the parsed command line.
        rank: the process's rank (0 without TP); only rank 0 prints and writes files.
        device: where the pipeline runs.
        call_kwargs: extra keyword arguments of ``pipe(...)`` (e.g. ``max_sequence_length``).
        fullgraph: ``fullgraph`` of the transformer's ``compile`` (default: True on one core, False under TP);
            False for a transformer with a known graph break.

    Returns:
        The image as a float32 ``numpy`` array of shape ``(1, height, width, 3)`` in [0, 1]
        (``output_type="np"``).

    The latents are drawn from a CPU ``torch.Generator`` seeded with ``args.seed`` (Diffusers draws them on
    CPU for ``neuron`` anyway, and a CPU generator gives CPU and neuron the same numbers).
    """
    import torch_neuronx

    dtype = DTYPES[args.dtype]
    # The tiny weights are built in fp32: cast only when asked, so fp32 runs keep the exact built bits.
    pipe.to(device=device, dtype=dtype if dtype != torch.float32 else None)
    pipe.set_progress_bar_config(disable=True)
    if args.compile:
        # The natural Diffusers way: compile the denoiser in place, the pipeline keeps calling it.
        pipe.transformer.compile(backend="neuron", fullgraph=args.tp == 1 if fullgraph is None else fullgraph)

    torch_neuronx.clear_op_tracking()
    generator = torch.Generator("cpu").manual_seed(args.seed)
    t0 = time.perf_counter()
    image = pipe(
        prompt=args.prompt,
        height=args.height,
        width=args.width,
        num_inference_steps=args.steps,
        generator=generator,
        output_type="np",
        **call_kwargs,
    ).images
    seconds = time.perf_counter() - t0
    image = np.asarray(image, dtype=np.float32)
    fallbacks = torch_neuronx.get_fallback_ops()

    rank_diff = shard = None
    if args.tp > 1:
        rank_diff = _max_diff_across_ranks(image, device)
        shard = transformer_shard_fraction(pipe.transformer)
    if rank == 0:
        _report(args, image, seconds, fallbacks, rank_diff, shard, pipe)
        if args.out:
            save(image, args.out)
    return image


def _max_diff_across_ranks(image: np.ndarray, device: torch.device) -> float:
    """Largest ``|image_rank - image_rank0|`` over the ranks (a TP run must give every rank the same image)."""
    import torch.distributed as dist

    t = torch.from_numpy(image).to(device)
    ref = t.clone()
    dist.broadcast(ref, src=0)
    diff = (t - ref).abs().max()
    dist.all_reduce(diff, op=dist.ReduceOp.MAX)
    return float(diff.cpu())


def transformer_shard_fraction(model: torch.nn.Module) -> tuple[int, int, int]:
    """``(sharded_params, local_elements, total_elements)`` of ``model`` on this rank: how many parameters are
    ``Shard``-placed DTensors, and how many weight elements this rank holds out of the full model's."""
    from torch.distributed.tensor import DTensor, Shard

    sharded = local = total = 0
    for p in model.parameters():
        total += p.numel()
        if isinstance(p, DTensor):
            local += p.to_local().numel()
            sharded += any(isinstance(pl, Shard) for pl in p.placements)
        else:
            local += p.numel()
    return sharded, local, total


def _report(args, image, seconds, fallbacks, rank_diff, shard, pipe) -> None:
    """Prints the run's summary: config, time, image shape/range, host fallbacks, TP agreement."""
    what = f"model={args.model}" if args.model else "tiny random-weight pipeline"
    mode = ("compiled" if args.compile else "eager") + (f", tp={args.tp}" if args.tp > 1 else "")
    print(f"{type(pipe).__name__} ({what}) on {args.device} [{mode}, {args.dtype}]")
    print(f"  {args.steps} steps {args.height}x{args.width}: {seconds:.2f} s")
    print(f"  image shape={tuple(image.shape)} min={image.min():.4f} max={image.max():.4f} mean={image.mean():.6f}")
    if args.device == "neuron":
        print(f"  host fallbacks: {dict(fallbacks) if fallbacks else 'none'}")
    if shard is not None:
        n, local, total = shard
        print(f"  transformer: {n} parameters sharded, rank 0 holds {local}/{total} weight elements "
              f"({100 * local / total:.0f}%)")
    if rank_diff is not None:
        print(f"  max |image - image on rank 0| over {args.tp} ranks: {rank_diff:.3g}")
    if args.out:
        png, npy = _out_paths(args.out)
        print(f"  saved {png} and {npy}")


def _out_paths(out: str) -> tuple[Path, Path]:
    base = Path(out)
    if base.suffix.lower() in (".png", ".npy"):
        base = base.with_suffix("")
    return base.with_suffix(".png"), base.with_suffix(".npy")


def save(image: np.ndarray, out: str) -> None:
    """Writes ``image`` (``(1, H, W, 3)`` float in [0, 1]) as ``<out>.png`` (8-bit RGB) and ``<out>.npy``
    (the float32 array, for exact comparisons). ``out`` may end in .png, .npy or nothing."""
    from PIL import Image

    png, npy = _out_paths(out)
    png.parent.mkdir(parents=True, exist_ok=True)
    np.save(npy, image)
    Image.fromarray((image[0].clip(0, 1) * 255).round().astype(np.uint8)).save(png)


def finish(args: argparse.Namespace) -> None:
    """Tears the process group down after a TP run."""
    if args.tp > 1:
        import torch.distributed as dist

        dist.barrier()
        dist.destroy_process_group()
