"""Eager-mode overhead of a device against the host CPU, in one run.

    python bench/eager.py [--device neuron] [--repeats 15] [--check] [--cpu-time]

Measures, on the device and on CPU with identical work (same seed, same state dict, same inputs):
  * a 16-element ``torch.add``: time per op (µs) and the cost the device adds to it;
  * a Llama (hidden 256, intermediate 688, 4 layers, 4 heads, vocab 2048) forward on 4 x 128 tokens;
  * its fp32 training step: forward, backward, AdamW step (each side with its own optimizer, both
    with PyTorch's default implementation for their device: for-loop on CPU, ``foreach`` on a
    non-CPU device such as ``neuron``, exactly what a user gets);
  * a 24-token greedy decode (``generate(max_new_tokens=24, do_sample=False)``) from a 1 x 32 prompt.
Each figure is the median of ``--repeats`` timed runs after warm-up, CPU and device runs interleaved
(alternating which goes first) so that drift of the machine affects both alike. The device is
synchronized around every timed region. ``torch.set_num_threads`` is left at its default.

Two ratios are printed for each model benchmark: ``ratio``, the device's median time over the CPU's,
and ``paired``, the median over repeats of device time ÷ CPU time of the two runs made one after the
other. The paired ratio cancels drift that lasts longer than one pair (the machine's own speed moves by
several percent between runs of this script, on both sides alike), so its noise floor is narrower;
the goals are judged on it. Its 95% confidence interval is printed beside it: a goal is certified when
the interval's upper end meets it. Run with ``--device cpu`` to see both noise floors.

``--cpu-time`` measures the process's CPU time (``time.process_time``) with one intra-op thread
instead of wall-clock time with the default threads: on a machine shared with other work, wall time
mostly measures the scheduler (two intra-op threads waiting for each other), while CPU time of one
thread still measures the work each side does.

With ``--device cpu`` both sides are the CPU: the ratios then show the noise floor (about 1.0).
``--check`` exits with status 1 when a goal is missed; a benchmark that raised is shown as an
error row (the others still run) and makes the exit status 2.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable

import torch
from stats import median_ci

# name -> (goal, what the goal bounds)
GOALS = {
    "add16": (0.5, "added µs/op"),
    "forward": (1.03, "ratio"),
    "train_step": (1.05, "ratio"),
    "decode": (1.08, "ratio"),
}

LLAMA = dict(vocab_size=2048, hidden_size=256, intermediate_size=688, num_hidden_layers=4,
             num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=256)
BATCH, SEQ = 4, 128
PROMPT_LEN, NEW_TOKENS = 32, 24
ADD_OPS = 20_000


def sync(device: torch.device) -> None:
    """Wait until all work queued on ``device`` is done (no-op on CPU)."""
    mod = getattr(torch, device.type, None)
    if device.type != "cpu" and hasattr(mod, "synchronize"):
        mod.synchronize()


# The clock of timed(): wall time, or the process's CPU time with --cpu-time.
CLOCK: Callable[[], float] = time.perf_counter


def timed(fn: Callable[[], object], device: torch.device) -> float:
    """Seconds of ``fn()`` on ``CLOCK``, with ``device`` synchronized before and after."""
    sync(device)
    t0 = CLOCK()
    fn()
    sync(device)
    return CLOCK() - t0


def compare(cpu_fn: Callable[[], object], dev_fn: Callable[[], object], device: torch.device,
            repeats: int, warmup: int) -> tuple[float, float, float, tuple[float, float]]:
    """Median seconds of ``cpu_fn`` and ``dev_fn`` over ``repeats`` interleaved runs after ``warmup``,
    the median over repeats of the paired ratio (device seconds ÷ CPU seconds of one repeat), and the
    paired ratio's 95% confidence interval (``stats.median_ci``)."""
    cpu = torch.device("cpu")
    for _ in range(warmup):
        cpu_fn()
        dev_fn()
    sync(device)
    t_cpu, t_dev = [], []
    for i in range(repeats):
        if i % 2 == 0:
            t_cpu.append(timed(cpu_fn, cpu))
            t_dev.append(timed(dev_fn, device))
        else:
            t_dev.append(timed(dev_fn, device))
            t_cpu.append(timed(cpu_fn, cpu))
    paired = [d / c for c, d in zip(t_cpu, t_dev, strict=True)]
    return statistics.median(t_cpu), statistics.median(t_dev), statistics.median(paired), median_ci(paired)


def bench_add(device: torch.device, repeats: int) -> tuple[float, float, float, tuple[float, float]]:
    """(CPU, device) seconds per 16-element ``torch.add`` (median of loops of ``ADD_OPS`` ops)."""
    a, b = torch.randn(16), torch.randn(16)
    da, db = a.to(device), b.to(device)

    def loop(x, y):
        def run():
            for _ in range(ADD_OPS):
                torch.add(x, y)
        return run

    t_cpu, t_dev, paired, paired_ci = compare(loop(a, b), loop(da, db), device, repeats, warmup=1)
    assert torch.equal(torch.add(da, db).cpu(), torch.add(a, b))
    return t_cpu / ADD_OPS, t_dev / ADD_OPS, paired, paired_ci


def build_pair(device: torch.device):
    """Two identical ``LlamaForCausalLM``: one on CPU, one on ``device`` (same seed and state dict)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(**LLAMA, bos_token_id=1, eos_token_id=2, pad_token_id=0)
    torch.manual_seed(0)
    cpu_model = LlamaForCausalLM(config)
    dev_model = LlamaForCausalLM(config)
    dev_model.load_state_dict(cpu_model.state_dict())
    return cpu_model, dev_model.to(device)


def bench_llama(device: torch.device, repeats: int) -> dict:
    """Seconds of forward, training step and 24-token greedy decode, CPU vs ``device``.

    Returns ``{"logits_max_abs_diff": float, "forward" | "decode" | "train_step": {"cpu", "device"}}``;
    a benchmark that raised is ``{"error": message}`` instead, and the others still run.
    """
    cpu_model, dev_model = build_pair(device)
    gen = torch.Generator().manual_seed(0)
    x = torch.randint(3, LLAMA["vocab_size"], (BATCH, SEQ), generator=gen)
    prompt = torch.randint(3, LLAMA["vocab_size"], (1, PROMPT_LEN), generator=gen)
    dx, dprompt = x.to(device), prompt.to(device)

    def forward():
        cpu_model.eval()
        dev_model.eval()
        with torch.no_grad():
            diff = (cpu_model(input_ids=x).logits - dev_model(input_ids=dx).logits.cpu()).abs().max().item()
            out["logits_max_abs_diff"] = diff
            return compare(lambda: cpu_model(input_ids=x), lambda: dev_model(input_ids=dx), device,
                           repeats, warmup=2)

    def decode():
        def run(model, ids):
            def go():
                res = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids),
                                     max_new_tokens=NEW_TOKENS, min_new_tokens=NEW_TOKENS,
                                     do_sample=False, pad_token_id=0)
                assert res.shape[1] == PROMPT_LEN + NEW_TOKENS
            return go

        cpu_model.eval()
        dev_model.eval()
        with torch.no_grad():
            return compare(run(cpu_model, prompt), run(dev_model, dprompt), device, repeats, warmup=1)

    def train_step():
        def run(model, ids):
            opt = torch.optim.AdamW(model.parameters(), lr=1e-4)

            def go():
                loss = model(input_ids=ids, labels=ids).loss
                loss.backward()
                opt.step()
                opt.zero_grad(set_to_none=True)
            return go

        cpu_model.train()
        dev_model.train()
        return compare(run(cpu_model, x), run(dev_model, dx), device, repeats, warmup=2)

    # train_step last: it changes the weights (identically on both sides).
    out: dict = {"logits_max_abs_diff": float("nan")}
    for name, fn in (("forward", forward), ("decode", decode), ("train_step", train_step)):
        out[name] = _guarded(fn)
    return out


def _guarded(fn: Callable[[], tuple[float, float, float, tuple[float, float]]]) -> dict:
    """``{"cpu": s, "device": s, "paired": ratio, "paired_ci": (lo, hi)}`` from ``fn()``, or
    ``{"error": message}`` if it raised."""
    try:
        t_cpu, t_dev, paired, paired_ci = fn()
    except Exception as e:  # noqa: BLE001  (a benchmark must report a broken op, not stop the others)
        first_line = (str(e).strip().splitlines() or [""])[0]
        return {"error": f"{type(e).__name__}: {first_line}"[:200]}
    return {"cpu": t_cpu, "device": t_dev, "paired": paired, "paired_ci": paired_ci}


def run_bench(device: str = "neuron", repeats: int = 15) -> dict:
    """Run every benchmark; returns seconds per item for ``cpu`` and ``device``, ratios and goals.

    Result: ``{"device", "threads", "logits_max_abs_diff", "rows": {name: {"cpu", "device", "ratio",
    "paired", "added", "goal", "goal_on", "met"}}}``; times in seconds (the add: seconds per op);
    ``ratio`` is median ÷ median, ``paired`` the median paired ratio, on which ratio goals are judged. A row whose
    benchmark raised holds ``error`` (the message) instead of times, and ``met`` False.
    """
    dev = torch.device(device)
    if dev.type == "neuron":
        import torch_neuronx  # noqa: F401  (registers the device if the entry point did not)

    rows = {"add16": _guarded(lambda: bench_add(dev, max(repeats, 15)))}
    llama = bench_llama(dev, repeats)
    for name in ("forward", "train_step", "decode"):
        rows[name] = llama[name]
    for name, row in rows.items():
        goal, goal_on = GOALS[name]
        row.update(goal=goal, goal_on=goal_on, met=False)
        if "error" in row:
            continue
        row["ratio"] = row["device"] / row["cpu"]
        row["added"] = row["device"] - row["cpu"]
        value = row["added"] * 1e6 if goal_on == "added µs/op" else row["paired"]
        row["met"] = value <= goal
    return {"device": str(dev), "threads": torch.get_num_threads(),
            "logits_max_abs_diff": llama["logits_max_abs_diff"], "rows": rows}


def print_table(result: dict) -> None:
    """Print ``run_bench``'s result as a table."""
    dev = result["device"]
    labels = {
        "add16": "add, 16 elements (per op)",
        "forward": f"Llama forward {BATCH}x{SEQ}",
        "train_step": f"Llama train step {BATCH}x{SEQ} (fwd+bwd+AdamW)",
        "decode": f"greedy decode {NEW_TOKENS} tokens (1x{PROMPT_LEN} prompt)",
    }
    print(f"\neager benchmark: {dev} vs cpu, {result['threads']} threads, torch {torch.__version__}"
          f"{', process CPU time' if CLOCK is time.process_time else ''}")
    print(f"forward logits {dev} vs cpu: max abs diff {result['logits_max_abs_diff']:.2e}\n")
    head = (f"{'benchmark':<44}{'cpu':>11}{dev:>11}{'ratio':>8}{'paired (95% CI)':>20}{'added':>11}   "
            f"{'goal':<16}{'met':<4}")
    print(head)
    print("-" * len(head))
    for name, r in result["rows"].items():
        if "error" in r:
            print(f"{labels[name]:<44}  error: {r['error']}")
            continue
        if name == "add16":
            cpu_s, dev_s = f"{r['cpu'] * 1e6:.2f} µs", f"{r['device'] * 1e6:.2f} µs"
            added = f"{r['added'] * 1e6:+.2f} µs"
            goal = f"added ≤ {r['goal']:.2f} µs"
        else:
            cpu_s, dev_s = f"{r['cpu'] * 1e3:.1f} ms", f"{r['device'] * 1e3:.1f} ms"
            added = f"{r['added'] * 1e3:+.1f} ms"
            goal = f"paired ≤ {r['goal']:.2f}"
        met = "yes" if r["met"] else "NO"
        ci = f"{r['paired']:.2f} ({r['paired_ci'][0]:.2f}-{r['paired_ci'][1]:.2f})"
        print(f"{labels[name]:<44}{cpu_s:>11}{dev_s:>11}{r['ratio']:>8.2f}{ci:>20}{added:>11}   "
              f"{goal:<16}{met:<4}")
    met = sum(r["met"] for r in result["rows"].values())
    print(f"\n{met}/{len(result['rows'])} goals met")


def main(argv: list[str] | None = None) -> int:
    """Command line entry: run, print the table, optionally write JSON; returns the exit status."""
    default = "neuron" if hasattr(torch, "neuron") else "cpu"
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default=default, help=f"device to compare with cpu (default: {default})")
    p.add_argument("--repeats", type=int, default=15, help="timed runs per benchmark; the median is kept")
    p.add_argument("--json", metavar="PATH", help="also write the result as JSON to PATH")
    p.add_argument("--check", action="store_true", help="exit with status 1 if a goal is missed")
    p.add_argument("--cpu-time", action="store_true",
                   help="time the process's CPU time with one intra-op thread (robust to machine load)")
    args = p.parse_args(argv)
    global CLOCK
    if args.cpu_time:
        CLOCK = time.process_time
        torch.set_num_threads(1)

    t0 = time.perf_counter()
    load_before = os.getloadavg()[0]
    result = run_bench(args.device, args.repeats)
    result["load_average"] = max(load_before, os.getloadavg()[0])
    result["clock"] = "cpu time, 1 thread" if args.cpu_time else "wall time"
    print_table(result)
    print(f"({time.perf_counter() - t0:.1f} s)")
    cores = os.cpu_count() or 1
    if result["load_average"] > 0.5 * cores and not args.cpu_time:
        print(f"warning: load average {result['load_average']:.1f} on {cores} cores: other processes "
              "are competing for the CPU, so these timings and ratios are noisy; rerun on a quiet machine")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)
    if any("error" in r for r in result["rows"].values()):
        return 2
    return 1 if args.check and not all(r["met"] for r in result["rows"].values()) else 0


if __name__ == "__main__":
    sys.exit(main())
