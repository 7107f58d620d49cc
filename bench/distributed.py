"""The c10d backend "neuron" against gloo on CPU tensors, in one run.

    python bench/distributed.py [--part all|allreduce|fsdp2] [--nproc 2] [--fsdp-nproc 4]
                                [--max-mib 256] [--check]

Launches itself with torchrun (``python -m torch.distributed.run``, loopback) and measures:

* ``allreduce``: ``all_reduce`` (SUM, float32) of 1 KiB … ``--max-mib`` MiB (×4 steps) on
  ``--nproc`` ranks, with backend "neuron" on ``neuron`` tensors and with a gloo group over
  the same ranks on CPU tensors, interleaved. Reported: median time (µs) and bus bandwidth
  (GB/s, 10⁹ B/s) = bytes × 2(n−1)/n ÷ time, the nccl-tests definition, the ratio
  neuron/gloo of median bandwidths, and ``best``: the same ratio from each side's fastest
  repeat, and ``paired``: the median over repeats of the ratio of the two calls made one after
  the other (both steadier than the median ratio on a loaded machine), with its 95% confidence
  interval (distribution-free, from the order statistics). A third arm, gloo again on a second CPU
  tensor, gives ``A/A``: the same paired ratio between two identical gloo calls, i.e. the noise
  floor of this machine (a paired ratio inside the A/A spread is no measurable difference). Every
  call is timed alone and the three arms rotate call by call (which goes first rotates too), so
  load from other processes falls on all alike. Goal: ratio ≥ 0.95 from 64 KiB up; ``--check``
  judges it on the paired ratio.
* ``fsdp2``: one training step (forward, backward, AdamW) of a Llama (hidden 256, intermediate
  688, 4 layers, 4 heads, vocab 2048, batch 1 × 128 tokens per rank) sharded with
  ``fully_shard`` per layer on ``--fsdp-nproc`` ranks: on ``neuron`` with backend "neuron",
  and on CPU with gloo, interleaved; median seconds per step.

Each timed figure is the median over repeats after warm-up; ranks start each repeat together
(barrier) and the time is rank 0's. ``--check`` exits 1 when the all_reduce goal is missed.
Collective bandwidth of real NeuronLink/EFA is not modelled: this measures what the software
NeuronCore adds to gloo (aliasing, the Python process group), which should be nothing visible.
"""
from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import subprocess
import sys
import time

from stats import median_ci

GOAL_RATIO = 0.95  # neuron bus bandwidth / gloo bus bandwidth, sizes >= GOAL_FROM_BYTES
GOAL_FROM_BYTES = 64 * 1024


def launch(part: str, nproc: int, args: argparse.Namespace) -> dict:
    """Runs this file under torchrun for ``part`` and returns rank 0's JSON result."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"))
    cmd = [sys.executable, "-m", "torch.distributed.run", f"--nproc-per-node={nproc}",
           "--master-addr=127.0.0.1", f"--master-port={port}", __file__, "--worker", part,
           "--max-mib", str(args.max_mib)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    raise RuntimeError(f"{part} benchmark failed (exit {proc.returncode}):\n{proc.stderr[-4000:]}")


# ---------------------------------------------------------------- workers (under torchrun)
def _init():
    import torch  # autoloads torch_neuronx, which registers backend "neuron"
    import torch.distributed as dist

    dist.init_process_group("neuron")
    return torch.device("neuron", torch.neuron.current_device())


def _median_time(fn, repeats: int, warmup: int = 1) -> float:
    import torch.distributed as dist

    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        dist.barrier()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def worker_allreduce(max_mib: int) -> dict:
    import torch
    import torch.distributed as dist

    dev = _init()
    n = dist.get_world_size()
    gloo = dist.new_group(backend="gloo")
    rows = []
    size = 1024
    while size <= max_mib * 2**20:
        numel = size // 4
        x_dev = torch.ones(numel, device=dev)
        x_cpu = torch.ones(numel)
        x_cpu2 = torch.ones(numel)
        repeats = 100 if size <= 2**20 else (40 if size <= 16 * 2**20 else 16)
        arms = [("neuron", functools.partial(dist.all_reduce, x_dev)),
                ("gloo", functools.partial(dist.all_reduce, x_cpu, group=gloo)),
                ("gloo2", functools.partial(dist.all_reduce, x_cpu2, group=gloo))]
        times: dict[str, list[float]] = {name: [] for name, _ in arms}
        for i in range(repeats + 1):  # first round is warm-up; rotate which goes first
            for name, fn in arms[i % 3:] + arms[:i % 3]:
                dist.barrier()
                t0 = time.perf_counter()
                fn()
                dt = time.perf_counter() - t0
                if i:
                    times[name].append(dt)
        t_dev, t_cpu, t_cpu2 = times["neuron"], times["gloo"], times["gloo2"]
        td, tc = statistics.median(t_dev), statistics.median(t_cpu)
        bus = size * 2 * (n - 1) / n
        paired = [c / d for c, d in zip(t_cpu, t_dev, strict=True)]
        aa = [c / d for c, d in zip(t_cpu, t_cpu2, strict=True)]
        rows.append(dict(bytes=size, neuron_us=td * 1e6, gloo_us=tc * 1e6,
                         neuron_gbps=bus / td / 1e9, gloo_gbps=bus / tc / 1e9,
                         best_ratio=min(t_cpu) / min(t_dev),
                         paired_ratio=statistics.median(paired), paired_ci=median_ci(paired),
                         aa_ratio=statistics.median(aa), aa_ci=median_ci(aa)))
        del x_dev, x_cpu, x_cpu2
        size *= 4
    return dict(world=n, rows=rows)


def worker_fsdp2(max_mib: int) -> dict:
    import torch
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard
    from transformers import LlamaConfig, LlamaForCausalLM

    dev = _init()
    n = dist.get_world_size()
    config = LlamaConfig(vocab_size=2048, hidden_size=256, intermediate_size=688, num_hidden_layers=4,
                         num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=256)

    def build(device_type: str, backend_group):
        torch.manual_seed(0)
        model = LlamaForCausalLM(config).to(device_type if device_type == "cpu" else dev)
        mesh = init_device_mesh(device_type, (n,)) if backend_group is None else backend_group
        for layer in model.model.layers:
            fully_shard(layer, mesh=mesh)
        fully_shard(model, mesh=mesh)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
        ids = torch.randint(0, config.vocab_size, (1, 128), generator=torch.Generator().manual_seed(dist.get_rank()))
        ids = ids.to(next(model.parameters()).device)

        def step():
            loss = model(input_ids=ids, labels=ids).loss
            loss.backward()
            opt.step()
            opt.zero_grad()
            return loss

        return step

    step_neuron = build("neuron", None)
    from torch.distributed.device_mesh import DeviceMesh

    gloo = dist.new_group(backend="gloo")
    cpu_mesh = DeviceMesh.from_group(gloo, "cpu")
    step_cpu = build("cpu", cpu_mesh)
    t_dev, t_cpu = [], []
    for i in range(7):
        pair = [("neuron", step_neuron), ("cpu", step_cpu)]
        for name, fn in (pair if i % 2 == 0 else pair[::-1]):
            dist.barrier()
            t0 = time.perf_counter()
            fn()
            dt = time.perf_counter() - t0
            if i >= 2:
                (t_dev if name == "neuron" else t_cpu).append(dt)
    return dict(world=n, neuron_s=statistics.median(t_dev), cpu_gloo_s=statistics.median(t_cpu))


def worker(part: str, max_mib: int) -> None:
    import torch.distributed as dist

    result = worker_allreduce(max_mib) if part == "allreduce" else worker_fsdp2(max_mib)
    if dist.get_rank() == 0:
        print("RESULT " + json.dumps(result), flush=True)
    dist.barrier()
    dist.destroy_process_group()


# ---------------------------------------------------------------- report
def human(size: int) -> str:
    return f"{size // 2**20} MiB" if size >= 2**20 else f"{size // 1024} KiB"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--part", choices=["all", "allreduce", "fsdp2"], default="all")
    parser.add_argument("--nproc", type=int, default=2, help="ranks of the all_reduce benchmark")
    parser.add_argument("--fsdp-nproc", type=int, default=4, help="ranks of the FSDP2 benchmark")
    parser.add_argument("--max-mib", type=int, default=256, help="largest all_reduce, MiB")
    parser.add_argument("--check", action="store_true",
                        help="exit 1 if the all_reduce goal is missed (paired ratio < 0.95 from 64 KiB up)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.max_mib)
        return 0

    missed = False
    print("load average (1, 5, 15 min) at start: " + ", ".join(f"{x:.1f}" for x in os.getloadavg()))
    if args.part in ("all", "allreduce"):
        res = launch("allreduce", args.nproc, args)
        print(f"all_reduce (float32, SUM) on {res['world']} ranks, loopback; bus bandwidth GB/s")
        print(f"{'size':>9} {'neuron µs':>11} {'gloo µs':>11} {'neuron GB/s':>12} {'gloo GB/s':>10} {'ratio':>6} "
              f"{'best':>6} {'paired (95% CI)':>18} {'A/A gloo÷gloo (95% CI)':>24}")
        for row in res["rows"]:
            ratio = row["neuron_gbps"] / row["gloo_gbps"]
            flag = ""
            if row["bytes"] >= GOAL_FROM_BYTES and row["paired_ratio"] < GOAL_RATIO:
                flag, missed = "  < goal", True
            lo, hi = row["paired_ci"]
            alo, ahi = row["aa_ci"]
            print(f"{human(row['bytes']):>9} {row['neuron_us']:>11.1f} {row['gloo_us']:>11.1f} "
                  f"{row['neuron_gbps']:>12.3f} {row['gloo_gbps']:>10.3f} {ratio:>6.2f} "
                  f"{row['best_ratio']:>6.2f} {row['paired_ratio']:>6.2f} ({lo:.2f}-{hi:.2f})"
                  f" {row['aa_ratio']:>12.2f} ({alo:.2f}-{ahi:.2f}){flag}")
    if args.part in ("all", "fsdp2"):
        res = launch("fsdp2", args.fsdp_nproc, args)
        print(f"FSDP2 Llama step (4 layers, hidden 256, 128 tokens/rank) on {res['world']} ranks: "
              f"neuron {res['neuron_s'] * 1e3:.0f} ms, CPU+gloo {res['cpu_gloo_s'] * 1e3:.0f} ms "
              f"(ratio {res['neuron_s'] / res['cpu_gloo_s']:.2f})")
    print("load average at end: " + ", ".join(f"{x:.1f}" for x in os.getloadavg()))
    return 1 if (args.check and missed) else 0


if __name__ == "__main__":
    sys.exit(main())
