"""Adaptive eager execution against native CPU eager, in one run.

    python bench/adaptive_eager.py [--repeats 9] [--check] [--cpu-time] [--train-steps 4] [--compile-after N]

The Llama of ``bench/eager.py`` (hidden 256, 4 layers, vocab 2048), 24-token greedy decode from a
1 x 32 prompt, ``neuron`` with adaptive eager execution on (``torch_neuronx.adaptive.set_enabled``)
against the same model on CPU and on ``neuron`` op by op (adaptive eager off): the median times and
ratios over ``--repeats`` interleaved runs of the three (their order rotating) after the warm-up runs
that record the traces and compile their kernels. It also prints the warm-up decodes' extra time
(recording, running op by op until a trace has ended ``--compile-after`` times, compiling; against a
steady decode), the compile time and kernel count reported by the metrics, the generated tokens'
agreement with CPU, and the counters of the timed runs.

Then the same model's forward logits (4 x 128 tokens) and ``--train-steps`` fp32 training steps
(forward, backward, AdamW) with adaptive eager on against op by op from the same weights: the largest
difference of the logits and of the losses (the goal: within 1e-6), and the first steps' extra time
(recording, compiling) over the last step, with the compile time and the merged ops the metrics
report for them.

``--cpu-time`` times the process's CPU time with one intra-op thread (both sides) instead of wall
time: on a shared machine wall time measures the scheduler. ``--check`` exits with status 1 when the
decode ratio is above the goal (0.90), the tokens differ, or logits or losses differ by more than 1e-6.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time

import torch
import eager
from eager import BATCH, LLAMA, NEW_TOKENS, PROMPT_LEN, SEQ, build_pair, sync, timed

import torch_neuronx
from torch_neuronx import adaptive

GOAL = 0.90
TOL = 1e-6


def train_and_logits(model: torch.nn.Module, ids: torch.Tensor, steps: int) -> tuple[torch.Tensor, list, list]:
    """Forward logits (eval, no grad) and ``steps`` training steps from ``model``'s current weights.

    Returns ``(logits on CPU, losses, seconds per step on eager's clock)``; the weights change.
    """
    model.eval()
    with torch.no_grad():
        logits = model(input_ids=ids).logits.cpu()
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    losses, times = [], []
    for _ in range(steps):
        sync(ids.device)
        t0 = eager.CLOCK()
        loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
        times.append(eager.CLOCK() - t0)
    return logits, losses, times


def compare3(cpu_fn, dev_fn, device: torch.device, repeats: int) -> tuple[float, float, float, dict]:
    """Median seconds of ``cpu_fn``, ``dev_fn`` op by op and ``dev_fn`` with adaptive eager on, over
    ``repeats`` rounds that run each once (the order rotating by round), after one warm-up round.

    Returns the three medians and the adaptive counters summed over the timed adaptive runs.
    """
    cpu = torch.device("cpu")

    def cpu_run() -> float:
        return timed(cpu_fn, cpu)

    def op_by_op() -> float:
        adaptive.set_enabled(False)
        return timed(dev_fn, device)

    def merged() -> float:
        adaptive.set_enabled(True)
        return timed(dev_fn, device)

    runs = [cpu_run, op_by_op, merged]
    for run in runs:
        run()
    adaptive.reset_adaptive_eager_metrics()
    times: list[list[float]] = [[], [], []]
    for i in range(repeats):
        for k in range(3):
            j = (i + k) % 3
            times[j].append(runs[j]())
    counters = dict(torch_neuronx.get_adaptive_eager_metrics())
    adaptive.set_enabled(True)
    return statistics.median(times[0]), statistics.median(times[1]), statistics.median(times[2]), counters


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--cpu-time", action="store_true",
                        help="time the process's CPU time with one intra-op thread (robust to machine load)")
    parser.add_argument("--train-steps", type=int, default=4)
    parser.add_argument("--compile-after", type=int, default=None,
                        help="ends of a trace before its kernel is compiled "
                             "(default: TORCH_NEURONX_ADAPTIVE_COMPILE_AFTER or 8)")
    args = parser.parse_args(argv)
    if args.compile_after is not None:
        adaptive.set_compile_after(args.compile_after)
    if args.cpu_time:
        eager.CLOCK = time.process_time
        torch.set_num_threads(1)
    clock = eager.CLOCK

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
        t0 = clock()
        reference = run(dev_model, dprompt)().cpu()
        op_by_op = clock() - t0
        expected = run(cpu_model, prompt)()

        adaptive.set_enabled(True)
        adaptive.reset_adaptive_eager_metrics()
        first = []
        for _ in range(3):  # record, run op by op until a trace ends compile_after() times, compile, hit
            t0 = clock()
            tokens = run(dev_model, dprompt)()
            sync(device)
            first.append(clock() - t0)
        warm = torch_neuronx.get_adaptive_eager_metrics()
        same = bool(torch.equal(tokens.cpu(), expected)) and bool(torch.equal(reference, expected))
        t_cpu, t_obo, t_dev, counters = compare3(run(cpu_model, prompt), run(dev_model, dprompt), device,
                                                 args.repeats)

    # Forward logits and training losses, adaptive against op by op from the same weights.
    ids = torch.randint(3, LLAMA["vocab_size"], (BATCH, SEQ), generator=gen).to(device)
    state = {k: v.clone() for k, v in dev_model.state_dict().items()}
    adaptive.set_enabled(False)
    ref_logits, ref_losses, ref_times = train_and_logits(dev_model, ids, args.train_steps)
    dev_model.load_state_dict(state)
    adaptive.set_enabled(True)
    adaptive.reset_adaptive_eager_metrics()
    logits, losses, times = train_and_logits(dev_model, ids, args.train_steps)
    trained = torch_neuronx.get_adaptive_eager_metrics()
    adaptive.set_enabled(False)
    logits_diff = (logits - ref_logits).abs().max().item()
    loss_diff = max(abs(a - b) for a, b in zip(losses, ref_losses, strict=True))

    ratio = t_dev / t_cpu
    steady = t_dev
    print(f"decode {NEW_TOKENS} tokens from a 1 x {PROMPT_LEN} prompt, Llama {LLAMA}")
    print(f"  cpu eager            {t_cpu * 1e3:9.1f} ms")
    print(f"  neuron adaptive      {t_dev * 1e3:9.1f} ms   ratio neuron/cpu = {ratio:.3f} (goal <= {GOAL})")
    print(f"  neuron op by op      {t_obo * 1e3:9.1f} ms   ratio neuron/cpu = {t_obo / t_cpu:.3f} "
          f"(first run {op_by_op * 1e3:.1f} ms)")
    print(f"  adaptive / op by op  {t_dev / t_obo:.3f}")
    print(f"  warm-up decodes      {', '.join(f'{t * 1e3:.0f}' for t in first)} ms "
          f"(extra over a steady decode: {(sum(first) - 3 * steady):.2f} s)")
    print(f"  compile time         {warm['compile_time_s']:.2f} s in {warm['compiles']} kernels "
          f"({warm['compile_failures']} refused) during the warm-up decodes; a trace compiles at its "
          f"end number {adaptive.compile_after()}")
    print(f"  tokens equal to CPU  {same}")
    per_run = {k: (v / args.repeats if isinstance(v, (int, float)) else v) for k, v in counters.items()}
    print("  counters per timed decode: " + ", ".join(
        f"{k}={per_run[k]:.0f}" for k in ("queued_ops", "recorded_ops", "merged_ops", "replayed_ops",
                                           "kernel_hits", "kernel_misses", "cut_ops", "flushes")))
    print(f"  median of {args.repeats} runs; last compile error: {adaptive.last_compile_error()[:200]!r}")
    print(f"forward {BATCH} x {SEQ} and {args.train_steps} training steps (AdamW), adaptive vs op by op")
    print(f"  logits max abs diff  {logits_diff:.2e} (goal <= {TOL:g})")
    print(f"  losses max abs diff  {loss_diff:.2e} (goal <= {TOL:g}); losses {', '.join(f'{x:.6f}' for x in losses)}")
    print(f"  step times adaptive  {', '.join(f'{t * 1e3:.0f}' for t in times)} ms; op by op "
          f"{', '.join(f'{t * 1e3:.0f}' for t in ref_times)} ms")
    print(f"  first steps' extra   {sum(times) - len(times) * times[-1]:.2f} s over the last step, "
          f"compile time {trained['compile_time_s']:.2f} s in {trained['compiles']} kernels "
          f"({trained['compile_failures']} refused, {trained['kernel_failures']} failed), "
          f"{trained['merged_ops']} ops merged in {trained['kernel_hits']} kernel runs")
    if args.check and (ratio > GOAL or not same or not logits_diff <= TOL or not loss_diff <= TOL):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
