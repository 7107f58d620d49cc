"""Prints what the rendezvous derived: current device, NEURON_RT_VISIBLE_CORES,
NEURON_RT_ROOT_COMM_ID (as ``ENV <device> <visible> <root comm id>``)."""
from __future__ import annotations

import os

import torch
import torch.distributed as dist

from .common import init, say

# the launcher gives the ranks no cores of their own (the rendezvous fills them), one core, or a list
# from which NEURON_RT_NUM_CORES takes each process's cores
assert ("NEURON_RT_VISIBLE_CORES" not in os.environ or os.environ["NEURON_RT_VISIBLE_CORES"] == "0"
        or "NEURON_RT_NUM_CORES" in os.environ)
dev = init()
say("ENV", dev, os.environ.get("NEURON_RT_VISIBLE_CORES"), os.environ.get("NEURON_RT_ROOT_COMM_ID"),
    torch.neuron.current_device())
dist.destroy_process_group()
