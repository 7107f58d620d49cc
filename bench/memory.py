"""Peak host memory of a training step on ``neuron`` against native CPU PyTorch.

    python bench/memory.py [--steps 3] [--hidden 512] [--layers 6] [--batch 4] [--seq 256]
                           [--vocab 32000] [--check]

The software NeuronCore's device memory is host memory, so a training step on ``neuron`` should
grow the process's resident memory (RSS) about as much as the same step on the CPU. Each run is
a fresh subprocess (so neither side inherits the other's freed memory): it imports torch and
transformers, touches the device, records its RSS as the baseline and resets the kernel's peak
(``/proc/self/clear_refs``), then builds a ``LlamaForCausalLM`` (``--hidden`` × ``--layers``,
intermediate 2.6875 × hidden, heads of 64, ``--vocab`` tokens) directly on its device
(``with torch.device(...)``), and runs ``--steps`` fp32 training steps (forward with labels,
backward, ``torch.optim.AdamW``, ``zero_grad``) on one batch of ``--batch`` × ``--seq`` token ids
(drawn on the CPU from seed 0 and moved, so both sides see the same inputs). Reported: peak RSS
growth over the baseline (``VmHWM − baseline``, MiB, shared memory included) after each step,
and the ratio neuron ÷ CPU over all steps and in the first step alone (the first optimizer step
allocates AdamW's states while the backward's freed activations are still held for reuse).

AdamW picks its implementation from the parameters' device: the for-loop on CPU, ``foreach`` on
any other device that has foreach kernels (CUDA, ``neuron``...). ``foreach`` keeps a few
parameter-sized temporaries alive at once, so the runs are: CPU default (for-loop), ``neuron``
default (foreach), ``neuron`` with ``foreach=False`` and CPU with ``foreach=True``; the goal
(``--check``) bounds the two like-for-like ratios and the default one, neuron ÷ CPU ≤ 1.05.
For ``neuron`` runs the device's own counters (``max_memory_allocated`` /
``max_memory_reserved``) are shown too: allocated is what live tensors hold, reserved what the
allocator holds from the host.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

GOAL_RATIO = 1.05  # peak RSS growth, neuron ÷ CPU
MIB = 2**20

#: (label, device, AdamW foreach argument: None = PyTorch's default for the device)
RUNS = [
    ("cpu (default: for-loop)", "cpu", None),
    ("neuron (default: foreach)", "neuron", None),
    ("neuron foreach=False", "neuron", False),
    ("cpu foreach=True", "cpu", True),
]
#: (neuron run, cpu run, what the ratio compares)
RATIOS = [
    (1, 0, "defaults (what a user gets)"),
    (2, 0, "both for-loop"),
    (1, 3, "both foreach"),
]


def _status_kib(field: str) -> int:
    """A ``/proc/self/status`` field in KiB (``VmRSS``, ``VmHWM``)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"/proc/self/status has no {field} (Linux only)")


def worker(device: str, foreach: bool | None, args: argparse.Namespace) -> dict:
    """One measured run in this process; returns its numbers."""
    import gc

    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    dev = torch.device(device)
    torch.empty(1, device=dev).add_(1)  # initializes the device (and its allocator)
    config = LlamaConfig(vocab_size=args.vocab, hidden_size=args.hidden,
                         intermediate_size=args.hidden * 43 // 16, num_hidden_layers=args.layers,
                         num_attention_heads=args.hidden // 64, num_key_value_heads=args.hidden // 64,
                         max_position_embeddings=max(args.seq, 256))
    ids = torch.randint(0, args.vocab, (args.batch, args.seq), generator=torch.Generator().manual_seed(0))
    gc.collect()
    baseline = _status_kib("VmRSS")
    with open("/proc/self/clear_refs", "w") as f:  # resets VmHWM to the current RSS
        f.write("5")
    torch.manual_seed(0)
    with dev:
        model = LlamaForCausalLM(config)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=foreach)
    ids = ids.to(dev)
    after_build = _status_kib("VmHWM")
    losses, peaks, ends = [], [], []
    for _ in range(args.steps):
        loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        opt.step()
        opt.zero_grad()
        losses.append(loss.item())
        peaks.append(_status_kib("VmHWM"))
        ends.append(_status_kib("VmRSS"))
    out = dict(device=device, foreach=foreach, baseline_kib=baseline, build_kib=after_build - baseline,
               peak_growth_kib=[p - baseline for p in peaks],
               end_growth_kib=[e - baseline for e in ends], losses=losses,
               params=sum(p.numel() for p in model.parameters()))
    if device == "neuron":
        out["max_allocated"] = torch.neuron.max_memory_allocated()
        out["max_reserved"] = torch.neuron.max_memory_reserved()
    return out


def run(device: str, foreach: bool | None, args: argparse.Namespace) -> dict:
    """Runs :func:`worker` in a fresh subprocess and returns its result."""
    cmd = [sys.executable, __file__, "--worker", device, "--foreach", str(foreach),
           "--steps", str(args.steps), "--hidden", str(args.hidden), "--layers", str(args.layers),
           "--batch", str(args.batch), "--seq", str(args.seq), "--vocab", str(args.vocab)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    raise RuntimeError(f"{device} run failed (exit {proc.returncode}):\n{proc.stderr[-4000:]}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=3, help="training steps per run")
    parser.add_argument("--hidden", type=int, default=512)
    parser.add_argument("--layers", type=int, default=6)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--seq", type=int, default=256)
    parser.add_argument("--vocab", type=int, default=32000)
    parser.add_argument("--runs", default="0,1,2,3", help="which runs (indices into RUNS), e.g. 0,1")
    parser.add_argument("--check", action="store_true", help=f"exit 1 if a ratio exceeds {GOAL_RATIO}")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--foreach", default="None", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        foreach = {"None": None, "True": True, "False": False}[args.foreach]
        print("RESULT " + json.dumps(worker(args.worker, foreach, args)), flush=True)
        return 0

    print("load average (1, 5, 15 min) at start: " + ", ".join(f"{x:.1f}" for x in os.getloadavg()))
    chosen = [int(i) for i in args.runs.split(",")]
    results = {i: run(RUNS[i][1], RUNS[i][2], args) for i in chosen}
    first = results[chosen[0]]
    print(f"Llama hidden {args.hidden} × {args.layers} layers, vocab {args.vocab} "
          f"({first['params'] / 1e6:.1f} M parameters), fp32, AdamW, batch {args.batch} × {args.seq}, "
          f"{args.steps} steps; RSS growth over the baseline, MiB")
    print(f"{'run':28} {'after build':>12} {'peak':>8} {'max allocated':>14} {'max reserved':>13}  "
          f"peak after each step")
    for i, res in results.items():
        label = RUNS[i][0]
        dev_cols = (f"{res['max_allocated'] / MIB:>14.0f} {res['max_reserved'] / MIB:>13.0f}"
                    if "max_allocated" in res else f"{'':>14} {'':>13}")
        steps = " ".join(f"{p / 1024:.0f}" for p in res["peak_growth_kib"])
        steps += " (RSS after them: " + " ".join(f"{e / 1024:.0f}" for e in res["end_growth_kib"]) + ")"
        print(f"{label:28} {res['build_kib'] / 1024:>12.0f} {max(res['peak_growth_kib']) / 1024:>8.0f} {dev_cols}  "
              f"{steps}")
    missed = False
    for dev_i, cpu_i, what in RATIOS:
        if dev_i not in results or cpu_i not in results:
            continue
        ratio = max(results[dev_i]["peak_growth_kib"]) / max(results[cpu_i]["peak_growth_kib"])
        first = results[dev_i]["peak_growth_kib"][0] / results[cpu_i]["peak_growth_kib"][0]
        flag = ""
        if max(ratio, first) > GOAL_RATIO:
            flag, missed = "  > goal", True
        print(f"neuron ÷ CPU, {what}: {ratio:.3f} over {args.steps} steps, {first:.3f} in the first{flag}")
    print("load average at end: " + ", ".join(f"{x:.1f}" for x in os.getloadavg()))
    return 1 if (args.check and missed) else 0


if __name__ == "__main__":
    sys.exit(main())
