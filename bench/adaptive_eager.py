"""Adaptive eager execution against native CPU eager, in one run.

    python bench/adaptive_eager.py [--repeats 9] [--check]

The Llama of ``bench/eager.py`` (hidden 256, 4 layers, vocab 2048), 24-token greedy decode from a
1 x 32 prompt, ``neuron`` with adaptive eager execution on (``torch_neuronx.adaptive.set_enabled``)
against the same model on CPU: the median time ratio over ``--repeats`` interleaved runs after the
warm-up runs that record the traces and compile their kernels. It also prints the first decode's
extra time (recording plus compiling, against a later decode), the compile time reported by the
metrics, the generated tokens' agreement with CPU, and the counters of the timed runs.
``--check`` exits with status 1 when the decode ratio is above the goal (0.90) or the tokens differ.
"""
from __future__ import annotations

import argparse
import sys
import time

import torch
from eager import LLAMA, NEW_TOKENS, PROMPT_LEN, build_pair, compare, sync

import torch_neuronx
from torch_neuronx import adaptive

GOAL = 0.90


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args(argv)

    device = torch.device("neuron")
    cpu_model, dev_model = build_pair(device)
    cpu_model.eval()
    dev_model.eval()
    gen = torch.Generator().manual_seed(0)
    prompt = torch.randint(3, LLAMA["vocab_size"], (1, PROMPT_LEN), generator=gen)
    dprompt = prompt.to(device)

    def run(model, ids):
        def go():
            return model.generate(input_ids=ids, attention_mask=torch.ones_like(ids),
                                  max_new_tokens=NEW_TOKENS, min_new_tokens=NEW_TOKENS,
                                  do_sample=False, pad_token_id=0)
        return go

    with torch.no_grad():
        adaptive.set_enabled(False)
        t0 = time.perf_counter()
        reference = run(dev_model, dprompt)().cpu()
        op_by_op = time.perf_counter() - t0
        expected = run(cpu_model, prompt)()

        adaptive.set_enabled(True)
        adaptive.reset_adaptive_eager_metrics()
        first = []
        for _ in range(3):  # record, then compile (a trace compiles when it is seen again), then hit
            t0 = time.perf_counter()
            tokens = run(dev_model, dprompt)()
            sync(device)
            first.append(time.perf_counter() - t0)
        warm = torch_neuronx.get_adaptive_eager_metrics()
        same = bool(torch.equal(tokens.cpu(), expected)) and bool(torch.equal(reference, expected))
        adaptive.reset_adaptive_eager_metrics()
        t_cpu, t_dev = compare(run(cpu_model, prompt), run(dev_model, dprompt), device,
                               args.repeats, warmup=1)
        timed = torch_neuronx.get_adaptive_eager_metrics()

    ratio = t_dev / t_cpu
    steady = t_dev
    print(f"decode {NEW_TOKENS} tokens from a 1 x {PROMPT_LEN} prompt, Llama {LLAMA}")
    print(f"  cpu eager            {t_cpu * 1e3:9.1f} ms")
    print(f"  neuron adaptive      {t_dev * 1e3:9.1f} ms   ratio neuron/cpu = {ratio:.3f} (goal <= {GOAL})")
    print(f"  neuron op by op      {op_by_op * 1e3:9.1f} ms   (one untimed-warm run, for scale)")
    print(f"  warm-up decodes      {', '.join(f'{t * 1e3:.0f}' for t in first)} ms "
          f"(extra over a steady decode: {(sum(first) - 3 * steady):.2f} s)")
    print(f"  compile time         {warm['compile_time_s']:.2f} s in {warm['compiles']} kernels "
          f"({warm['compile_failures']} refused)")
    print(f"  tokens equal to CPU  {same}")
    per_run = {k: (v / (args.repeats + 1) if isinstance(v, (int, float)) else v) for k, v in timed.items()}
    print("  counters per timed decode: " + ", ".join(
        f"{k}={per_run[k]:.0f}" for k in ("queued_ops", "recorded_ops", "merged_ops", "replayed_ops",
                                           "kernel_hits", "kernel_misses", "cut_ops", "flushes")))
    print(f"  median of {args.repeats} runs; last compile error: {adaptive.last_compile_error()[:200]!r}")
    if args.check and (ratio > GOAL or not same):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
