"""Greedy text generation on `neuron` with a static KV cache.

``from_pretrained(..., device_map="neuron")`` puts the model on the first NeuronCore;
``generate(cache_implementation="static")`` makes transformers compile the decode step with
``torch.compile(backend="neuron", dynamic=False)`` (its own choice for a `neuron` model). The first
call includes the compile; the second reuses the compiled graph (and the on-disk cache makes a
second run of this script compile nothing).

Usage::

    python examples/generate.py                                  # tiny offline Llama (random weights)
    python examples/generate.py --compare-cpu                    # also check the tokens against eager CPU
    python examples/generate.py --model Qwen/Qwen2.5-0.5B --prompt "The capital of France is" \\
        --max-new-tokens 32 --dtype bfloat16

With ``--compare-cpu`` the script exits with status 1 if the greedy tokens differ from CPU's.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer


def parse_args(argv=None) -> argparse.Namespace:
    """The command line (see the module docstring)."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", help="checkpoint folder or Hub id (default: a tiny offline Llama)")
    p.add_argument("--prompt", action="append",
                   help="prompt text; repeat for a batch (default: two short prompts)")
    p.add_argument("--max-new-tokens", type=int, default=16)
    p.add_argument("--max-cache-len", type=int, default=None,
                   help="static cache length; fixing it lets other prompt lengths reuse the "
                        "compiled graph (default: 128, or longer if the prompt needs it)")
    p.add_argument("--dtype", choices=["float32", "bfloat16"], default="float32")
    p.add_argument("--compare-cpu", action="store_true",
                   help="also generate on CPU (eager) and require identical tokens")
    p.add_argument("--assets-dir", default=os.path.join(tempfile.gettempdir(), "torch-neuronx-tiny-llm"),
                   help="where the tiny model is written when --model is not given")
    args = p.parse_args(argv)
    if args.max_new_tokens < 1:
        p.error("--max-new-tokens must be at least 1")
    if args.prompt and any(not text.strip() for text in args.prompt):
        p.error("--prompt must not be empty (greedy generation continues a text)")
    if args.max_cache_len is not None and args.max_cache_len < 1:
        p.error("--max-cache-len must be at least 1")
    if args.model and (os.path.isabs(args.model) or args.model.startswith(".")) and not os.path.isdir(args.model):
        p.error(f"--model {args.model}: no such folder (give a checkpoint folder or a Hub id)")
    return args


def greedy(model, inputs: dict, args: argparse.Namespace, max_cache_len: int, **kw) -> torch.Tensor:
    """The new tokens (batch, max_new_tokens) of a greedy generate with a static cache."""
    out = model.generate(**inputs, max_new_tokens=args.max_new_tokens, do_sample=False,
                         cache_implementation="static", max_cache_len=max_cache_len, **kw)
    return out[:, inputs["input_ids"].shape[1]:]


def main(argv=None) -> int:
    """Loads the model on `neuron`, generates twice (compile, then steady state), prints the
    text, the tokens and the timings; with ``--compare-cpu`` checks the tokens. Returns the exit
    status."""
    args = parse_args(argv)
    model_path = args.model
    if model_path is None:
        from tiny_llm import write_tiny_assets
        model_path, _ = write_tiny_assets(args.assets_dir)
    prompts = args.prompt or ["The number 7 is", "The number 12 is even and its square"]
    dtype = getattr(torch, args.dtype)

    tokenizer = AutoTokenizer.from_pretrained(model_path)
    tokenizer.padding_side = "left"  # decoder-only: pad on the left so every row continues its text
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model = AutoModelForCausalLM.from_pretrained(model_path, dtype=dtype, device_map="neuron").eval()
    device = next(model.parameters()).device
    print(f"model {model_path} on {device} ({args.dtype}); compile backend "
          f"{model._default_compile_config().backend!r}")

    inputs = tokenizer(prompts, return_tensors="pt", padding=True)
    prompt_len = inputs["input_ids"].shape[1]
    needed = prompt_len + args.max_new_tokens
    max_cache_len = args.max_cache_len or max(128, -(-needed // 128) * 128)
    if max_cache_len < needed:
        raise SystemExit(f"generate.py: --max-cache-len {max_cache_len} is shorter than the prompt ({prompt_len} "
                         f"tokens) plus --max-new-tokens ({args.max_new_tokens}): use at least {needed}")
    on_device = {k: v.to(device) for k, v in inputs.items()}
    kw = dict(pad_token_id=tokenizer.pad_token_id)

    timings = []
    for _ in range(2):  # first call compiles the decode step; second shows steady state
        start = time.perf_counter()
        tokens = greedy(model, on_device, args, max_cache_len, **kw)
        timings.append(time.perf_counter() - start)
    assert tokens.device.type == "neuron", tokens.device
    tokens = tokens.cpu()
    n = tokens.numel()
    print(f"generate #1 (with compile): {timings[0]:.2f} s")
    print(f"generate #2: {timings[1]:.2f} s, {n / timings[1]:.1f} tokens/s "
          f"({tokens.shape[0]} x {tokens.shape[1]} new tokens, static cache {max_cache_len})")
    for prompt, row in zip(prompts, tokens, strict=True):
        print(f"PROMPT {prompt!r}\n  TEXT {tokenizer.decode(row, skip_special_tokens=True)!r}\n"
              f"  TOKENS {row.tolist()}")

    if args.compare_cpu:
        cpu_model = AutoModelForCausalLM.from_pretrained(model_path, dtype=dtype).eval()
        # eager CPU reference: the same static cache, no compile
        ref = greedy(cpu_model, dict(inputs), args, max_cache_len, disable_compile=True, **kw)
        if torch.equal(ref, tokens):
            print(f"CPU MATCH: all {n} tokens equal")
        else:
            bad = (ref != tokens).nonzero().tolist()
            print(f"CPU MISMATCH at (row, position) {bad[:8]}\n  cpu    {ref.tolist()}\n"
                  f"  neuron {tokens.tolist()}")
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
