"""Collective calls NCCL accepts but gloo does not (uneven all_gather, gather and scatter, recv from any
source) give the right values on backend "neuron", and an integer AVG is refused with a clear TypeError
(workers/nccl_only_collectives.py lists the checks)."""
from __future__ import annotations

import re

from .launch import report, torchrun


def test_uneven_gathers_and_scatter_recv_from_any_source_and_integer_avg():
    proc = torchrun("nccl_only_collectives", 3)
    assert proc.returncode == 0, report(proc)
    counts = {int(r): int(n) for r, n in re.findall(r"\[rank (\d)\] CHECKS (\d+)", proc.stdout)}
    assert counts == {0: 13, 1: 13, 2: 13}, report(proc)
