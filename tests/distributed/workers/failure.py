"""Failure behaviour of backend "neuron" (run with 3 ranks under torchrun).

Usage (under torchrun): -m tests.distributed.workers.failure VICTIM [--no-timeout-phase]

1. Timeout honoured (unless --no-timeout-phase): on a new_group with a 3 s timeout, rank 0 all-reduces
   alone (the others never join). Rank 0 prints ``TIMEOUT <seconds> <message>``.
2. Dead rank: DDP trains a small model on the default group (timeout
   ``PG_TIMEOUT_S``); in step 2, rank VICTIM SIGKILLs itself before backward. The
   survivors' backward all-reduce must raise; each prints ``RAISED <seconds>
   <message>`` (seconds from entering backward to the exception) and exits 0.

   torchrun's agent SIGTERMs the survivors as soon as its monitor sees the victim
   dead, which can be before their diagnosis (two heartbeat reads ``2 x
   health.INTERVAL_S`` apart) is printed. So in this phase the ranks ignore SIGTERM
   (the agent SIGKILLs a rank still alive 30 s later: a hang still fails the test),
   and a survivor exits only once every survivor has reported (a count in the
   launcher's store): a survivor that exits early stops its heartbeat, and another
   survivor still diagnosing would name it as stopped too.
"""
from __future__ import annotations

import os
import signal
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist

from .common import init, say

PG_TIMEOUT_S = 10.0
DEV = init(timeout_s=PG_TIMEOUT_S)
RANK = dist.get_rank()
VICTIM = int(sys.argv[1])


def one_line(err: BaseException) -> str:
    return " ".join(str(err).split())


def timeout_honoured() -> None:
    short = dist.new_group(timeout=timedelta(seconds=3))
    if RANK == 0:
        start = time.monotonic()
        try:
            dist.all_reduce(torch.ones(8, device=DEV), group=short)
        except Exception as err:  # noqa: BLE001
            say("TIMEOUT", f"{time.monotonic() - start:.2f}", type(err).__name__, one_line(err))
        else:
            say("TIMEOUT none")
    dist.barrier(device_ids=[DEV.index])


def report_and_exit(*parts: str) -> None:
    """Prints the result line, waits (at most ``PG_TIMEOUT_S``) until every survivor has printed
    its own, and exits 0."""
    say(*parts)
    store = dist.distributed_c10d._get_default_store()
    reported = store.add("failure_test/reported", 1)
    deadline = time.monotonic() + PG_TIMEOUT_S
    while reported < dist.get_world_size() - 1 and time.monotonic() < deadline:
        time.sleep(0.05)
        reported = store.add("failure_test/reported", 0)
    os._exit(0)


def dead_rank() -> None:
    from torch.nn.parallel import DistributedDataParallel as DDP

    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    torch.manual_seed(0)
    model = DDP(torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1)).to(DEV))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(8, 16, device=DEV)
    for step in range(4):
        loss = model(x).square().mean()
        if step == 2 and RANK == VICTIM:
            os.kill(os.getpid(), signal.SIGKILL)
        if step == 2:
            time.sleep(0.5)  # the victim is dead before the survivors all-reduce
        start = time.monotonic()
        try:
            loss.backward()
        except Exception as err:  # noqa: BLE001
            report_and_exit("RAISED", f"{time.monotonic() - start:.2f}", type(err).__name__, one_line(err))
        opt.step()
        opt.zero_grad()
    report_and_exit("RAISED none")


if "--no-timeout-phase" not in sys.argv:
    timeout_honoured()
dead_rank()
