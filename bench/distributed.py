"""The c10d backend "neuron" against gloo on CPU tensors, in one run.

    python bench/distributed.py [--part all|allreduce|fsdp2] [--nproc 2] [--fsdp-nproc 4]
                                [--max-mib 256] [--check] [--pin] [--slow ARM=FRACTION] [--raw FILE]

Launches itself with torchrun (``python -m torch.distributed.run``, loopback) and measures:

* ``allreduce``: ``all_reduce`` (SUM, float32) of 1 KiB … ``--max-mib`` MiB (×4 steps) on
  ``--nproc`` ranks, three arms side by side: backend "neuron" on ``neuron`` tensors, gloo on CPU
  tensors, and the A/A control gloo2, gloo again on other CPU tensors (two identical arms: their
  difference is this run's noise floor, its resolution). Reported per size: median time (µs) and
  bus bandwidth (GB/s, 10⁹ B/s) = bytes × 2(n−1)/n ÷ time, the nccl-tests definition; ``paired``:
  the median over rounds of gloo's time ÷ neuron's in the same round (above 1: neuron faster),
  with its 95% interval; ``A/A``: the same for gloo ÷ gloo2; ``best``: the ratio of the two arms'
  fastest calls. A second table gives each call's CPU time (``time.process_time``: every thread of
  the rank's process, summed over ranks): gloo's, and neuron's and gloo2's excess over gloo in the
  same round (median, 95% interval). On a saturated machine wall time grows with the CPU a call
  needs, so this is the backend's added cost in a form the load does not hide.
  Goal: neuron's bus bandwidth ≥ 0.95 × gloo's from 64 KiB up. A size is ``met`` when the paired
  interval lies at or above 0.95, ``missed`` when it lies below, ``open`` when it straddles 0.95,
  and ``void`` when the A/A interval excludes 1 (gloo differed from gloo: the run cannot decide that
  size); ``--check`` exits 1 unless every size from 64 KiB is ``met``.

  The method (bench/RESULTS.md, "coll3", has the measurements behind each choice):

  - *One transport per round for all arms.* Each ``neuron`` group owns a gloo transport (its
    ``ProcessGroupGloo``). The gloo arms run on the same transport as the round's ``neuron`` arm,
    through a plain c10d ``ProcessGroup`` holding that backend (what ``new_group(backend="gloo")``
    builds, so gloo's own c10d path), so the comparison is the ``neuron`` layer (process group,
    alias, handle) and nothing else. Separate gloo groups per arm, the earlier design, made the A/A
    control 0.85-1.25 off 1 with intervals excluding it: one group's transport threads can be
    slowed 2-5× for seconds (where the scheduler put them), and that fell on one arm only.
  - *A pool of ``POOL`` transports* (the default group and ``POOL - 1`` new ``neuron`` groups), one
    drawn at random per round, so no single transport's state decides a size.
  - *Random arm order per round* (one seeded generator, the same draws on every rank, so the ranks
    issue the same collectives), instead of a fixed cycle that a periodic disturbance can alias.
  - *A block bootstrap interval* (``stats.median_block_bootstrap_ci``, blocks of ``BLOCK``
    consecutive rounds, or of a tenth of the rounds when that is fewer, so at least 10 blocks):
    rounds next to each other share the machine's state, so an interval that takes them as
    independent (the order-statistics interval used before) is too narrow and excluded 1 for gloo
    against gloo.
  - Every call is preceded by a barrier on a group no timed arm uses; each rank times its own call
    and a round's time is the smallest over ranks (the last rank out of the barrier waits for
    nobody); each rank's intra-op threads are 1; 600 rounds up to 1 MiB.
  - ``--slow ARM=FRACTION`` makes an arm slower by that fraction of each of its calls (a busy-wait
    inside the timing): ``--slow neuron=0.1 --check`` must exit 1, ``--slow gloo2=0.05`` must move
    the A/A control to ~0.95 with an interval excluding 1 — the bench's own test that it can tell
    a 5-10% difference. ``--raw FILE`` writes every round's times for analysis.
  - ``--pin`` pins rank r and all its threads to core r: on this 2-core machine that made every
    call ~10× slower (each wake-up of gloo's threads waits for a time slice on the one allowed
    core); not the default.
* ``fsdp2``: one training step (forward, backward, AdamW) of a Llama (hidden 256, intermediate
  688, 4 layers, 4 heads, vocab 2048, batch 1 × 128 tokens per rank) sharded with
  ``fully_shard`` per layer on ``--fsdp-nproc`` ranks: on ``neuron`` with backend "neuron",
  and on CPU with gloo, interleaved; median seconds per step.

In ``fsdp2`` each timed figure is the median over repeats after warm-up; ranks start each repeat
together (barrier) and the time is rank 0's.
Collective bandwidth of real NeuronLink/EFA is not modelled: this measures what the software
NeuronCore adds to gloo (aliasing, the Python process group), which should be nothing visible.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

from stats import median_block_bootstrap_ci

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
           "--max-mib", str(args.max_mib)] + (["--pin"] if args.pin and part == "allreduce" else []) \
        + [f"--slow={arm}={frac}" for arm, frac in args.slow.items()]
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


def _repeats(size: int) -> int:
    """Rounds of the all_reduce benchmark at ``size`` bytes."""
    return 600 if size <= 2**20 else (240 if size <= 16 * 2**20 else (80 if size <= 64 * 2**20 else 40))


BLOCK = 20     # rounds per block of the block bootstrap (consecutive rounds share the machine's state)
POOL = 3       # process groups per arm, one drawn at random per round
ARMS = ("neuron", "gloo", "gloo2")


def _spin(seconds: float) -> None:
    """Busy-waits ``seconds`` (the slowed arm of ``--slow``: a CPU cost, as a backend's own would be)."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def worker_allreduce(max_mib: int, slow: dict[str, float]) -> dict:
    import random

    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    dev = _init()
    n = dist.get_world_size()
    # POOL "neuron" groups (the default one and POOL - 1 more), each with its own gloo transport; the
    # gloo arms run on the same transport as the "neuron" arm of their round, through a plain c10d
    # ProcessGroup holding that group's gloo backend (what new_group(backend="gloo") builds). A group's
    # transport threads can be slower than another's for seconds (where the scheduler put them), which
    # separate groups per arm turned into A/A offsets of 10-20%; on a shared transport it falls on
    # every arm of the round alike.
    c10d = torch._C._distributed_c10d
    neuron_groups = [dist.group.WORLD] + [dist.new_group(backend="neuron") for _ in range(POOL - 1)]
    gloo_groups = []
    for g in neuron_groups:
        plain = c10d.ProcessGroup(g.rank(), g.size())
        plain._register_backend(torch.device("cpu"), c10d.ProcessGroup.BackendType.GLOO, g._gloo)
        plain._set_default_backend(c10d.ProcessGroup.BackendType.GLOO)
        gloo_groups.append(plain)
    pools = {"neuron": neuron_groups, "gloo": gloo_groups, "gloo2": gloo_groups}
    sync = dist.new_group(backend="gloo")   # barriers only: no timed arm's transport
    rng = random.Random(20261202)  # the same draws on every rank: the ranks issue the same collectives
    rows = []
    size = 1024
    while size <= max_mib * 2**20:
        numel = size // 4
        tensors = {"neuron": torch.ones(numel, device=dev), "gloo": torch.ones(numel), "gloo2": torch.ones(numel)}
        times: dict[str, list[float]] = {name: [] for name in ARMS}
        cpu: dict[str, list[float]] = {name: [] for name in ARMS}
        drawn: dict[str, list[int]] = {name: [] for name in ARMS}  # which transport of the pool, per round
        warmup = 2 * POOL
        for i in range(warmup + _repeats(size)):
            k = rng.randrange(POOL)  # the round's transport
            for name in rng.sample(ARMS, len(ARMS)):
                group, x, extra = pools[name][k], tensors[name], slow.get(name, 0.0)
                dist.barrier(group=sync)
                c0 = time.process_time()
                t0 = time.perf_counter()
                dist.all_reduce(x, group=group)
                if extra:
                    _spin((time.perf_counter() - t0) * extra)
                dt = time.perf_counter() - t0
                dc = time.process_time() - c0
                if i >= warmup:
                    times[name].append(dt)
                    cpu[name].append(dc)
                    drawn[name].append(k)
        per_rank: list[tuple[dict[str, list[float]], dict[str, list[float]]] | None] = [None] * n
        dist.all_gather_object(per_rank, (times, cpu), group=sync)
        ranks = [r for r in per_rank if r is not None]
        # A round's time: the smallest over ranks (the last rank out of the barrier waits for no one);
        # its CPU time: the sum over ranks (every thread of every rank process, gloo's included).
        t = {name: [min(ts) for ts in zip(*(r[0][name] for r in ranks), strict=True)] for name in times}
        c = {name: [sum(cs) for cs in zip(*(r[1][name] for r in ranks), strict=True)] for name in cpu}
        t_dev, t_cpu, t_cpu2 = t["neuron"], t["gloo"], t["gloo2"]
        td, tc = statistics.median(t_dev), statistics.median(t_cpu)
        bus = size * 2 * (n - 1) / n
        paired = [g / d for g, d in zip(t_cpu, t_dev, strict=True)]
        aa = [g / g2 for g, g2 in zip(t_cpu, t_cpu2, strict=True)]
        cpu_added = [(d - g) * 1e6 for d, g in zip(c["neuron"], c["gloo"], strict=True)]
        cpu_aa = [(g2 - g) * 1e6 for g2, g in zip(c["gloo2"], c["gloo"], strict=True)]
        rows.append(dict(bytes=size, rounds=len(paired), neuron_us=td * 1e6, gloo_us=tc * 1e6,
                         neuron_gbps=bus / td / 1e9, gloo_gbps=bus / tc / 1e9,
                         best_ratio=min(t_cpu) / min(t_dev),
                         paired_ratio=statistics.median(paired), paired_ci=_ci(paired),
                         aa_ratio=statistics.median(aa), aa_ci=_ci(aa),
                         gloo_cpu_us=statistics.median(c["gloo"]) * 1e6,
                         cpu_added_us=statistics.median(cpu_added), cpu_added_ci=_ci(cpu_added),
                         cpu_aa_us=statistics.median(cpu_aa), cpu_aa_ci=_ci(cpu_aa),
                         raw=dict(times=t, cpu=c, group=drawn)))
        del tensors
        size *= 4
    return dict(world=n, rows=rows, slow=slow)  # (rows' "raw": every round, for --raw)


def _ci(values: list[float]) -> tuple[float, float]:
    """95% interval of the median of one size's per-round values (blocks: see the module docstring)."""
    return median_block_bootstrap_ci(values, max(2, min(BLOCK, len(values) // 10)))


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


def worker(part: str, max_mib: int, pin: bool, slow: dict[str, float]) -> None:
    if pin:  # before torch starts any thread: gloo's threads, created later, inherit the mask
        os.sched_setaffinity(0, {int(os.environ["LOCAL_RANK"]) % (os.cpu_count() or 1)})
    import torch.distributed as dist

    result = worker_allreduce(max_mib, slow) if part == "allreduce" else worker_fsdp2(max_mib)
    if dist.get_rank() == 0:
        print("RESULT " + json.dumps(result), flush=True)
    dist.barrier()
    dist.destroy_process_group()


def _slow_arm(text: str) -> tuple[str, float]:
    """``ARM=FRACTION`` of ``--slow``, checked."""
    arm, _, frac = text.partition("=")
    try:
        value = float(frac)
    except ValueError:
        value = -1.0
    if arm not in ARMS or not 0.0 <= value <= 10.0:
        raise argparse.ArgumentTypeError(f"--slow takes ARM=FRACTION with ARM one of {', '.join(ARMS)} and "
                                          f"FRACTION a number from 0 to 10 (0.1: 10% slower), got {text!r}")
    return arm, value


# ---------------------------------------------------------------- report
def human(size: int) -> str:
    return f"{size // 2**20} MiB" if size >= 2**20 else f"{size // 1024} KiB"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--part", choices=["all", "allreduce", "fsdp2"], default="all")
    parser.add_argument("--nproc", type=int, default=2, help="ranks of the all_reduce benchmark")
    parser.add_argument("--fsdp-nproc", type=int, default=4, help="ranks of the FSDP2 benchmark")
    parser.add_argument("--max-mib", type=int, default=256, help="largest all_reduce, MiB")
    parser.add_argument("--pin", action="store_true",
                        help="all_reduce: pin rank r (and every thread it starts) to core r mod the core count")
    parser.add_argument("--check", action="store_true",
                        help="exit 1 unless the all_reduce goal is met at every size from 64 KiB "
                             "(paired interval ≥ 0.95)")
    parser.add_argument("--slow", type=_slow_arm, action="append", default=[], metavar="ARM=FRACTION",
                        help="all_reduce: make ARM (neuron, gloo or gloo2) slower by FRACTION of each call's time "
                             "(a busy-wait after the call, inside the timing; repeatable): the check that --check "
                             "fails a backend that is slower, e.g. --slow neuron=0.1 must not pass")
    parser.add_argument("--raw", metavar="FILE",
                        help="all_reduce: also write every round's times, CPU times and drawn groups, per arm "
                             "and size, to FILE (JSON)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.slow = dict(args.slow)
    if args.worker:
        worker(args.worker, args.max_mib, args.pin, args.slow)
        return 0

    certified = True
    print("load average (1, 5, 15 min) at start: " + ", ".join(f"{x:.1f}" for x in os.getloadavg()))
    if args.part in ("all", "allreduce"):
        res = launch("allreduce", args.nproc, args)
        if args.raw:
            with open(args.raw, "w") as f:
                json.dump(res, f)
        if res["slow"]:
            print("deliberately slowed (--slow): " + ", ".join(f"{arm} +{frac:.0%} of each call's time"
                                                              for arm, frac in res["slow"].items()))
        print(f"all_reduce (float32, SUM) on {res['world']} ranks, loopback; bus bandwidth GB/s; paired = gloo time "
              f"÷ neuron time in one round (above 1: neuron faster), A/A = gloo ÷ gloo2, with 95% intervals")
        print(f"{'size':>9} {'rounds':>6} {'neuron µs':>11} {'gloo µs':>11} {'neuron GB/s':>12} {'gloo GB/s':>10} "
              f"{'best':>5} {'paired (95% CI)':>18} {'A/A (95% CI)':>18}  goal ≥ {GOAL_RATIO}")
        for row in res["rows"]:
            lo, hi = row["paired_ci"]
            alo, ahi = row["aa_ci"]
            verdict = ""
            if row["bytes"] >= GOAL_FROM_BYTES:
                verdict = "met" if lo >= GOAL_RATIO else ("missed" if hi < GOAL_RATIO else "open")
                if not alo <= 1.0 <= ahi:  # gloo differed from gloo: this size's run decides nothing
                    verdict = f"void (A/A interval excludes 1; paired alone: {verdict})"
                certified = certified and verdict == "met"
            print(f"{human(row['bytes']):>9} {row['rounds']:>6} {row['neuron_us']:>11.1f} {row['gloo_us']:>11.1f} "
                  f"{row['neuron_gbps']:>12.3f} {row['gloo_gbps']:>10.3f} {row['best_ratio']:>5.2f} "
                  f"{row['paired_ratio']:>6.3f} ({lo:.3f}-{hi:.3f}) {row['aa_ratio']:>6.3f} ({alo:.3f}-{ahi:.3f})"
                  f"  {verdict}")
        print("CPU time per call, every thread of every rank (the cost a busy machine turns into wall time): "
              "gloo's, and what neuron adds over it in the same round, with gloo2 - gloo as the A/A control")
        print(f"{'size':>9} {'gloo CPU µs':>12} {'neuron − gloo µs (95% CI)':>27} {'gloo2 − gloo µs (95% CI)':>27}")
        for row in res["rows"]:
            lo, hi = row["cpu_added_ci"]
            alo, ahi = row["cpu_aa_ci"]
            print(f"{human(row['bytes']):>9} {row['gloo_cpu_us']:>12.1f} {row['cpu_added_us']:>+10.1f} "
                  f"({lo:+.1f} to {hi:+.1f}) {row['cpu_aa_us']:>+10.1f} ({alo:+.1f} to {ahi:+.1f})")
    if args.part in ("all", "fsdp2"):
        res = launch("fsdp2", args.fsdp_nproc, args)
        print(f"FSDP2 Llama step (4 layers, hidden 256, 128 tokens/rank) on {res['world']} ranks: "
              f"neuron {res['neuron_s'] * 1e3:.0f} ms, CPU+gloo {res['cpu_gloo_s'] * 1e3:.0f} ms "
              f"(ratio {res['neuron_s'] / res['cpu_gloo_s']:.2f})")
    print("load average at end: " + ", ".join(f"{x:.1f}" for x in os.getloadavg()))
    return 1 if (args.check and not certified) else 0


if __name__ == "__main__":
    sys.exit(main())
