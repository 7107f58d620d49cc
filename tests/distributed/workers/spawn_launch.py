"""``mp.spawn`` launches without torchrun (the CUDA idiom and Ray's ``tcp://`` rendezvous).

``python -m tests.distributed.workers.spawn_launch <case> <port>``; cases:

* ``set_device``: each rank calls ``torch.neuron.set_device(rank)`` (no ``LOCAL_RANK``, no
  ``MASTER_ADDR``), joins through ``init_method="tcp://127.0.0.1:<port>"`` and all-reduces
  ``rank + 1``; prints ``RESULT <rank> <device> <sum> <NEURON_RT_ROOT_COMM_ID>``.
* ``same_device``: both ranks call ``set_device(0)``; prints ``ERROR <rank> <type>: <message>``.
"""
from __future__ import annotations

import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def _worker(rank: int, case: str, port: int) -> None:
    for k in ("LOCAL_RANK", "RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
              "NEURON_RT_ROOT_COMM_ID", "NEURON_RT_VISIBLE_CORES"):
        os.environ.pop(k, None)
    torch.neuron.set_device(rank if case == "set_device" else 0)
    try:
        dist.init_process_group("neuron", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
    except RuntimeError as e:  # the clash case (RendezvousError): every rank reports its error
        sys.stdout.write(f"ERROR {rank} {type(e).__name__}: {e}\n")
        sys.stdout.flush()
        return
    t = torch.full((1,), float(rank + 1), device="neuron")
    dist.all_reduce(t)
    sys.stdout.write(f"RESULT {rank} {t.device} {t.item()} {os.environ.get('NEURON_RT_ROOT_COMM_ID')}\n")
    sys.stdout.flush()
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(_worker, args=(sys.argv[1], int(sys.argv[2])), nprocs=2)
