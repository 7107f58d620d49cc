"""Shared setup of the torchrun workers: the process group and rank-prefixed output."""
from __future__ import annotations

import sys
from datetime import timedelta

import torch
import torch.distributed as dist


def init(timeout_s: float = 60.0, backend: str = "neuron") -> torch.device:
    """Joins the default group with ``backend`` ("neuron", registered by ``import torch``'s autoload,
    or a device map such as "cpu:gloo,neuron:neuron") and returns this rank's device
    (neuron:<LOCAL_RANK>)."""
    dist.init_process_group(backend, timeout=timedelta(seconds=timeout_s))
    return torch.device("neuron", torch.neuron.current_device())


def say(*parts) -> None:
    """One output line prefixed with the global rank, written with a single write()
    so that the lines of concurrent ranks do not interleave."""
    sys.stdout.write(" ".join([f"[rank {dist.get_rank()}]", *map(str, parts)]) + "\n")
    sys.stdout.flush()
