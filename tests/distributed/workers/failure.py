"""Failure behaviour of backend "neuron" (run with 3 ranks, torchrun
--monitor-interval long enough that the launcher does not kill the survivors
first).

Usage (under torchrun): -m tests.distributed.workers.failure VICTIM [--no-timeout-phase]

1. Timeout honoured (unless --no-timeout-phase): on a new_group with a 3 s timeout, rank 0 all-reduces
   alone (the others never join). Rank 0 prints ``TIMEOUT <seconds> <message>``.
2. Dead rank: DDP trains a small model on the default group (timeout
   ``PG_TIMEOUT_S``); in step 2, rank VICTIM SIGKILLs itself before backward. The
   survivors' backward all-reduce must raise; each prints ``RAISED <seconds>
   <message>`` (seconds from entering backward to the exception) and exits 0.
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


def dead_rank() -> None:
    from torch.nn.parallel import DistributedDataParallel as DDP

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
            say("RAISED", f"{time.monotonic() - start:.2f}", type(err).__name__, one_line(err))
            os._exit(0)
        opt.step()
        opt.zero_grad()
    say("RAISED none")


if "--no-timeout-phase" not in sys.argv:
    timeout_honoured()
dead_rank()
